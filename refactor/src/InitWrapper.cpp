#include "InitWrapper.h"

#include "LockCalls.h"

#include "clang/AST/RecursiveASTVisitor.h"

using namespace clang;

namespace locktune {

namespace {

// The pthread_mutex_init calls of a body.
struct InitCalls : RecursiveASTVisitor<InitCalls> {
    std::vector<const CallExpr *> Found;
    bool VisitCallExpr(CallExpr *C)
    {
        if (LockCalls::mutexInitArg(C))
            Found.push_back(C);
        return true;
    }
};

// The parameters of Fn an expression names.
struct ParamsNamed : RecursiveASTVisitor<ParamsNamed> {
    const FunctionDecl *Fn;
    std::vector<unsigned> Indices;
    explicit ParamsNamed(const FunctionDecl *Fn) : Fn(Fn) {}
    bool VisitDeclRefExpr(DeclRefExpr *R)
    {
        if (const auto *P = dyn_cast<ParmVarDecl>(R->getDecl()))
            for (unsigned I = 0; I < Fn->getNumParams(); ++I)
                if (Fn->getParamDecl(I) == P)
                    Indices.push_back(I);
        return true;
    }
};

} // namespace

std::optional<InitWrapperShape> initWrapperShape(const FunctionDecl *Def)
{
    if (!Def || !Def->doesThisDeclarationHaveABody() || Def->isVariadic())
        return std::nullopt;
    InitCalls Calls;
    Calls.TraverseStmt(Def->getBody());
    if (Calls.Found.size() != 1)
        return std::nullopt;
    const CallExpr *Init = Calls.Found.front();
    ParamsNamed Named(Def);
    Named.TraverseStmt(const_cast<Expr *>(LockCalls::mutexInitArg(Init)));
    if (Named.Indices.empty())
        return std::nullopt; // a lock of its own (a global): its one site is right
    for (unsigned I : Named.Indices)
        if (I != Named.Indices.front())
            return std::nullopt; // two parameters make the lock: not one caller's lock
    return InitWrapperShape{Init, Named.Indices.front()};
}

std::optional<InitWrapperShape> initWrapperCalled(const CallExpr *Call)
{
    const FunctionDecl *F = Call->getDirectCallee();
    if (!F || F->getBuiltinID())
        return std::nullopt;
    const FunctionDecl *Def = F->getDefinition();
    if (!Def)
        return std::nullopt;
    std::optional<InitWrapperShape> S = initWrapperShape(Def);
    if (!S || S->Param >= Call->getNumArgs())
        return std::nullopt;
    return S;
}

} // namespace locktune
