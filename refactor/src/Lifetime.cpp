#include "Lifetime.h"

#include "clang/AST/Expr.h"
#include "clang/AST/RecursiveASTVisitor.h"

#include <set>

using namespace clang;

namespace locktune {

namespace {

// C library functions that keep a pointer they are given beyond the call.
bool keepsArgument(StringRef N)
{
    static const std::set<std::string> Keep = {"pthread_setspecific",
                                               "pthread_create",
                                               "setvbuf",
                                               "setbuf",
                                               "setbuffer",
                                               "setlinebuf",
                                               "atexit",
                                               "on_exit",
                                               "putenv",
                                               "tsearch",
                                               "tfind",
                                               "tdelete",
                                               "insque",
                                               "remque",
                                               "lsearch",
                                               "hsearch_r",
                                               "aio_read",
                                               "aio_write",
                                               "aio_fsync",
                                               "lio_listio",
                                               "makecontext",
                                               "swapcontext",
                                               "sigaltstack",
                                               "fopencookie",
                                               "pthread_attr_setstack",
                                               "__pthread_register_cancel",
                                               "pthread_cleanup_push",
                                               "_pthread_cleanup_push",
                                               "register_printf_function",
                                               "qsort_r",
                                               "obstack_init"};
    return Keep.count(N.str()) > 0;
}

class Tracker {
public:
    Tracker(const FunctionContext &F, const Section &S) : F(F), S(S) {}

    // Why the address of what E designates (an lvalue) may outlive the section, or nothing.
    std::optional<std::string> lvalue(const Expr *E)
    {
        const Stmt *P = parent(E);
        if (!P)
            return "it is used in a way locktune-extract does not follow";
        if (const auto *C = dyn_cast<ImplicitCastExpr>(P)) {
            switch (C->getCastKind()) {
            case CK_LValueToRValue:
                return std::nullopt; // its value is read
            case CK_ArrayToPointerDecay:
            case CK_FunctionToPointerDecay:
                return pointer(C);
            case CK_NoOp:
                return lvalue(C);
            default:
                return "it is converted at line " + line(P);
            }
        }
        if (const auto *U = dyn_cast<UnaryOperator>(P)) {
            if (U->getOpcode() == UO_AddrOf)
                return pointer(U);
            if (U->isIncrementDecrementOp())
                return std::nullopt;
        }
        if (const auto *M = dyn_cast<MemberExpr>(P); M && !M->isArrow() && M->getBase() == E)
            return lvalue(M);
        if (const auto *B = dyn_cast<BinaryOperator>(P);
            B && B->getLHS() == E && (B->isAssignmentOp()))
            return std::nullopt; // written
        if (const auto *B = dyn_cast<CompoundAssignOperator>(P); B && B->getLHS() == E)
            return std::nullopt;
        if (isa<UnaryExprOrTypeTraitExpr>(P))
            return std::nullopt; // sizeof
        return "it is used at line " + line(P) + " in a way locktune-extract does not follow";
    }

    // Why a pointer into the object, the value of E, may outlive the section, or nothing.
    std::optional<std::string> pointer(const Expr *E)
    {
        if (++Depth > 64)
            return "its address goes through too many steps to follow";
        const Stmt *P = parent(E);
        if (!P || isa<CompoundStmt>(P) || isa<LabelStmt>(P))
            return std::nullopt; // an expression statement: the value is dropped
        if (const auto *C = dyn_cast<CastExpr>(P)) {
            QualType T = C->getType();
            if (T->isPointerType())
                return pointer(C);
            if (T->isBooleanType() || T->isVoidType() || C->getCastKind() == CK_PointerToBoolean)
                return std::nullopt;
            return "it is converted to " + T.getAsString() + " at line " + line(P);
        }
        if (const auto *U = dyn_cast<UnaryOperator>(P)) {
            if (U->getOpcode() == UO_Deref)
                return lvalue(U);
            if (U->getOpcode() == UO_LNot)
                return std::nullopt;
        }
        if (const auto *A = dyn_cast<ArraySubscriptExpr>(P)) {
            if (A->getBase()->IgnoreParenImpCasts() == E->IgnoreParenImpCasts() ||
                A->getBase() == E)
                return lvalue(A);
            return std::nullopt; // an index: cannot be a pointer
        }
        if (const auto *M = dyn_cast<MemberExpr>(P); M && M->isArrow())
            return lvalue(M);
        if (const auto *B = dyn_cast<BinaryOperator>(P)) {
            if (B->isComparisonOp() || B->isLogicalOp())
                return std::nullopt;
            if (B->getOpcode() == BO_Comma)
                return B->getRHS() == E ? pointer(B) : std::nullopt;
            if (B->isAdditiveOp())
                return B->getType()->isPointerType() ? pointer(B) : std::nullopt;
            if (B->getOpcode() == BO_Assign && B->getRHS() == E)
                return storedIn(B->getLHS(), P);
            return "it is used at line " + line(P) + " in a way locktune-extract does not follow";
        }
        if (const auto *C = dyn_cast<ConditionalOperator>(P))
            return C->getCond() == E ? std::nullopt : pointer(C);
        if (const auto *D = dyn_cast<DeclStmt>(P)) {
            for (const Decl *X : D->decls())
                if (const auto *V = dyn_cast<VarDecl>(X); V && V->getInit() == E)
                    return follow(V, P);
            return "it initialises a declaration at line " + line(P);
        }
        if (const auto *C = dyn_cast<CallExpr>(P)) {
            if (C->getCallee() == E)
                return std::nullopt;
            const FunctionDecl *Callee = C->getDirectCallee();
            const SourceManager &SM = F.Src.sm();
            bool Library =
                Callee && (Callee->getBuiltinID() || SM.isInSystemHeader(Callee->getLocation()));
            if (!Library || keepsArgument(Callee->getName()))
                return "it is passed to " +
                       (Callee ? Callee->getNameAsString() + "()" : std::string("a call")) +
                       " at line " + line(P) + ", which may keep it";
            // What the call returns may point into the argument (strchr, memcpy).
            return C->getType()->isPointerType() ? pointer(C) : std::nullopt;
        }
        if (isa<ParenExpr>(P))
            return pointer(cast<Expr>(P));
        return "it is used at line " + line(P) + " in a way locktune-extract does not follow";
    }

private:
    const Stmt *parent(const Expr *E)
    {
        const Stmt *P = F.PM->getParent(E);
        while (P && isa<ParenExpr>(P))
            P = F.PM->getParent(P);
        return P;
    }
    std::string line(const Stmt *X)
    {
        std::optional<unsigned> Off = F.Src.offset(X->getBeginLoc());
        return Off ? std::to_string(F.Src.line(*Off)) : "?";
    }

    // The pointer is stored in Target (the left side of an assignment).
    std::optional<std::string> storedIn(const Expr *Target, const Stmt *Where)
    {
        const auto *D = dyn_cast<DeclRefExpr>(Target->IgnoreParens());
        const auto *V = D ? dyn_cast<VarDecl>(D->getDecl()) : nullptr;
        if (!V)
            return "it is stored at line " + line(Where) + " where it may outlive the section";
        return follow(V, Where);
    }

    // The pointer is kept in the local variable V: follow V's uses.
    std::optional<std::string> follow(const VarDecl *V, const Stmt *Where)
    {
        std::string Name = V->getNameAsString();
        if (!V->hasLocalStorage() || V->getType().isVolatileQualified() ||
            !V->getType()->isPointerType() || F.Facts.AddrTaken.count(V))
            return "it is stored in '" + Name + "' (line " + line(Where) +
                   "), which may outlive the section";
        if (!Followed.insert(V).second)
            return std::nullopt;
        std::optional<CfgPos> Entry = F.Cfg->find(S.Lock.Call);
        if (!Entry || (F.Flow && F.Flow->liveBefore(*Entry, V)))
            return "it is stored in '" + Name + "' (line " + line(Where) +
                   "), whose value reaches the section's start again";
        for (const VarRef &R : F.Facts.Refs) {
            if (R.Var != V)
                continue;
            if (!S.inHeld(R.At))
                return "it is stored in '" + Name + "' (line " + line(Where) +
                       "), which is used after the section (line " +
                       std::to_string(F.Src.line(R.At)) + ")";
        }
        for (const VarRef &R : F.Facts.Refs) {
            if (R.Var != V || R.Unevaluated)
                continue;
            const Stmt *P = parent(R.Ref);
            const auto *C = dyn_cast_or_null<ImplicitCastExpr>(P);
            if (C && C->getCastKind() == CK_LValueToRValue) {
                if (std::optional<std::string> Why = pointer(C))
                    return Why;
                continue;
            }
            if (const auto *B = dyn_cast_or_null<BinaryOperator>(P);
                B && B->getOpcode() == BO_Assign && B->getLHS() == R.Ref)
                continue; // a new value
            if (const auto *U = dyn_cast_or_null<UnaryOperator>(P);
                U && U->isIncrementDecrementOp())
                continue; // stays in the same object
            if (const auto *B = dyn_cast_or_null<CompoundAssignOperator>(P);
                B && B->getLHS() == R.Ref && B->isAdditiveOp())
                continue;
            return "it is stored in '" + Name + "' (line " + line(Where) + "), used at line " +
                   std::to_string(F.Src.line(R.At)) + " in a way locktune-extract does not follow";
        }
        return std::nullopt;
    }

    const FunctionContext &F;
    const Section &S;
    std::set<const VarDecl *> Followed;
    unsigned Depth = 0;
};

// The block an object written at E lives in: the nearest enclosing compound statement (a
// selection or iteration statement may end it earlier: the answer errs on the long side).
const CompoundStmt *blockOf(const FunctionContext &F, const Stmt *E)
{
    for (const Stmt *P = F.PM->getParent(E); P; P = F.PM->getParent(P))
        if (const auto *C = dyn_cast<CompoundStmt>(P))
            return C;
    return nullptr;
}

// True when the object's block ends inside the section's held code and holds no early exit's
// code: nothing after the section can see it.
bool diesInside(const FunctionContext &F, const Section &S, const CompoundStmt *Block)
{
    if (!Block || Block == S.Block)
        return false;
    std::optional<unsigned> B = F.Src.offset(Block->getBeginLoc());
    std::optional<unsigned> E = F.Src.offset(Block->getEndLoc());
    if (!B || !E || !S.inHeld(Span{*B, *E + 1}))
        return false;
    for (const Tail &T : S.Tails)
        if (T.Code_.Begin < *E + 1 && *B < T.Code_.End)
            return false;
    return true;
}

} // namespace

std::optional<std::string> checkLifetimes(const FunctionContext &F, const Section &S)
{
    auto inChild = [&](unsigned Off) {
        for (const Section *C : S.Children)
            if (C->Extract && C->inHeld(Off))
                return true;
        return false;
    };
    auto held = [&](const Stmt *X) {
        std::optional<unsigned> Off = F.Src.offset(X->getBeginLoc());
        return Off && S.inHeld(*Off) && !inChild(*Off);
    };
    auto lineOf = [&](const Stmt *X) {
        std::optional<unsigned> Off = F.Src.offset(X->getBeginLoc());
        return Off ? std::to_string(F.Src.line(*Off)) : std::string("?");
    };

    // The section's own variables.
    for (const DeclStmt *D : F.Facts.Decls) {
        if (!held(D) || diesInside(F, S, blockOf(F, D)))
            continue;
        for (const Decl *X : D->decls()) {
            const auto *V = dyn_cast<VarDecl>(X);
            if (!V || !V->hasLocalStorage())
                continue;
            for (const VarRef &R : F.Facts.Refs) {
                if (R.Var != V || R.Unevaluated || !S.inHeld(R.At) || inChild(R.At))
                    continue;
                Tracker T(F, S);
                if (std::optional<std::string> Why = T.lvalue(R.Ref))
                    return "the address of '" + V->getNameAsString() +
                           "' (declared in the section, line " + lineOf(D) +
                           ") may be used after the section, where it would no longer exist "
                           "once the section is a function: " +
                           *Why;
            }
        }
    }

    // Its compound literals.
    struct Literals : RecursiveASTVisitor<Literals> {
        std::vector<const CompoundLiteralExpr *> Found;
        bool VisitCompoundLiteralExpr(CompoundLiteralExpr *E)
        {
            Found.push_back(E);
            return true;
        }
    } L;
    for (unsigned I = S.BodyFirst; I <= S.Last && I < S.Block->size(); ++I)
        L.TraverseStmt(const_cast<Stmt *>(S.Block->body_begin()[I]));
    for (const CompoundLiteralExpr *E : L.Found) {
        if (E->isFileScope() || !held(E) || diesInside(F, S, blockOf(F, E)))
            continue;
        Tracker T(F, S);
        if (std::optional<std::string> Why = T.lvalue(E))
            return "a compound literal (line " + lineOf(E) +
                   ") may be reached after the section, where it would no longer exist once the "
                   "section is a function: " +
                   *Why;
    }
    return std::nullopt;
}

} // namespace locktune
