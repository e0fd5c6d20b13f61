#include "LockIdentity.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/PrettyPrinter.h"
#include "llvm/Support/raw_ostream.h"

using namespace clang;

namespace locktune {

namespace {

std::string printed(const Expr *E)
{
    std::string S;
    llvm::raw_string_ostream OS(S);
    LangOptions LO;
    LO.C99 = true;
    PrintingPolicy P(LO);
    E->printPretty(OS, nullptr, P);
    return OS.str();
}

void canon(const Expr *E, const ParamSubst *Subst, std::string &Out)
{
    E = E->IgnoreParenImpCasts();
    if (const auto *D = dyn_cast<DeclRefExpr>(E)) {
        if (Subst)
            if (const auto *P = dyn_cast<ParmVarDecl>(D->getDecl())) {
                auto It = Subst->find(P);
                if (It != Subst->end()) {
                    Out += It->second;
                    return;
                }
            }
        Out += D->getDecl()->getNameAsString();
        return;
    }
    if (const auto *M = dyn_cast<MemberExpr>(E)) {
        canon(M->getBase(), Subst, Out);
        Out += M->isArrow() ? "->" : ".";
        Out += M->getMemberDecl()->getNameAsString();
        return;
    }
    if (const auto *A = dyn_cast<ArraySubscriptExpr>(E)) {
        canon(A->getBase(), Subst, Out);
        Out += "[";
        canon(A->getIdx(), Subst, Out);
        Out += "]";
        return;
    }
    if (const auto *U = dyn_cast<UnaryOperator>(E)) {
        Out += "(";
        Out += UnaryOperator::getOpcodeStr(U->getOpcode()).str();
        canon(U->getSubExpr(), Subst, Out);
        Out += ")";
        return;
    }
    if (const auto *B = dyn_cast<BinaryOperator>(E)) {
        Out += "(";
        canon(B->getLHS(), Subst, Out);
        Out += " " + B->getOpcodeStr().str() + " ";
        canon(B->getRHS(), Subst, Out);
        Out += ")";
        return;
    }
    if (const auto *C = dyn_cast<ConditionalOperator>(E)) {
        Out += "(";
        canon(C->getCond(), Subst, Out);
        Out += " ? ";
        canon(C->getTrueExpr(), Subst, Out);
        Out += " : ";
        canon(C->getFalseExpr(), Subst, Out);
        Out += ")";
        return;
    }
    if (const auto *I = dyn_cast<IntegerLiteral>(E)) {
        Out += std::to_string(I->getValue().getLimitedValue());
        return;
    }
    if (const auto *C = dyn_cast<CStyleCastExpr>(E)) {
        Out += "((" + C->getTypeAsWritten().getAsString() + ")";
        canon(C->getSubExpr(), Subst, Out);
        Out += ")";
        return;
    }
    if (const auto *Call = dyn_cast<CallExpr>(E)) {
        canon(Call->getCallee(), Subst, Out);
        Out += "(";
        for (unsigned I = 0; I < Call->getNumArgs(); ++I) {
            if (I)
                Out += ", ";
            canon(Call->getArg(I), Subst, Out);
        }
        Out += ")";
        return;
    }
    Out += printed(E);
}

std::string tagName(const RecordDecl *RD)
{
    if (!RD->getName().empty())
        return RD->getNameAsString();
    if (const TypedefNameDecl *T = RD->getTypedefNameForAnonDecl())
        return T->getNameAsString();
    return "<anonymous>";
}

std::string fieldKey(const MemberExpr *M)
{
    const auto *F = dyn_cast<FieldDecl>(M->getMemberDecl());
    if (!F)
        return "unknown";
    return "field:" + tagName(F->getParent()) + "." + F->getNameAsString();
}

// var:/array: key of a variable, with the file that every translation unit agrees on: the
// definition for internal linkage, the first declaration (usually a header) otherwise.
std::string varKey(const char *Kind, const VarDecl *V, const FunctionDecl *Fn, const PathOf &Path)
{
    std::string Name = V->getNameAsString();
    if (V->isLocalVarDeclOrParm()) {
        const auto *Owner = dyn_cast_or_null<FunctionDecl>(V->getParentFunctionOrMethod());
        if (!Owner)
            Owner = Fn;
        Name = (Owner ? Owner->getNameAsString() : std::string("?")) + "." + Name;
        if (isa<ParmVarDecl>(V))
            return "param:" + Name;
        return std::string(Kind) + ":" + Path(V->getLocation()) + ":" + Name;
    }
    const VarDecl *Where = V->getFirstDecl();
    if (!V->hasExternalFormalLinkage())
        if (const VarDecl *Def = V->getDefinition())
            Where = Def;
    return std::string(Kind) + ":" + Path(Where->getLocation()) + ":" + Name;
}

} // namespace

std::string canonicalLock(const Expr *E, const ParamSubst *Subst)
{
    std::string Out;
    canon(E, Subst, Out);
    return Out;
}

std::string lockKey(const Expr *MutexPtr, const FunctionDecl *Fn, const PathOf &Path)
{
    const Expr *E = MutexPtr->IgnoreParenImpCasts();
    // &lock, &s->lock, &locks[i]
    if (const auto *U = dyn_cast<UnaryOperator>(E); U && U->getOpcode() == UO_AddrOf) {
        const Expr *X = U->getSubExpr()->IgnoreParenImpCasts();
        if (const auto *D = dyn_cast<DeclRefExpr>(X)) {
            if (const auto *V = dyn_cast<VarDecl>(D->getDecl())) {
                if (V->getType()->isArrayType())
                    return varKey("array", V, Fn, Path);
                return varKey("var", V, Fn, Path);
            }
            return "unknown";
        }
        if (const auto *M = dyn_cast<MemberExpr>(X))
            return fieldKey(M);
        if (const auto *A = dyn_cast<ArraySubscriptExpr>(X)) {
            const Expr *Base = A->getBase()->IgnoreParenImpCasts();
            if (const auto *D = dyn_cast<DeclRefExpr>(Base))
                if (const auto *V = dyn_cast<VarDecl>(D->getDecl())) {
                    if (isa<ParmVarDecl>(V))
                        return "param:" + (Fn ? Fn->getNameAsString() : std::string("?")) + "." +
                               V->getNameAsString();
                    return varKey("array", V, Fn, Path);
                }
            if (const auto *M = dyn_cast<MemberExpr>(Base))
                return fieldKey(M);
        }
        return "unknown";
    }
    // locks + i: an element of an array of locks.
    if (const auto *B = dyn_cast<BinaryOperator>(E); B && B->isAdditiveOp()) {
        const Expr *Base = B->getLHS()->IgnoreParenImpCasts();
        if (!Base->getType()->isPointerType())
            Base = B->getRHS()->IgnoreParenImpCasts();
        if (const auto *D = dyn_cast<DeclRefExpr>(Base))
            if (const auto *V = dyn_cast<VarDecl>(D->getDecl()))
                if (V->getType()->isArrayType() || !V->isLocalVarDeclOrParm())
                    return varKey("array", V, Fn, Path);
        return "unknown";
    }
    // A pointer parameter: the caller's lock.
    if (const auto *D = dyn_cast<DeclRefExpr>(E)) {
        if (const auto *P = dyn_cast<ParmVarDecl>(D->getDecl()))
            return "param:" + (Fn ? Fn->getNameAsString() : std::string("?")) + "." +
                   P->getNameAsString();
        if (const auto *V = dyn_cast<VarDecl>(D->getDecl()); V && V->getType()->isArrayType())
            return varKey("array", V, Fn, Path); // an array of locks decays to its first element
    }
    return "unknown";
}

std::string variableKey(const VarDecl *V, const FunctionDecl *Fn, const PathOf &Path)
{
    return varKey(V->getType()->isArrayType() ? "array" : "var", V, Fn, Path);
}

std::string lockName(const std::string &Written)
{
    llvm::StringRef S = llvm::StringRef(Written).trim();
    if (S.startswith("&"))
        S = S.drop_front().ltrim();
    if (S.startswith("(") && S.endswith(")"))
        S = S.drop_front().drop_back().trim();
    return S.str();
}

} // namespace locktune
