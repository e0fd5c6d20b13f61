#include "ListFunctions.h"

#include "Extractor.h"
#include "InitWrapper.h"
#include "SourceText.h"
#include "ThreadIdentity.h"
#include "WrapperShape.h"

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Lex/Lexer.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace clang;

namespace locktune {

namespace {

// The direct callees of a body that are not system functions: the call graph's edges (the
// caller resolves a name to the static function of the same file, else to the program's
// non-static one).
struct ExternalCallees : RecursiveASTVisitor<ExternalCallees> {
    const SourceManager &SM;
    std::set<std::string> Names;
    explicit ExternalCallees(const SourceManager &SM) : SM(SM) {}
    bool VisitCallExpr(CallExpr *C)
    {
        const FunctionDecl *F = C->getDirectCallee();
        if (F && !SM.isInSystemHeader(F->getLocation()))
            Names.insert(F->getNameAsString());
        else if (const VarDecl *P = calledPointer(C))
            Names.insert("*" + P->getNameAsString()); // followed through its assignments
        return true;
    }
};

// What each file-scope function-pointer variable is assigned in a translation unit: named
// functions (its targets), or something else (why it cannot be followed: another pointer, a
// call's result, its address taken, which lets anything write it).  A null pointer constant
// is no target.
struct PointerTargets : RecursiveASTVisitor<PointerTargets> {
    ASTContext &Ctx;
    std::map<std::string, std::set<std::string>> Targets;
    std::map<std::string, std::string> Unknown;
    explicit PointerTargets(ASTContext &Ctx) : Ctx(Ctx) {}

    std::string where(SourceLocation L) const
    {
        const SourceManager &SM = Ctx.getSourceManager();
        PresumedLoc P = SM.getPresumedLoc(SM.getExpansionLoc(L));
        return P.isValid() ? llvm::sys::path::filename(P.getFilename()).str() + ":" +
                                 std::to_string(P.getLine())
                           : "?";
    }
    void assigned(const VarDecl *V, const Expr *Value, SourceLocation At)
    {
        const Expr *E = Value->IgnoreParenImpCasts();
        if (const auto *C = dyn_cast<ConditionalOperator>(E)) { // `kind ? fnv : djb`: both
            assigned(V, C->getTrueExpr(), At);
            assigned(V, C->getFalseExpr(), At);
            return;
        }
        if (const auto *U = dyn_cast<UnaryOperator>(E); U && U->getOpcode() == UO_AddrOf)
            E = U->getSubExpr()->IgnoreParenImpCasts();
        if (const auto *D = dyn_cast<DeclRefExpr>(E))
            if (const auto *Fn = dyn_cast<FunctionDecl>(D->getDecl())) {
                // A library function is not in the call graph: one that depends on its thread
                // (pthread_self as the target) is said here.
                if (!Fn->isDefined() && identityDependent(Fn->getName()))
                    Unknown.emplace(V->getNameAsString(), "is assigned " + Fn->getNameAsString() +
                                                              "() (" + where(At) + ")");
                Targets[V->getNameAsString()].insert(Fn->getNameAsString());
                return;
            }
        if (Value->isNullPointerConstant(Ctx, Expr::NPC_ValueDependentIsNotNull))
            return;
        Unknown.emplace(V->getNameAsString(),
                        "is assigned something other than a function (" + where(At) + ")");
    }
    bool VisitBinaryOperator(BinaryOperator *B)
    {
        if (B->getOpcode() == BO_Assign)
            if (const VarDecl *V = fileScopePointer(B->getLHS()))
                assigned(V, B->getRHS(), B->getExprLoc());
        return true;
    }
    bool VisitVarDecl(VarDecl *V)
    {
        if (V->isFileVarDecl() && V->getType()->isFunctionPointerType() && V->getInit())
            assigned(V, V->getInit(), V->getLocation());
        return true;
    }
    bool VisitUnaryOperator(UnaryOperator *U)
    {
        if (U->getOpcode() == UO_AddrOf)
            if (const VarDecl *V = fileScopePointer(U->getSubExpr()))
                Unknown.emplace(V->getNameAsString(),
                                "has its address taken (" + where(U->getOperatorLoc()) + ")");
        return true;
    }
};

struct Listing {
    std::string Root;
    llvm::json::Array Functions;
    llvm::json::Array Wrappers;
    std::set<std::string> WrappersSeen; // file:line:name (a header's, once)
    llvm::json::Array InitWrappers;
    llvm::json::Array InitWrapperUses;
    std::set<std::string> InitSeen; // file:line:column:name of a definition or a use, once
    std::set<std::string> Included; // the tree's files some translation unit reads
    llvm::json::Array Pointers; // per translation unit, the pointers it assigns (PointerTargets)
};

class Consumer : public ASTConsumer {
public:
    explicit Consumer(Listing &L) : L(L) {}
    void HandleTranslationUnit(ASTContext &Ctx) override
    {
        const SourceManager &SM = Ctx.getSourceManager();
        const FileEntry *Main = SM.getFileEntryForID(SM.getMainFileID());
        llvm::SmallString<256> P(Main ? Main->getName() : "<input>");
        llvm::sys::fs::make_absolute(P);
        llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
        std::string File = reportPath(P.str().str(), L.Root);
        // Every file of the tree this translation unit read, as its configuration includes
        // it (an #include under a false #if is not read): the headers that are part of the
        // program as built.
        for (auto It = SM.fileinfo_begin(); It != SM.fileinfo_end(); ++It) {
            llvm::SmallString<256> H(It->first->getName());
            llvm::sys::fs::make_absolute(H);
            llvm::sys::path::remove_dots(H, /*remove_dot_dot=*/true);
            std::string Rel = reportPath(H.str().str(), L.Root);
            if (!llvm::sys::path::is_absolute(Rel))
                L.Included.insert(Rel);
        }
        listInitWrappers(Ctx, File);
        // The pointers this file assigns; a target's name resolves in this file (a static
        // function of it, else the program's).
        PointerTargets Pointers(Ctx);
        Pointers.TraverseDecl(Ctx.getTranslationUnitDecl());
        std::set<std::string> Assigned;
        for (const auto &KV : Pointers.Targets)
            Assigned.insert(KV.first);
        for (const auto &KV : Pointers.Unknown)
            Assigned.insert(KV.first);
        for (const std::string &N : Assigned) {
            llvm::json::Array Targets;
            for (const std::string &T : Pointers.Targets[N])
                Targets.push_back(T);
            auto Why = Pointers.Unknown.find(N);
            L.Pointers.push_back(
                llvm::json::Object{{"name", N},
                                   {"file", File},
                                   {"targets", std::move(Targets)},
                                   {"unknown", Why == Pointers.Unknown.end() ? "" : Why->second}});
        }
        SourceText Src(SM, Ctx.getLangOpts());
        CalleeFacts None;
        None.Listing = true;
        ThreadIdentity Identity(Src, None);
        for (Decl *D : Ctx.getTranslationUnitDecl()->decls()) {
            auto *FD = dyn_cast<FunctionDecl>(D);
            if (FD && FD->doesThisDeclarationHaveABody())
                listWrapper(FD, Ctx, File);
            if (!FD || !FD->doesThisDeclarationHaveABody() ||
                !SM.isInMainFile(SM.getExpansionLoc(FD->getLocation())))
                continue;
            const IdentityFacts &Facts = Identity.ofFunction(FD);
            ExternalCallees Callees(SM);
            Callees.TraverseStmt(FD->getBody());
            llvm::json::Array Calls;
            for (const std::string &N : Callees.Names)
                Calls.push_back(N);
            L.Functions.push_back(llvm::json::Object{
                {"name", FD->getNameAsString()},
                {"file", File},
                {"line", static_cast<int64_t>(SM.getExpansionLineNumber(FD->getLocation()))},
                {"static", FD->getStorageClass() == SC_Static},
                {"on_caller", Facts.OnCaller},
                {"wait", Facts.Wait},
                {"calls", std::move(Calls)}});
        }
    }

private:
    // A file of the tree, as the report names it, for a location in this translation unit.
    std::string fileOf(SourceLocation Loc, const SourceManager &SM, const std::string &MainFile)
    {
        if (SM.isInMainFile(Loc))
            return MainFile;
        llvm::SmallString<256> P(SM.getFilename(Loc));
        llvm::sys::fs::make_absolute(P);
        llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
        return reportPath(P.str().str(), L.Root);
    }

    // An expression as written (empty when a macro makes it up).
    static std::string sourceText(const Expr *E, ASTContext &Ctx)
    {
        CharSourceRange R =
            Lexer::makeFileCharRange(CharSourceRange::getTokenRange(E->getSourceRange()),
                                     Ctx.getSourceManager(), Ctx.getLangOpts());
        return R.isValid()
                   ? Lexer::getSourceText(R, Ctx.getSourceManager(), Ctx.getLangOpts()).str()
                   : "";
    }

    // The init wrappers (InitWrapper.h) this translation unit defines in the tree, and every
    // use of one: a call (where, and the lock its caller passes) or a use of its address.
    void listInitWrappers(ASTContext &Ctx, const std::string &MainFile)
    {
        const SourceManager &SM = Ctx.getSourceManager();
        struct Uses : RecursiveASTVisitor<Uses> {
            std::vector<const CallExpr *> Calls;
            std::vector<const DeclRefExpr *> Refs;
            std::set<const Expr *> Callees;
            bool VisitCallExpr(CallExpr *C)
            {
                if (initWrapperCalled(C)) {
                    Calls.push_back(C);
                    Callees.insert(C->getCallee()->IgnoreParenImpCasts());
                }
                return true;
            }
            bool VisitDeclRefExpr(DeclRefExpr *R)
            {
                const auto *F = dyn_cast<FunctionDecl>(R->getDecl());
                if (F && !Callees.count(R) && initWrapperShape(F->getDefinition()))
                    Refs.push_back(R);
                return true;
            }
        } U;
        for (Decl *D : Ctx.getTranslationUnitDecl()->decls()) {
            if (SM.isInSystemHeader(SM.getExpansionLoc(D->getLocation())))
                continue;
            U.TraverseDecl(D);
            auto *FD = dyn_cast<FunctionDecl>(D);
            if (!FD || !FD->doesThisDeclarationHaveABody())
                continue;
            std::optional<InitWrapperShape> Shape = initWrapperShape(FD);
            if (!Shape)
                continue;
            SourceLocation Loc = SM.getExpansionLoc(FD->getLocation());
            std::string File = fileOf(Loc, SM, MainFile);
            unsigned Line = SM.getExpansionLineNumber(Loc);
            if (!L.InitSeen
                     .insert(File + ":" + std::to_string(Line) + ":def:" + FD->getNameAsString())
                     .second)
                continue;
            llvm::json::Array Decls;
            for (const FunctionDecl *R : FD->redecls()) {
                if (R == FD)
                    continue;
                SourceLocation RL = SM.getExpansionLoc(R->getLocation());
                Decls.push_back(llvm::json::Object{
                    {"file", fileOf(RL, SM, MainFile)},
                    {"line", static_cast<int64_t>(SM.getExpansionLineNumber(RL))}});
            }
            L.InitWrappers.push_back(llvm::json::Object{
                {"name", FD->getNameAsString()},
                {"file", File},
                {"line", static_cast<int64_t>(Line)},
                {"static", FD->getStorageClass() == SC_Static},
                {"param", static_cast<int64_t>(Shape->Param)},
                {"param_name", FD->getParamDecl(Shape->Param)->getNameAsString()},
                {"init_lock", sourceText(LockCalls::mutexInitArg(Shape->Init), Ctx)},
                {"init_line", static_cast<int64_t>(SM.getExpansionLineNumber(
                                  SM.getExpansionLoc(Shape->Init->getBeginLoc())))},
                {"in_macro", FD->getLocation().isMacroID()},
                {"init_in_macro", Shape->Init->getBeginLoc().isMacroID()},
                {"declarations", std::move(Decls)}});
        }
        auto Use = [&](const Expr *E, const FunctionDecl *F, llvm::json::Object O) {
            SourceLocation Loc = SM.getExpansionLoc(E->getBeginLoc());
            if (SM.isInSystemHeader(Loc))
                return;
            std::string File = fileOf(Loc, SM, MainFile);
            std::string Key = File + ":" + std::to_string(SM.getExpansionLineNumber(Loc)) + ":" +
                              std::to_string(SM.getExpansionColumnNumber(Loc)) + ":" +
                              F->getNameAsString();
            if (!L.InitSeen.insert(Key).second)
                return;
            O["name"] = F->getNameAsString();
            O["file"] = File;
            O["line"] = static_cast<int64_t>(SM.getExpansionLineNumber(Loc));
            // Which function it uses: static functions of two files may share a name.
            SourceLocation Def = SM.getExpansionLoc(F->getDefinition()->getLocation());
            O["def_file"] = fileOf(Def, SM, MainFile);
            O["def_line"] = static_cast<int64_t>(SM.getExpansionLineNumber(Def));
            L.InitWrapperUses.push_back(std::move(O));
        };
        for (const CallExpr *C : U.Calls) {
            const FunctionDecl *F = C->getDirectCallee();
            unsigned Param = initWrapperCalled(C)->Param;
            const Expr *Arg = C->getArg(Param);
            CharSourceRange R = Lexer::makeFileCharRange(
                CharSourceRange::getTokenRange(Arg->getSourceRange()), SM, Ctx.getLangOpts());
            std::string Lock =
                R.isValid() ? Lexer::getSourceText(R, SM, Ctx.getLangOpts()).str() : "";
            Use(C, F,
                llvm::json::Object{
                    {"call", true},
                    {"in_macro", C->getBeginLoc().isMacroID() || C->getRParenLoc().isMacroID()},
                    {"lock", Lock}});
        }
        for (const DeclRefExpr *R : U.Refs)
            Use(R, cast<FunctionDecl>(R->getDecl()), llvm::json::Object{{"call", false}});
    }

    // A lock wrapper defined in this file or in one of the program's headers (not a system
    // header): its role and the lock it takes as written, or why it is not quite one.
    void listWrapper(const FunctionDecl *FD, ASTContext &Ctx, const std::string &MainFile)
    {
        const SourceManager &SM = Ctx.getSourceManager();
        SourceLocation Loc = SM.getExpansionLoc(FD->getLocation());
        if (SM.isInSystemHeader(Loc))
            return;
        std::string Why;
        std::optional<WrapperShape> Shape = lockWrapperShape(FD, Ctx, &Why);
        if (!Shape && Why.empty())
            return;
        std::string File = MainFile;
        if (!SM.isInMainFile(Loc)) {
            llvm::SmallString<256> P(SM.getFilename(Loc));
            llvm::sys::fs::make_absolute(P);
            llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
            File = reportPath(P.str().str(), L.Root);
        }
        const unsigned Line = SM.getExpansionLineNumber(Loc);
        if (!L.WrappersSeen.insert(File + ":" + std::to_string(Line) + ":" + FD->getNameAsString())
                 .second)
            return;
        llvm::json::Object W{{"name", FD->getNameAsString()},
                             {"file", File},
                             {"line", static_cast<int64_t>(Line)},
                             {"static", FD->getStorageClass() == SC_Static}};
        if (Shape) {
            const Expr *Arg = Shape->Inner->getArg(0);
            CharSourceRange R = Lexer::makeFileCharRange(
                CharSourceRange::getTokenRange(Arg->getSourceRange()), SM, Ctx.getLangOpts());
            std::string Lock =
                R.isValid() ? Lexer::getSourceText(R, SM, Ctx.getLangOpts()).str() : "";
            W["role"] = Shape->Kind == OpKind::Lock     ? "lock"
                        : Shape->Kind == OpKind::Unlock ? "unlock"
                                                        : "trylock";
            W["lock"] = Lock;
            llvm::json::Array Params;
            for (const ParmVarDecl *P : FD->parameters())
                Params.push_back(P->getNameAsString());
            W["params"] = std::move(Params);
        } else {
            W["not_wrapper"] = Why;
        }
        L.Wrappers.push_back(std::move(W));
    }

    Listing &L;
};

class Action : public ASTFrontendAction {
public:
    explicit Action(Listing &L) : L(L) {}
    std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &, StringRef) override
    {
        return std::make_unique<Consumer>(L);
    }

private:
    Listing &L;
};

class Factory : public tooling::FrontendActionFactory {
public:
    explicit Factory(Listing &L) : L(L) {}
    std::unique_ptr<FrontendAction> create() override
    {
        return std::make_unique<Action>(L);
    }

private:
    Listing &L;
};

} // namespace

int listFunctions(tooling::ClangTool &Tool, const std::string &SourceRoot)
{
    Listing L;
    L.Root = SourceRoot;
    Factory F(L);
    int Status = Tool.run(&F);
    llvm::json::Array Included;
    for (const std::string &F : L.Included)
        Included.push_back(F);
    llvm::json::Object Doc{{"schema", "locktune-extract-functions/0"},
                           {"functions", std::move(L.Functions)},
                           {"pointers", std::move(L.Pointers)},
                           {"lock_wrappers", std::move(L.Wrappers)},
                           {"init_wrappers", std::move(L.InitWrappers)},
                           {"init_wrapper_uses", std::move(L.InitWrapperUses)},
                           {"included", std::move(Included)}};
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(Doc))) << "\n";
    return Status == 0 ? 0 : 1;
}

} // namespace locktune
