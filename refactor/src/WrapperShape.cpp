#include "WrapperShape.h"

#include "clang/AST/Expr.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/Stmt.h"
#include "clang/Lex/Lexer.h"

#include <vector>

using namespace clang;

namespace locktune {

namespace {

// The lock calls of a body (one argument: lock, unlock, trylock).
struct LockCallFinder : RecursiveASTVisitor<LockCallFinder> {
    std::vector<const CallExpr *> Calls;
    bool VisitCallExpr(CallExpr *C)
    {
        if (const FunctionDecl *F = C->getDirectCallee())
            if (C->getNumArgs() == 1 && pthreadOpKind(F->getName()))
                Calls.push_back(C);
        return true;
    }
};

struct RefFinder : RecursiveASTVisitor<RefFinder> {
    std::vector<const ValueDecl *> Refs;
    bool VisitDeclRefExpr(DeclRefExpr *E)
    {
        Refs.push_back(E->getDecl());
        return true;
    }
};

// How many times each variable is written (assigned, incremented, its address taken).
struct WriteCounter : RecursiveASTVisitor<WriteCounter> {
    std::map<const VarDecl *, unsigned> Writes;
    void note(const Expr *E)
    {
        if (const auto *R = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts()))
            if (const auto *V = dyn_cast<VarDecl>(R->getDecl()))
                ++Writes[V];
    }
    bool VisitBinaryOperator(BinaryOperator *B)
    {
        if (B->isAssignmentOp())
            note(B->getLHS());
        return true;
    }
    bool VisitUnaryOperator(UnaryOperator *U)
    {
        if (U->isIncrementDecrementOp() || U->getOpcode() == UO_AddrOf)
            note(U->getSubExpr());
        return true;
    }
};

bool contains(const Stmt *S, const Stmt *X)
{
    if (S == X)
        return true;
    for (const Stmt *C : S->children())
        if (C && contains(C, X))
            return true;
    return false;
}

const Expr *peel(const Expr *E)
{
    while (true) {
        E = E->IgnoreParenImpCasts();
        if (const auto *C = dyn_cast<CStyleCastExpr>(E)) {
            E = C->getSubExpr();
            continue;
        }
        return E;
    }
}

bool isNoReturnCall(const Expr *E)
{
    const auto *C = dyn_cast<CallExpr>(peel(E));
    if (!C)
        return false;
    const FunctionDecl *F = C->getDirectCallee();
    return F && F->isNoReturn();
}

// A statement that, run to its end, ends the program (abort(), exit(), __assert_fail()).
bool endsInNoReturn(const Stmt *S)
{
    if (!S)
        return false;
    if (const auto *C = dyn_cast<CompoundStmt>(S))
        return !C->body_empty() && endsInNoReturn(C->body_back());
    if (const auto *E = dyn_cast<Expr>(S))
        return isNoReturnCall(E);
    return false;
}

class Judge {
public:
    Judge(const CallExpr *Inner, ASTContext &Ctx) : Inner(Inner), Ctx(Ctx) {}

    // Nothing the program could see besides reading: writes to the wrapper's own locals,
    // checks whose failure ends the program.  Sets Bad to the first statement that is not.
    bool inert(const Stmt *S)
    {
        if (!S || isa<NullStmt>(S))
            return true;
        if (S == Inner)
            return true;
        if (const auto *C = dyn_cast<CompoundStmt>(S)) {
            for (const Stmt *X : C->body())
                if (!inert(X))
                    return false;
            return true;
        }
        if (const auto *D = dyn_cast<DeclStmt>(S)) {
            for (const Decl *X : D->decls()) {
                const auto *V = dyn_cast<VarDecl>(X);
                if (!V)
                    continue;
                if (!V->hasLocalStorage())
                    return bad(S);
                if (const Expr *Init = V->getInit())
                    if (!inert(Init))
                        return false;
            }
            return true;
        }
        if (const auto *I = dyn_cast<IfStmt>(S)) {
            if (I->getInit() || I->getConditionVariable() || !inert(I->getCond()))
                return bad(S);
            for (const Stmt *B : {I->getThen(), I->getElse()})
                if (!endsInNoReturn(B) && !inert(B))
                    return false;
            return true;
        }
        const auto *E = dyn_cast<Expr>(S);
        if (!E)
            return bad(S);
        if (isa<UnaryExprOrTypeTraitExpr>(E)) // sizeof: not evaluated
            return true;
        if (const auto *SE = dyn_cast<StmtExpr>(E))
            return inert(SE->getSubStmt());
        if (const auto *C = dyn_cast<CallExpr>(E)) {
            const FunctionDecl *F = C->getDirectCallee();
            if (F && F->isNoReturn())
                return true;
            if (!F || !F->getBuiltinID() || C->HasSideEffects(Ctx))
                return bad(S);
        }
        if (const auto *B = dyn_cast<BinaryOperator>(E))
            if (B->isAssignmentOp() && !isOwnLocal(B->getLHS()))
                return bad(S);
        if (const auto *U = dyn_cast<UnaryOperator>(E))
            if (U->isIncrementDecrementOp() && !isOwnLocal(U->getSubExpr()))
                return bad(S);
        for (const Stmt *C : E->children())
            if (!inert(C))
                return false;
        return true;
    }

    const Stmt *Bad = nullptr;

private:
    bool bad(const Stmt *S)
    {
        if (!Bad)
            Bad = S;
        return false;
    }
    bool isOwnLocal(const Expr *E) const
    {
        const auto *R = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
        const auto *V = R ? dyn_cast<VarDecl>(R->getDecl()) : nullptr;
        return V && V->hasLocalStorage() && !isa<ParmVarDecl>(V);
    }

    const CallExpr *Inner;
    ASTContext &Ctx;
};

// The call is evaluated whenever E is: E is the call, a comparison or negation of it, or
// an assignment of it to a local.
bool evaluatesCall(const Expr *E, const CallExpr *Call, const VarDecl **Into)
{
    E = peel(E);
    if (E == Call)
        return true;
    if (const auto *U = dyn_cast<UnaryOperator>(E))
        return U->getOpcode() == UO_LNot && evaluatesCall(U->getSubExpr(), Call, Into);
    if (const auto *B = dyn_cast<BinaryOperator>(E)) {
        if (B->getOpcode() == BO_Assign) {
            const auto *R = dyn_cast<DeclRefExpr>(B->getLHS()->IgnoreParenImpCasts());
            const auto *V = R ? dyn_cast<VarDecl>(R->getDecl()) : nullptr;
            if (!V || !V->hasLocalStorage() || isa<ParmVarDecl>(V))
                return false;
            *Into = V;
            return evaluatesCall(B->getRHS(), Call, Into);
        }
        if (B->isEqualityOp() || B->isRelationalOp())
            return evaluatesCall(B->getLHS(), Call, Into) || evaluatesCall(B->getRHS(), Call, Into);
    }
    return false;
}

std::string lineOf(const Stmt *S, ASTContext &Ctx)
{
    return std::to_string(Ctx.getSourceManager().getExpansionLineNumber(S->getBeginLoc()));
}

} // namespace

static std::optional<WrapperShape> shape(const FunctionDecl *Def, ASTContext &Ctx, std::string &W);

std::optional<WrapperShape> lockWrapperShape(const FunctionDecl *Def, ASTContext &Ctx,
                                             std::string *Why)
{
    std::string W;
    std::optional<WrapperShape> S = shape(Def, Ctx, W);
    // A near miss is worth saying for a function as small as a wrapper; a longer one that
    // makes one lock call is something else (a section closed by a callee, a lock held on
    // return on purpose).
    const auto *Body = Def ? dyn_cast_or_null<CompoundStmt>(Def->getBody()) : nullptr;
    if (Why)
        *Why = Body && Body->size() <= 4 ? W : "";
    return S;
}

static std::optional<WrapperShape> shape(const FunctionDecl *Def, ASTContext &Ctx, std::string &W)
{
    const auto *Body = Def ? dyn_cast_or_null<CompoundStmt>(Def->getBody()) : nullptr;
    if (!Body || Def->isVariadic())
        return std::nullopt;
    LockCallFinder Finder;
    Finder.TraverseStmt(const_cast<CompoundStmt *>(Body));
    if (Finder.Calls.size() != 1)
        return std::nullopt; // none, or a section of its own
    const CallExpr *Inner = Finder.Calls.front();
    OpKind Kind = *pthreadOpKind(Inner->getDirectCallee()->getName());
    const std::string Name = Def->getNameAsString() + "()";

    // The top-level statement that makes the call, and how.
    const Stmt *Top = nullptr;
    size_t TopIndex = 0, Index = 0;
    for (const Stmt *S : Body->body()) {
        if (contains(S, Inner)) {
            Top = S;
            TopIndex = Index;
        }
        ++Index;
    }
    const VarDecl *Into = nullptr; // the local the result goes to
    bool Unconditional = false, Returned = false;
    if (const auto *E = dyn_cast<Expr>(Top)) {
        Unconditional = evaluatesCall(E, Inner, &Into);
    } else if (const auto *R = dyn_cast<ReturnStmt>(Top)) {
        Unconditional = R->getRetValue() && evaluatesCall(R->getRetValue(), Inner, &Into);
        Returned = R->getRetValue() && peel(R->getRetValue()) == Inner;
    } else if (const auto *D = dyn_cast<DeclStmt>(Top)) {
        if (D->isSingleDecl())
            if (const auto *V = dyn_cast<VarDecl>(D->getSingleDecl()))
                if (V->getInit() && peel(V->getInit()) == Inner && V->hasLocalStorage()) {
                    Unconditional = true;
                    Into = V;
                }
    } else if (const auto *I = dyn_cast<IfStmt>(Top)) {
        // a checked call: `if (pthread_mutex_lock(m) != 0) abort();`
        Unconditional = !I->getInit() && !I->getConditionVariable() &&
                        evaluatesCall(I->getCond(), Inner, &Into) &&
                        (endsInNoReturn(I->getThen()) || endsInNoReturn(I->getElse()));
    }
    if (!Unconditional) {
        const auto *If = dyn_cast_or_null<IfStmt>(Top);
        if (If && contains(If->getCond(), Inner))
            W = Name + " acts on the result of its " +
                (Kind == OpKind::Trylock ? "trylock" : "lock call") + " (line " +
                lineOf(Inner, Ctx) + ") beyond ending the program";
        else
            W = Name + " makes its lock call (line " + lineOf(Inner, Ctx) + ") on some paths only";
        return std::nullopt;
    }

    // The lock: an expression of the parameters (never written) and of file-scope names.
    const Expr *Lock = Inner->getArg(0);
    WriteCounter WC;
    WC.TraverseStmt(const_cast<CompoundStmt *>(Body));
    RefFinder RF;
    RF.TraverseStmt(const_cast<Expr *>(Lock));
    for (const ValueDecl *VD : RF.Refs) {
        if (const auto *P = dyn_cast<ParmVarDecl>(VD)) {
            if (WC.Writes[P]) {
                W = Name + " changes its parameter '" + P->getNameAsString() +
                    "' before naming the lock with it";
                return std::nullopt;
            }
            continue;
        }
        if (isa<EnumConstantDecl>(VD) || VD->getDeclContext()->isFileContext())
            continue;
        W = Name + " locks through its local '" + VD->getNameAsString() +
            "': its callers cannot name that lock";
        return std::nullopt;
    }
    if (Lock->HasSideEffects(Ctx)) {
        W = Name + ": the lock expression has side effects";
        return std::nullopt;
    }
    // Everything else changes nothing the program sees.
    Judge J(Inner, Ctx);
    Index = 0;
    const Stmt *Last = Body->body_back();
    for (const Stmt *S : Body->body()) {
        const size_t I = Index++;
        if (const auto *R = dyn_cast<ReturnStmt>(S)) {
            // only at the end, after the lock call
            if (S != Last || I < TopIndex) {
                W = Name + " may return before its lock call (line " + lineOf(S, Ctx) + ")";
                return std::nullopt;
            }
            if (S == Top || !R->getRetValue() || J.inert(R->getRetValue()))
                continue;
        } else if (S == Top) {
            const Stmt *Rest = S;
            if (const auto *If = dyn_cast<IfStmt>(S)) {
                bool Ok = J.inert(If->getCond());
                for (const Stmt *B : {If->getThen(), If->getElse()})
                    Ok = Ok && (endsInNoReturn(B) || J.inert(B));
                if (Ok)
                    continue;
            } else if (J.inert(Rest)) {
                continue;
            }
        } else if (J.inert(S)) {
            continue; // reads, the wrapper's own locals, checks that end the program
        }
        const Stmt *B = J.Bad ? J.Bad : S;
        W = Name + " does more than " +
            (Kind == OpKind::Lock     ? "lock"
             : Kind == OpKind::Unlock ? "unlock"
                                      : "try") +
            " (line " + lineOf(B, Ctx) + "): a section run by lt_execute would not do it";
        return std::nullopt;
    }

    // A trylock wrapper returns the trylock's result.
    if (Kind == OpKind::Trylock && !Returned) {
        const auto *R = dyn_cast<ReturnStmt>(Last);
        const auto *Ref =
            R && R->getRetValue() ? dyn_cast<DeclRefExpr>(peel(R->getRetValue())) : nullptr;
        // initialised by the call: never written after; assigned: only by that assignment
        const unsigned Allowed = isa<DeclStmt>(Top) ? 0 : 1;
        if (!Into || !Ref || Ref->getDecl() != Into || WC.Writes[Into] > Allowed) {
            W = Name + " does not return the result of its trylock (line " + lineOf(Inner, Ctx) +
                ")";
            return std::nullopt;
        }
    }

    return WrapperShape{Kind, Inner};
}

} // namespace locktune
