#include "LockSites.h"

#include "InitWrapper.h"

#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Lex/Lexer.h"

using namespace clang;

namespace locktune {

namespace {

bool isMutexType(QualType T)
{
    while (const auto *TT = T->getAs<TypedefType>()) {
        if (TT->getDecl()->getName() == "pthread_mutex_t")
            return true;
        T = TT->getDecl()->getUnderlyingType();
    }
    return false;
}

class SiteFinder : public RecursiveASTVisitor<SiteFinder> {
public:
    SiteFinder(const SourceText &Src, LockCalls &Calls, const PathOf &Path,
               std::vector<SiteEntry> &Out)
        : Src(Src), Calls(Calls), Path(Path), Out(Out)
    {
    }

    bool TraverseFunctionDecl(FunctionDecl *F)
    {
        const FunctionDecl *Saved = Fn;
        Fn = F;
        bool R = RecursiveASTVisitor::TraverseFunctionDecl(F);
        Fn = Saved;
        return R;
    }

    bool VisitVarDecl(VarDecl *V)
    {
        if (!V->hasGlobalStorage() || V->hasExternalStorage() || isa<ParmVarDecl>(V))
            return true;
        if (V->isThisDeclarationADefinition() == VarDecl::DeclarationOnly)
            return true;
        if (!Src.sm().isWrittenInMainFile(Src.sm().getExpansionLoc(V->getLocation())))
            return true;
        QualType T = V->getType();
        bool Array = false;
        while (const ArrayType *A = T->getAsArrayTypeUnsafe()) {
            T = A->getElementType();
            Array = true;
        }
        if (!isMutexType(T))
            return true;
        // A tentative definition seen again as the real one: report the one with the initializer.
        if (V->getDefinition() && V->getDefinition() != V && !V->hasInit())
            return true;
        SiteEntry S;
        S.File = Path(V->getLocation());
        S.Line = Src.sm().getExpansionLineNumber(V->getLocation());
        S.Kind = Array ? "array" : "static";
        S.Name = V->getNameAsString();
        S.LockKey = variableKey(V, Fn, Path);
        if (Fn && V->isStaticLocal())
            S.Function = Fn->getNameAsString();
        if (const Expr *Init = V->getInit())
            if (Init->getBeginLoc().isValid()) {
                CharSourceRange R =
                    Lexer::makeFileCharRange(CharSourceRange::getTokenRange(Init->getSourceRange()),
                                             Src.sm(), Src.langOpts());
                if (R.isValid())
                    S.Initializer = Lexer::getSourceText(R, Src.sm(), Src.langOpts()).str();
            }
        Out.push_back(S);
        return true;
    }

    bool VisitCallExpr(CallExpr *C)
    {
        // A call of an init wrapper is a site of its own when the rewriter gives it one
        // (locktune/rewrite/initwrappers.py); its lock is the argument the wrapper initialises.
        const Expr *M = LockCalls::mutexInitArg(C);
        if (!M)
            if (std::optional<InitWrapperShape> W = initWrapperCalled(C))
                M = C->getArg(W->Param);
        if (!M)
            return true;
        SourceLocation L = Src.sm().getExpansionLoc(C->getBeginLoc());
        if (!Src.sm().isWrittenInMainFile(L))
            return true;
        SiteEntry S;
        S.File = Path(L);
        S.Line = Src.sm().getExpansionLineNumber(L);
        S.Kind = "init";
        S.Name = lockName(Calls.written(M));
        S.LockKey = lockKey(M, Fn, Path);
        S.Function = Fn ? Fn->getNameAsString() : "";
        Out.push_back(S);
        return true;
    }

private:
    const SourceText &Src;
    LockCalls &Calls;
    const PathOf &Path;
    std::vector<SiteEntry> &Out;
    const FunctionDecl *Fn = nullptr;
};

} // namespace

void collectLockSites(ASTContext &Ctx, const SourceText &Src, LockCalls &Calls, const PathOf &Path,
                      std::vector<SiteEntry> &Out)
{
    SiteFinder F(Src, Calls, Path, Out);
    F.TraverseDecl(Ctx.getTranslationUnitDecl());
}

} // namespace locktune
