#include "SectionFinder.h"

#include "clang/AST/Expr.h"
#include "clang/AST/Stmt.h"
#include "clang/Lex/Lexer.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

using namespace clang;

namespace locktune {

const LockOp *FunctionContext::op(const Stmt *S) const
{
    const auto *C = dyn_cast_or_null<CallExpr>(S);
    if (!C)
        return nullptr;
    auto It = Ops.find(C);
    return It == Ops.end() ? nullptr : &It->second;
}

bool Section::inHeld(unsigned Off) const
{
    if (!Body.contains(Off))
        return false;
    for (const Tail &T : Tails)
        if (T.Replace.contains(Off))
            return false;
    return true;
}

bool Section::ownUnlock(unsigned Off) const
{
    for (Span U : OwnUnlocks)
        if (U.contains(Off))
            return true;
    return false;
}

bool Section::inHeld(Span S) const
{
    if (!Body.contains(S))
        return false;
    for (const Tail &T : Tails)
        if (T.Replace.Begin < S.End && S.Begin < T.Replace.End)
            return false;
    return true;
}

const Binding *Section::binding(const VarDecl *V) const
{
    for (const Binding &B : Bindings)
        if (B.Var == V)
            return &B;
    return nullptr;
}

namespace {

// `{ stmt; }`, the way some lock macros are written (`#define LOCK(l)
// {pthread_mutex_lock(&(l));}`): stmt, the block's only statement besides empty ones.
const Stmt *soleStatement(const Stmt *S)
{
    const auto *C = dyn_cast_or_null<CompoundStmt>(S);
    if (!C)
        return nullptr;
    const Stmt *Only = nullptr;
    for (const Stmt *X : C->body()) {
        if (isa<NullStmt>(X))
            continue;
        if (Only)
            return nullptr;
        Only = X;
    }
    return Only;
}

// `do { stmt; } while (0)`, the way lock macros are written: stmt.
const Stmt *doWhileZero(const Stmt *S)
{
    const auto *D = dyn_cast_or_null<DoStmt>(S);
    if (!D)
        return nullptr;
    const auto *Zero = dyn_cast<IntegerLiteral>(D->getCond()->IgnoreParenImpCasts());
    if (!Zero || Zero->getValue() != 0)
        return nullptr;
    return soleStatement(D->getBody());
}

const CallExpr *asCall(const Stmt *S)
{
    if (const Stmt *Inner = doWhileZero(S))
        S = Inner;
    const auto *E = dyn_cast_or_null<Expr>(S);
    if (!E)
        return nullptr;
    E = E->IgnoreParenImpCasts();
    if (const auto *C = dyn_cast<CStyleCastExpr>(E))
        if (C->getType()->isVoidType())
            E = C->getSubExpr()->IgnoreParenImpCasts();
    return dyn_cast<CallExpr>(E);
}

// True when S leaves for sure, by its form alone: return, goto, break, continue, a call that
// does not return (abort(), exit(), __builtin_unreachable()), or a block that ends with one;
// also a `do { ... } while (0)` block that ends with one of these but break or continue
// (which would leave only the do: a panic macro, `do { handler(...); __builtin_unreachable();
// } while (0)`).
static bool leavesByForm(const Stmt *S, bool LoopJumps)
{
    if (!S)
        return false;
    if (isa<ReturnStmt>(S) || isa<GotoStmt>(S))
        return true;
    if (isa<BreakStmt>(S) || isa<ContinueStmt>(S))
        return LoopJumps;
    if (const CallExpr *C = asCall(S)) {
        const FunctionDecl *Callee = C->getDirectCallee();
        return Callee && Callee->isNoReturn();
    }
    if (const auto *C = dyn_cast<CompoundStmt>(S)) {
        for (auto It = C->body_rbegin(); It != C->body_rend(); ++It)
            if (!isa<NullStmt>(*It))
                return leavesByForm(*It, LoopJumps);
    }
    if (const auto *D = dyn_cast<DoStmt>(S)) {
        const auto *Zero = dyn_cast<IntegerLiteral>(D->getCond()->IgnoreParenImpCasts());
        return Zero && Zero->getValue() == 0 && leavesByForm(D->getBody(), false);
    }
    return false;
}

bool leavesByForm(const Stmt *S)
{
    return leavesByForm(S, true);
}

// `if (CALL != 0) FAIL;`, `if (CALL) FAIL;` (or `0 != CALL`), with no else and a FAIL that
// always leaves: CALL.  The way a lock or unlock whose result is checked is written.  CALL
// may be negated twice: `if (!LOCK_(m)) FAIL;` where LOCK_(m) is `(!(pthread_mutex_lock(m)))`,
// a success flag (libmicrohttpd's mhd_locks.h writes its checked lock macros so).
const CallExpr *checkedCall(const Stmt *S)
{
    const auto *I = dyn_cast_or_null<IfStmt>(S);
    if (!I || I->getElse() || I->hasInitStorage() || I->hasVarStorage() ||
        !leavesByForm(I->getThen()))
        return nullptr;
    auto lnot = [](const Expr *X) -> const Expr * {
        const auto *U = dyn_cast<UnaryOperator>(X);
        return U && U->getOpcode() == UO_LNot ? U->getSubExpr()->IgnoreParenImpCasts() : nullptr;
    };
    const Expr *E = I->getCond()->IgnoreParenImpCasts();
    if (const Expr *Once = lnot(E))
        if (const Expr *Twice = lnot(Once))
            E = Twice;
    if (const auto *B = dyn_cast<BinaryOperator>(E); B && B->getOpcode() == BO_NE) {
        auto zero = [](const Expr *X) {
            const auto *L = dyn_cast<IntegerLiteral>(X->IgnoreParenImpCasts());
            return L && L->getValue() == 0;
        };
        if (zero(B->getRHS()))
            E = B->getLHS()->IgnoreParenImpCasts();
        else if (zero(B->getLHS()))
            E = B->getRHS()->IgnoreParenImpCasts();
        else
            return nullptr;
    }
    return dyn_cast<CallExpr>(E);
}

// The lock operation statement S is, through the ways lock macros wrap a call: `do { ... }
// while (0)`, `{ ... }`, and a check of its result (checkedCall).
const CallExpr *lockCallOf(const FunctionContext &F, const Stmt *S)
{
    while (true) {
        if (const Stmt *Inner = doWhileZero(S))
            S = Inner;
        else if (const Stmt *Only = soleStatement(S))
            S = Only;
        else
            break;
    }
    if (const CallExpr *C = checkedCall(S)) {
        const LockOp *Op = F.op(C);
        return Op && Op->Kind != OpKind::Trylock ? C : nullptr;
    }
    return asCall(S);
}

const Stmt *stripLabels(const Stmt *S)
{
    while (true) {
        if (const auto *L = dyn_cast<LabelStmt>(S))
            S = L->getSubStmt();
        else if (const auto *A = dyn_cast<AttributedStmt>(S))
            S = A->getSubStmt();
        else
            return S;
    }
}

std::string lineOf(const FunctionContext &F, const Stmt *S)
{
    std::optional<unsigned> Off = stmtOffset(F.Src, S);
    return Off ? std::to_string(F.Src.line(*Off)) : "?";
}

// The unlock call of the given lock that statement S is, if it is one.
const CallExpr *unlockOf(const FunctionContext &F, const Stmt *S, const std::string &Identity)
{
    const CallExpr *C = lockCallOf(F, stripLabels(S));
    const LockOp *Op = F.op(C);
    if (Op && Op->Kind == OpKind::Unlock && Op->Identity == Identity)
        return C;
    return nullptr;
}

bool isRelockOf(const FunctionContext &F, const Stmt *S, const std::string &Identity)
{
    const CallExpr *C = lockCallOf(F, stripLabels(S));
    const LockOp *Op = F.op(C);
    return Op && Op->Kind != OpKind::Unlock && Op->Identity == Identity;
}

// Unlocks of the lock that are the last thing S does on some path (ending S normally).
void tailPositionUnlocks(const FunctionContext &F, const Stmt *S, const std::string &Identity,
                         std::vector<const CallExpr *> &Out)
{
    if (!S)
        return;
    S = stripLabels(S);
    if (const CallExpr *U = unlockOf(F, S, Identity)) {
        Out.push_back(U);
        return;
    }
    if (const auto *C = dyn_cast<CompoundStmt>(S)) {
        for (auto It = C->body_rbegin(); It != C->body_rend(); ++It)
            if (!isa<NullStmt>(*It)) {
                tailPositionUnlocks(F, *It, Identity, Out);
                break;
            }
        return;
    }
    if (const auto *I = dyn_cast<IfStmt>(S)) {
        tailPositionUnlocks(F, I->getThen(), Identity, Out);
        tailPositionUnlocks(F, I->getElse(), Identity, Out);
    }
}

// The loop (continue) or loop/switch (break) a jump belongs to.
const Stmt *jumpTarget(const FunctionContext &F, const Stmt *Jump)
{
    bool IsBreak = isa<BreakStmt>(Jump);
    for (const Stmt *P = F.PM->getParent(Jump); P; P = F.PM->getParent(P)) {
        if (isa<WhileStmt>(P) || isa<DoStmt>(P) || isa<ForStmt>(P))
            return P;
        if (IsBreak && isa<SwitchStmt>(P))
            return P;
    }
    return nullptr;
}

bool outside(const FunctionContext &F, const Stmt *Target, Span Whole)
{
    std::optional<unsigned> Off = Target ? stmtOffset(F.Src, Target) : std::nullopt;
    return Off && !Whole.contains(*Off);
}

// Every jump inside the tail lands in the tail itself or outside the section.
std::optional<std::string> tailJumps(const FunctionContext &F, const Stmt *S, Span Tail, Span Whole)
{
    if (!S)
        return std::nullopt;
    auto landsWell = [&](const Stmt *Target) {
        std::optional<unsigned> Off = Target ? stmtOffset(F.Src, Target) : std::nullopt;
        return Off && (Tail.contains(*Off) || !Whole.contains(*Off));
    };
    if (isa<LabelStmt>(S))
        return "the code after the unlock at line " + lineOf(F, S) + " has a label";
    if (const auto *C = dyn_cast<SwitchCase>(S)) {
        (void)C;
        return "the code after the unlock has a case label at line " + lineOf(F, S);
    }
    if (isa<IndirectGotoStmt>(S))
        return "computed goto at line " + lineOf(F, S);
    if (const auto *G = dyn_cast<GotoStmt>(S)) {
        if (!landsWell(G->getLabel()->getStmt()))
            return "the goto at line " + lineOf(F, S) + " jumps back into the section";
    } else if (isa<BreakStmt>(S) || isa<ContinueStmt>(S)) {
        if (!landsWell(jumpTarget(F, S)))
            return std::string("the ") + (isa<BreakStmt>(S) ? "break" : "continue") + " at line " +
                   lineOf(F, S) + " stays in the section";
    }
    for (const Stmt *Child : S->children())
        if (std::optional<std::string> R = tailJumps(F, Child, Tail, Whole))
            return R;
    return std::nullopt;
}

struct Attempt {
    bool Ok = false;
    bool Beyond = false; // the lock reaches past the candidate end: a later end may do
    std::string Reason;
};

// True when X is the last thing End does on its path: X is End, or the last statement of a
// block, or a branch of an if, that is itself in tail position.
bool inTailPosition(const FunctionContext &F, const Stmt *X, const Stmt *End)
{
    while (X != End) {
        const Stmt *P = F.PM->getParent(X);
        if (!P)
            return false;
        if (const auto *C = dyn_cast<CompoundStmt>(P)) {
            const Stmt *Last = nullptr;
            for (const Stmt *K : C->body())
                if (!isa<NullStmt>(K))
                    Last = K;
            if (Last != X)
                return false;
        } else if (const auto *I = dyn_cast<IfStmt>(P)) {
            if (I->getThen() != X && I->getElse() != X)
                return false;
        } else if (!isa<LabelStmt>(P) && !isa<AttributedStmt>(P)) {
            return false;
        }
        X = P;
    }
    return true;
}

// EndSt: the section's final statement when it is not a plain unlock (code after an unlock
// in one of its branches may then fall through to the section's end).
std::optional<Tail> makeTail(FunctionContext &F, const CallExpr *U, Span Whole, const Stmt *EndSt,
                             std::string &Why)
{
    const Stmt *E = callStatement(F, U);
    if (!E) {
        Why = "the result of the unlock at line " + lineOf(F, U) + " is used";
        return std::nullopt;
    }
    const Stmt *Top = E, *P = F.PM->getParent(E);
    while (P && (isa<LabelStmt>(P) || isa<AttributedStmt>(P))) {
        Top = P;
        P = F.PM->getParent(P);
    }
    const auto *C = dyn_cast_or_null<CompoundStmt>(P);
    if (!C) {
        Why = "the unlock at line " + lineOf(F, U) + " is not followed by a way out of the section";
        return std::nullopt;
    }
    std::vector<const Stmt *> Kids(C->body_begin(), C->body_end());
    auto At = std::find(Kids.begin(), Kids.end(), Top);
    size_t M = size_t(At - Kids.begin());
    Tail T;
    for (size_t R = M + 1; R < Kids.size(); ++R) {
        if (isa<LabelStmt>(Kids[R]) || isa<SwitchCase>(Kids[R])) {
            Why = "the code after the unlock at line " + lineOf(F, U) + " has a label";
            return std::nullopt;
        }
        T.Stmts.push_back(Kids[R]);
        if (alwaysLeaves(F, Kids[R], Whole))
            break;
    }
    if (T.Stmts.empty() || !alwaysLeaves(F, T.Stmts.back(), Whole)) {
        // Code that runs after the unlock and then reaches the end of the section (the last
        // thing a branch of the section's final statement does) is replayed at the call
        // site too, before the code after the section.
        bool FallsThrough = !T.Stmts.empty() && EndSt && inTailPosition(F, C, EndSt);
        if (!FallsThrough) {
            Why = "the unlock at line " + lineOf(F, U) +
                  " is followed by code that stays in the section (no return, break, continue or "
                  "goto out of it)";
            return std::nullopt;
        }
        T.FallsThrough = true;
    }
    std::optional<Span> US = statementSpan(F, E), LS = statementSpan(F, T.Stmts.back());
    std::optional<Span> FS = statementSpan(F, T.Stmts.front());
    if (!US || !LS || !FS) {
        Why = "the early exit at line " + lineOf(F, U) + " is written inside a macro";
        return std::nullopt;
    }
    T.Unlock = U;
    T.UnlockStmt = E;
    // A comment after the last statement, on its line, goes with it.
    unsigned End = LS->End;
    StringRef Rest = F.Src.buffer().substr(End);
    StringRef Line = Rest.take_until([](char C) { return C == '\n'; });
    StringRef Trimmed = Line.ltrim();
    if ((Trimmed.startswith("/*") && Trimmed.rtrim().endswith("*/") &&
         Trimmed.find("*/") == Trimmed.rtrim().size() - 2) ||
        Trimmed.startswith("//"))
        End += unsigned(Line.rtrim().size());
    T.Replace = Span{US->Begin, End};
    T.Code_ = Span{US->End, End};
    for (const Stmt *S : T.Stmts)
        if (std::optional<std::string> R = tailJumps(F, S, T.Code_, Whole)) {
            Why = *R;
            return std::nullopt;
        }
    std::optional<CfgPos> Pos = F.Cfg->find(U);
    if (!Pos) {
        Why = "the unlock at line " + lineOf(F, U) + " is unreachable";
        return std::nullopt;
    }
    T.Exit = *Pos;
    return T;
}

// A statement alone on its line(s) between an `#if` line (not continued) and an `#endif` line:
// that #if line, blanks collapsed, with the offsets where the #if line starts and where the
// line after the #endif starts.
struct GuardLines {
    std::string If;
    unsigned IfBegin = 0, AfterEndif = 0;
};

static std::optional<GuardLines> guardOf(const FunctionContext &F, Span St)
{
    StringRef Buf = F.Src.buffer();
    auto blank = [](StringRef X) { return X.find_first_not_of(" \t\r") == StringRef::npos; };
    auto directive = [](StringRef Line) -> StringRef {
        Line = Line.trim();
        if (!Line.consume_front("#"))
            return "";
        return Line.ltrim();
    };
    unsigned LineBegin = F.Src.lineStart(St.Begin);
    size_t LineEnd = Buf.find('\n', St.End);
    if (LineBegin == 0 || LineEnd == StringRef::npos || !blank(Buf.slice(LineBegin, St.Begin)) ||
        !blank(Buf.slice(St.End, LineEnd)))
        return std::nullopt;
    unsigned IfBegin = F.Src.lineStart(LineBegin - 1);
    StringRef IfLine = Buf.slice(IfBegin, LineBegin - 1);
    StringRef IfDir = directive(IfLine);
    if (!(IfDir.startswith("if ") || IfDir.startswith("if(") || IfDir.startswith("ifdef ") ||
          IfDir.startswith("ifndef ")) ||
        IfLine.rtrim().endswith("\\"))
        return std::nullopt;
    size_t EndifEnd = Buf.find('\n', LineEnd + 1);
    if (EndifEnd == StringRef::npos)
        return std::nullopt;
    StringRef EndifDir = directive(Buf.slice(LineEnd + 1, EndifEnd));
    if (EndifDir != "endif" && !EndifDir.startswith("endif ") && !EndifDir.startswith("endif/"))
        return std::nullopt;
    GuardLines G;
    for (StringRef Rest = IfLine.trim(); !Rest.empty();) {
        auto [Word, Tail] = Rest.split(' ');
        if (!Word.empty())
            G.If += (G.If.empty() ? "" : " ") + Word.str();
        Rest = Tail.ltrim();
    }
    G.IfBegin = IfBegin;
    G.AfterEndif = unsigned(EndifEnd + 1);
    return G;
}

// LockSpan: the lock statement (empty for a trylock's success branch); Start: where the
// lock is first held, in the CFG.
Attempt tryEnd(FunctionContext &F, Section &S, Span LockSpan, const std::vector<CfgPos> &Start,
               size_t K)
{
    Attempt A;
    const Stmt *EndSt = S.Block->body_begin()[K];
    std::optional<Span> EndSpan = statementSpan(F, EndSt);
    if (!EndSpan) {
        A.Reason = "the section's end (line " + lineOf(F, EndSt) + ") is written inside a macro";
        return A;
    }
    const std::string &Id = S.Lock.Identity;
    S.Whole = Span{LockSpan.Begin, EndSpan->End};
    std::vector<const CallExpr *> Finals;
    if (const CallExpr *U = unlockOf(F, EndSt, Id)) {
        S.EndIsUnlock = true;
        Finals.push_back(U);
        S.Body = Span{LockSpan.End, EndSpan->Begin};
        S.Guard.clear();
        if (LockSpan.Begin < LockSpan.End && S.Lock.Kind == OpKind::Lock)
            if (std::optional<GuardLines> G1 = guardOf(F, LockSpan))
                if (std::optional<GuardLines> G2 = guardOf(F, *EndSpan);
                    G2 && G2->If == G1->If && G1->AfterEndif < G2->IfBegin) {
                    S.Guard = G1->If;
                    S.Body = Span{G1->AfterEndif, G2->IfBegin - 1};
                }
        S.EndLabels.clear();
        for (const Stmt *L = EndSt; isa<LabelStmt>(L); L = cast<LabelStmt>(L)->getSubStmt())
            S.EndLabels.push_back(cast<LabelStmt>(L));
    } else {
        S.EndIsUnlock = false;
        tailPositionUnlocks(F, EndSt, Id, Finals);
        S.Body = Span{LockSpan.End, EndSpan->End};
    }
    S.Last = unsigned(K);

    HeldWalk W(*F.Cfg, F.Src, S.Lock.Written);
    Span Whole = S.Whole;
    WalkResult R = W.forward(
        Start,
        [&](const Stmt *X) {
            const LockOp *Op = F.op(X);
            return Op && Op->Kind == OpKind::Unlock && Op->Identity == Id;
        },
        [&](const Stmt *X) {
            const LockOp *Op = F.op(X);
            return Op && Op->Kind != OpKind::Unlock && Op->Identity == Id;
        },
        [&](unsigned Off) { return Whole.contains(Off); });
    if (R.Escape) {
        A.Reason = *R.Escape;
        A.Beyond = R.EscapeOffset >= Whole.End;
        return A;
    }
    // Every unlock of this lock written in the section: an end, or an early exit.
    S.Tails.clear();
    S.Ends.clear();
    S.EndLines.clear();
    S.Unlocks.clear();
    S.OwnUnlocks.clear();
    for (const CallExpr *U : F.OpOrder) {
        const LockOp &Op = F.Ops.at(U);
        if (Op.Kind != OpKind::Unlock || Op.Identity != Id)
            continue;
        std::optional<unsigned> Off = stmtOffset(F.Src, U);
        if (!Off || !Whole.contains(*Off))
            continue;
        S.EndLines.push_back(F.Src.line(*Off));
        if (std::find(Finals.begin(), Finals.end(), U) != Finals.end()) {
            NormalEnd E;
            E.Unlock = U;
            E.UnlockStmt = callStatement(F, U);
            E.Final = S.EndIsUnlock;
            std::optional<CfgPos> P = F.Cfg->find(U);
            if (!P || !E.UnlockStmt) {
                if (!E.UnlockStmt) {
                    A.Reason = "the result of the unlock at line " + lineOf(F, U) + " is used";
                    return A;
                }
                continue; // unreachable unlock: nothing to keep alive after it
            }
            E.Exit = *P;
            S.Ends.push_back(E);
            S.Unlocks.push_back(U);
            if (std::optional<Span> Sp = statementSpan(F, E.UnlockStmt))
                S.OwnUnlocks.push_back(*Sp);
            continue;
        }
        std::string Why;
        std::optional<Tail> T = makeTail(F, U, Whole, S.EndIsUnlock ? nullptr : EndSt, Why);
        if (!T) {
            A.Reason = Why;
            return A;
        }
        T->Code = unsigned(S.Tails.size() + 1);
        S.OwnUnlocks.push_back(Span{T->Replace.Begin, T->Code_.Begin});
        S.Tails.push_back(*T);
        S.Unlocks.push_back(U);
    }
    for (unsigned Off : R.Visited)
        for (const Tail &T : S.Tails)
            if (T.Code_.contains(Off)) {
                A.Reason = "the code after the unlock at line " + lineOf(F, T.Unlock) +
                           " is also reached with the lock held";
                return A;
            }
    A.Ok = true;
    return A;
}

// Why a lock call opens no block-structured section: what the lock does after it.
std::string diagnose(FunctionContext &F, Section &S)
{
    const std::string &Id = S.Lock.Identity;
    bool AnyUnlock = false;
    for (const CallExpr *U : F.OpOrder) {
        const LockOp &Op = F.Ops.at(U);
        AnyUnlock |= Op.Kind == OpKind::Unlock && Op.Identity == Id;
    }
    std::optional<CfgPos> Start = F.Cfg->find(S.Lock.Call);
    if (!Start)
        return "the lock call is unreachable";
    HeldWalk W(*F.Cfg, F.Src, S.Lock.Written);
    WalkResult R = W.forward(
        {CfgPos{Start->Block, Start->Index + 1}},
        [&](const Stmt *X) {
            const LockOp *Op = F.op(X);
            return Op && Op->Kind == OpKind::Unlock && Op->Identity == Id;
        },
        [&](const Stmt *X) {
            const LockOp *Op = F.op(X);
            return Op && Op->Kind != OpKind::Unlock && Op->Identity == Id;
        },
        [](unsigned) { return true; }, /*KeepGoing=*/true);
    S.Unlocks.clear();
    for (const Stmt *U : R.Stops) {
        S.Unlocks.push_back(cast<CallExpr>(U));
        if (std::optional<unsigned> Off = stmtOffset(F.Src, U))
            S.EndLines.push_back(F.Src.line(*Off));
    }
    std::sort(S.EndLines.begin(), S.EndLines.end());
    S.EndLines.erase(std::unique(S.EndLines.begin(), S.EndLines.end()), S.EndLines.end());
    std::string Fn = F.Fn->getNameAsString() + "()";
    if (!AnyUnlock) {
        // An unlock of the same kind of lock written another way (zstd: taken as
        // `&jobPtr->job_mutex`, released as `&mtctx->jobs[wJobID].job_mutex`): the section
        // may well end here, but that the two name one lock is not proven.
        for (const CallExpr *U : F.OpOrder) {
            const LockOp &Op = F.Ops.at(U);
            if (Op.Kind == OpKind::Unlock && Op.Key != "unknown" && Op.Key == S.Lock.Key)
                return "the unlock at line " + lineOf(F, U) + " writes the lock as " + Op.Written +
                       ", not proven to be the lock " + S.Lock.Written + " taken here";
        }
        return "no unlock of " + S.Lock.Written + " in " + Fn +
               ": the critical section ends in another function";
    }
    if (R.Escape)
        return *R.Escape;
    // A lock dropped and taken again (around a sleep, in a background thread's loop).
    if (const auto *Block = dyn_cast_or_null<CompoundStmt>(F.PM->getParent(
            callStatement(F, S.Lock.Call) ? callStatement(F, S.Lock.Call) : S.Lock.Call)))
        for (const Stmt *X : Block->body()) {
            if (X == callStatement(F, S.Lock.Call))
                break;
            if (unlockOf(F, X, Id))
                return S.Lock.Written + " is released at line " + lineOf(F, X) +
                       " and taken again at line " + lineOf(F, S.Lock.Call) +
                       ": the region it then holds does not close a block";
        }
    return "the unlocks of " + S.Lock.Written +
           " do not close a block: the code after an unlock in a nested block continues in "
           "the section";
}

// Tries each later statement of the block that could end the section, in order.
void searchEnd(FunctionContext &F, Section &S, Span StartSpan, const std::vector<CfgPos> &Start)
{
    const std::string &Id = S.Lock.Identity;
    std::vector<const Stmt *> Kids(S.Block->body_begin(), S.Block->body_end());
    std::string FirstFailure;
    for (size_t K = S.BodyFirst; K < Kids.size(); ++K) {
        const Stmt *St = Kids[K];
        if (isa<SwitchCase>(St))
            break; // control may enter here from the switch, without the lock
        if (isRelockOf(F, St, Id))
            break;
        std::vector<const CallExpr *> Finals;
        if (!unlockOf(F, St, Id))
            tailPositionUnlocks(F, St, Id, Finals);
        if (!unlockOf(F, St, Id) && Finals.empty())
            continue;
        Attempt A = tryEnd(F, S, StartSpan, Start, K);
        if (A.Ok) {
            S.Structured = true;
            std::sort(S.EndLines.begin(), S.EndLines.end());
            return;
        }
        if (FirstFailure.empty())
            FirstFailure = A.Reason;
        if (!A.Beyond) {
            S.Reason = A.Reason;
            S.Tails.clear();
            S.Ends.clear();
            S.Whole = S.Body = Span{};
            diagnose(F, S);
            return;
        }
    }
    S.Tails.clear();
    S.Ends.clear();
    S.Whole = S.Body = Span{};
    S.EndLines.clear();
    std::string D = diagnose(F, S);
    S.Reason = FirstFailure.empty() ? D : FirstFailure;
}

// A trylock tested in an if, whose success branch (or the code after the if, when the
// failure branch leaves) is a block-structured section: lt_execute_trylock runs it.
bool trylockSection(FunctionContext &F, Section &S)
{
    const CallExpr *Call = S.Lock.Call;
    if (!Call->getDirectCallee()->getName().contains("trylock"))
        return false; // a timed lock has no lt_execute counterpart
    std::optional<TrylockTest> T = trylockTest(Call, *F.PM);
    if (!T) {
        S.Reason = "its result is not tested in an if";
        // A trylock wrapper (libuv's uv_mutex_trylock): the caller releases the lock.
        bool Unlocked = false;
        for (const CallExpr *U : F.OpOrder) {
            const LockOp &Op = F.Ops.at(U);
            Unlocked |= Op.Kind == OpKind::Unlock && Op.Identity == S.Lock.Identity;
        }
        if (!Unlocked)
            S.Reason = "no unlock of " + S.Lock.Written + " in " + F.Fn->getNameAsString() +
                       "(): the critical section ends in another function";
        return false;
    }
    const auto *Outer = dyn_cast_or_null<CompoundStmt>(F.PM->getParent(T->If));
    std::optional<Span> Call_ = F.Src.span(Call->getSourceRange());
    std::optional<Span> IfSpan = F.Src.stmtSpan(T->If);
    std::optional<std::vector<CfgPos>> Start = trylockSuccess(*F.Cfg, Call, *F.PM);
    if (!Outer || !Call_ || !IfSpan || !Start) {
        S.Reason = "its if is not a statement of a block";
        return false;
    }
    const Stmt *Success = T->SuccessWhenTrue ? T->If->getThen() : T->If->getElse();
    Span StartSpan;
    if (const auto *C = dyn_cast_or_null<CompoundStmt>(Success)) {
        // if (trylock(m) == 0) { ...; unlock(m); }
        std::optional<unsigned> Open = F.Src.offset(C->getLBracLoc());
        if (!Open || C->body_empty())
            return false;
        S.Block = C;
        S.BodyFirst = 0;
        StartSpan = Span{*Open + 1, *Open + 1};
        std::optional<unsigned> FirstAt = F.Src.offset(C->body_front()->getBeginLoc());
        S.Indent = FirstAt ? F.Src.indentOf(*FirstAt) : F.Src.indentOf(IfSpan->Begin) + "    ";
    } else if (!Success && !T->SuccessWhenTrue &&
               alwaysLeaves(F, T->If->getThen(), Span{IfSpan->End, IfSpan->End})) {
        // if (trylock(m) != 0) return busy; ...; unlock(m);
        std::vector<const Stmt *> Kids(Outer->body_begin(), Outer->body_end());
        S.Block = Outer;
        S.First = unsigned(std::find(Kids.begin(), Kids.end(), T->If) - Kids.begin());
        S.BodyFirst = S.First + 1;
        StartSpan = Span{IfSpan->End, IfSpan->End};
        S.Indent = F.Src.indentOf(IfSpan->Begin);
    } else {
        S.Reason = "its success branch is not a block";
        return false;
    }
    S.Reason.clear();
    searchEnd(F, S, StartSpan, *Start);
    if (!S.Structured)
        return false;
    S.Trylock = true;
    S.TryIf = T->If;
    S.TryCall = *Call_;
    S.LockStmt = T->If;
    return true;
}

// Runs the headers of a for-statement lock macro: integer variables declared in the inits,
// constants, !, comparisons, &&, ||, ?:, the comma, assignments to those variables, and calls
// of the lock's own operations (kept in Events, in order).  Anything else: Bad.
struct HeaderRun {
    const FunctionContext &F;
    std::string Id;
    std::map<const VarDecl *, long long> Vars;
    std::vector<const CallExpr *> Events;
    bool Bad = false;

    HeaderRun(const FunctionContext &F, std::string Id) : F(F), Id(std::move(Id)) {}

    // A value (nullopt with Bad set when there is none).
    std::optional<long long> value(const Expr *E)
    {
        std::optional<long long> V = eval(E);
        if (!V)
            Bad = true;
        return V;
    }
    // nullopt without Bad: a lock operation, run for its effect only.
    std::optional<long long> eval(const Expr *E)
    {
        if (Bad || !E) {
            Bad = true;
            return std::nullopt;
        }
        E = E->IgnoreParenImpCasts();
        if (const auto *C = dyn_cast<CStyleCastExpr>(E))
            return eval(C->getSubExpr());
        if (const auto *L = dyn_cast<IntegerLiteral>(E))
            return (long long)L->getValue().getLimitedValue();
        if (const auto *D = dyn_cast<DeclRefExpr>(E)) {
            auto It = Vars.find(dyn_cast<VarDecl>(D->getDecl()));
            if (It == Vars.end()) {
                Bad = true;
                return std::nullopt;
            }
            return It->second;
        }
        if (const auto *C = dyn_cast<CallExpr>(E)) {
            const LockOp *Op = F.op(C);
            if (!Op || Op->Kind == OpKind::Trylock || Op->Identity != Id) {
                Bad = true;
                return std::nullopt;
            }
            Events.push_back(C);
            return std::nullopt;
        }
        if (const auto *U = dyn_cast<UnaryOperator>(E)) {
            if (U->getOpcode() != UO_LNot) {
                Bad = true;
                return std::nullopt;
            }
            std::optional<long long> V = value(U->getSubExpr());
            return V ? std::optional<long long>(!*V) : std::nullopt;
        }
        if (const auto *C = dyn_cast<ConditionalOperator>(E)) {
            std::optional<long long> V = value(C->getCond());
            if (!V)
                return std::nullopt;
            return eval(*V ? C->getTrueExpr() : C->getFalseExpr());
        }
        const auto *B = dyn_cast<BinaryOperator>(E);
        if (!B) {
            Bad = true;
            return std::nullopt;
        }
        BinaryOperatorKind K = B->getOpcode();
        if (K == BO_Comma) {
            eval(B->getLHS());
            return Bad ? std::nullopt : eval(B->getRHS());
        }
        if (K == BO_Assign) {
            const auto *D = dyn_cast<DeclRefExpr>(B->getLHS()->IgnoreParenImpCasts());
            const auto *V = D ? dyn_cast<VarDecl>(D->getDecl()) : nullptr;
            if (!V || !Vars.count(V)) {
                Bad = true;
                return std::nullopt;
            }
            std::optional<long long> X = value(B->getRHS());
            if (X)
                Vars[V] = *X;
            return X;
        }
        if (K == BO_LAnd || K == BO_LOr) {
            std::optional<long long> L = value(B->getLHS());
            if (!L)
                return std::nullopt;
            if ((K == BO_LAnd) != (*L != 0))
                return K == BO_LOr ? 1 : 0;
            std::optional<long long> R = value(B->getRHS());
            return R ? std::optional<long long>(*R != 0) : std::nullopt;
        }
        std::optional<long long> L = value(B->getLHS()), R = value(B->getRHS());
        if (!L || !R)
            return std::nullopt;
        switch (K) {
        case BO_EQ:
            return *L == *R;
        case BO_NE:
            return *L != *R;
        case BO_LT:
            return *L < *R;
        case BO_GT:
            return *L > *R;
        case BO_LE:
            return *L <= *R;
        case BO_GE:
            return *L >= *R;
        default:
            Bad = true;
            return std::nullopt;
        }
    }
    bool init(const ForStmt *L)
    {
        if (L->getConditionVariable())
            return false;
        const Stmt *S = L->getInit();
        if (!S)
            return true;
        const auto *D = dyn_cast<DeclStmt>(S);
        if (!D)
            return false; // variables of the function: the rewrite would drop their changes
        for (const Decl *X : D->decls()) {
            const auto *V = dyn_cast<VarDecl>(X);
            if (!V || !V->getInit() || !V->getType()->isIntegerType() || V->isStaticLocal())
                return false;
            std::optional<long long> Val = value(V->getInit());
            if (!Val)
                return false;
            Vars[V] = *Val;
        }
        return true;
    }
    std::optional<bool> cond(const ForStmt *L)
    {
        if (!L->getCond())
            return true;
        std::optional<long long> V = value(L->getCond());
        return V ? std::optional<bool>(*V != 0) : std::nullopt;
    }
    std::optional<bool> next(const ForStmt *L)
    {
        if (L->getInc())
            eval(L->getInc());
        return Bad ? std::nullopt : cond(L);
    }
    bool events(OpKind K) const
    {
        return Events.size() == 1 &&
               (F.op(Events[0])->Kind == OpKind::Unlock) == (K == OpKind::Unlock);
    }
};

std::optional<ForLock> tryForLock(const FunctionContext &F, const ForStmt *O, const ForStmt *I,
                                  const std::string &Id)
{
    HeaderRun H(F, Id);
    if (!H.init(O) || H.cond(O) != std::optional<bool>(true))
        return std::nullopt;
    if (I && (!H.init(I) || H.cond(I) != std::optional<bool>(true)))
        return std::nullopt;
    if (!H.events(OpKind::Lock))
        return std::nullopt;
    ForLock FL;
    FL.Outer = O;
    FL.Inner = I;
    FL.Loop = I ? I : O;
    FL.Lock = H.Events[0];
    std::map<const VarDecl *, long long> Entered = H.Vars;
    // The body ends (or continues the loop): the headers unlock once and leave.
    H.Events.clear();
    if (I && H.next(I) != std::optional<bool>(false))
        return std::nullopt;
    if (H.next(O) != std::optional<bool>(false) || !H.events(OpKind::Unlock))
        return std::nullopt;
    FL.Unlock = H.Events[0];
    // A break out of the inner for: the outer one's step and condition.
    if (I) {
        H.Vars = Entered;
        H.Events.clear();
        FL.BreakUnlocks = H.next(O) == std::optional<bool>(false) && H.events(OpKind::Unlock) &&
                          H.Events[0] == FL.Unlock;
        H.Bad = false;
    }
    // The variables are the headers' own.
    std::optional<unsigned> B = F.Src.offset(FL.Loop->getBody()->getBeginLoc());
    std::optional<unsigned> E = F.Src.offset(FL.Loop->getBody()->getEndLoc());
    for (const VarRef &R : F.Facts.Refs)
        if (H.Vars.count(R.Var) && (!B || !E || (R.At >= *B && R.At <= *E)))
            return std::nullopt;
    return FL;
}

// The section of a for-statement lock macro: the loop's body, replaced with its lock header.
bool forLockSection(FunctionContext &F, Section &S, const ForLock &FL)
{
    const SourceManager &SM = F.Src.sm();
    auto keep = [&](std::string Why) {
        S.Reason = std::move(Why);
        S.Unlocks = {FL.Unlock};
        if (std::optional<unsigned> Off = stmtOffset(F.Src, FL.Unlock))
            S.EndLines = {F.Src.line(*Off)};
        return true;
    };
    std::string Where = "the for-statement lock macro at line " + lineOf(F, FL.Outer);
    const auto *Body = dyn_cast<CompoundStmt>(FL.Loop->getBody());
    if (!Body || Body->getLBracLoc().isMacroID() || Body->getRBracLoc().isMacroID())
        return keep("the body of " + Where + " is not a block written at the use site");
    std::optional<unsigned> Open = F.Src.offset(Body->getLBracLoc());
    std::optional<unsigned> Close = F.Src.offset(Body->getRBracLoc());
    CharSourceRange Head = SM.getExpansionRange(FL.Outer->getBeginLoc());
    CharSourceRange HeadEnd = SM.getExpansionRange(FL.Loop->getRParenLoc());
    std::optional<unsigned> Begin = F.Src.offset(Head.getBegin());
    std::optional<unsigned> HeadLast = F.Src.offset(HeadEnd.getEnd());
    if (!Open || !Close || !Begin || !HeadLast || *HeadLast >= *Open ||
        (FL.Outer->getBeginLoc().isMacroID() &&
         (Head.getBegin() != HeadEnd.getBegin() ||
          !Lexer::isAtStartOfMacroExpansion(FL.Outer->getBeginLoc(), SM, F.Src.langOpts()))))
        return keep("the header of " + Where + " is not one macro invocation before its body");
    const Stmt *P = F.PM->getParent(FL.Outer);
    while (P && (isa<LabelStmt>(P) || isa<AttributedStmt>(P) || isa<SwitchCase>(P)))
        P = F.PM->getParent(P);
    if (!P || !isa<CompoundStmt>(P))
        return keep(Where + " is the whole body of a loop or branch");
    // What leaves the body: break and continue of the macro's loop end the section (the
    // unlock runs after them); return and goto leave with the lock held.
    std::string Why;
    std::vector<const Stmt *> Exits;
    std::function<void(const Stmt *)> Walk = [&](const Stmt *X) {
        if (!X || !Why.empty())
            return;
        if (isa<ReturnStmt>(X)) {
            Why = "returns at line " + lineOf(F, X) + " from inside " + Where + " with " +
                  S.Lock.Written + " held (the macro unlocks only when its body ends)";
            return;
        }
        if (isa<IndirectGotoStmt>(X)) {
            Why = "computed goto at line " + lineOf(F, X) + " inside " + Where;
            return;
        }
        if (const auto *G = dyn_cast<GotoStmt>(X)) {
            std::optional<unsigned> L = stmtOffset(F.Src, G->getLabel()->getStmt());
            if (!L || *L <= *Open || *L >= *Close) {
                Why = "the goto at line " + lineOf(F, X) + " leaves " + Where + " with " +
                      S.Lock.Written + " held (the macro unlocks only when its body ends)";
                return;
            }
        }
        if (isa<BreakStmt>(X) || isa<ContinueStmt>(X)) {
            const Stmt *T = jumpTarget(F, X);
            if (T == FL.Loop || T == FL.Outer) {
                if (isa<BreakStmt>(X) && !(FL.BreakUnlocks && T == FL.Inner)) {
                    Why = "the break at line " + lineOf(F, X) + " leaves " + Where + " with " +
                          S.Lock.Written + " held (it skips the step that unlocks)";
                    return;
                }
                if (!statementSpan(F, X) || X->getBeginLoc().isMacroID()) {
                    Why = "the " + std::string(isa<BreakStmt>(X) ? "break" : "continue") +
                          " at line " + lineOf(F, X) + " that leaves " + Where +
                          " is written inside a macro";
                    return;
                }
                Exits.push_back(X);
            }
        }
        if (const LockOp *Op = F.op(X); Op && Op->Identity == S.Lock.Identity) {
            Why = "the body of " + Where + " takes or releases " + S.Lock.Written +
                  " itself (line " + lineOf(F, X) + ")";
            return;
        }
        for (const Stmt *C : X->children())
            Walk(C);
    };
    Walk(Body);
    if (!Why.empty())
        return keep(Why);
    std::optional<CfgPos> Exit = F.Cfg->find(FL.Unlock);
    if (!Exit)
        return keep("the unlock of " + Where + " is unreachable");
    S.ForLock = true;
    S.LockStmt = FL.Outer;
    S.Block = Body;
    S.First = S.BodyFirst = 0;
    S.Last = Body->size() ? unsigned(Body->size() - 1) : 0;
    S.Whole = Span{*Begin, *Close + 1};
    S.Body = Span{*Open + 1, *Close};
    S.Indent = F.Src.indentOf(*Begin);
    S.BodyIndent = S.Indent + "    ";
    if (!Body->body_empty())
        if (std::optional<unsigned> FirstAt = F.Src.offset(Body->body_front()->getBeginLoc()))
            S.BodyIndent = F.Src.indentOf(*FirstAt);
    NormalEnd E;
    E.Unlock = FL.Unlock;
    E.Exit = *Exit;
    E.Final = true;
    S.Ends = {E};
    S.Unlocks = {FL.Unlock};
    S.EndLines = {F.Src.line(*Close)};
    S.LoopExits = Exits;
    S.Structured = true;
    return true;
}

// --- sections written inside a statement macro ------------------------------------------------

// The spelling, in the definition of the macro whose expansion holds L, of L: through macro
// arguments (to the parameter) and nested macros (to their invocation in the definition).
SourceLocation inDefinition(const SourceManager &SM, SourceLocation L, SourceLocation DefBegin,
                            SourceLocation DefEnd, bool End)
{
    auto inDef = [&](SourceLocation X) {
        return SM.getFileID(X) == SM.getFileID(DefBegin) &&
               SM.getFileOffset(X) >= SM.getFileOffset(DefBegin) &&
               SM.getFileOffset(X) <= SM.getFileOffset(DefEnd);
    };
    for (unsigned Guard = 0; L.isMacroID() && Guard < 64; ++Guard) {
        SourceLocation Sp = SM.getSpellingLoc(L);
        if (!SM.isMacroArgExpansion(L) && inDef(Sp))
            return Sp;
        CharSourceRange R = SM.getImmediateExpansionRange(L);
        L = End ? R.getEnd() : R.getBegin();
    }
    return SourceLocation();
}

// Lines without the backslash-newlines of a definition, dedented.
std::string definitionLines(StringRef Text)
{
    std::vector<std::string> Lines;
    for (StringRef Rest = Text; !Rest.empty();) {
        auto [Line, Tail] = Rest.split('\n');
        Rest = Tail;
        Line = Line.rtrim();
        if (Line.endswith("\\"))
            Line = Line.drop_back().rtrim();
        Lines.push_back(Line.str());
    }
    size_t Common = std::string::npos;
    for (const std::string &L : Lines)
        if (!StringRef(L).trim().empty())
            Common = std::min(Common, L.find_first_not_of(" \t"));
    std::string Out;
    for (const std::string &L : Lines) {
        if (StringRef(L).trim().empty())
            continue;
        Out += L.substr(Common == std::string::npos ? 0 : Common) + "\n";
    }
    return Out;
}

// Replaces the parameters of a macro by its arguments, token by token; nullopt when the text
// stringizes or pastes.
std::optional<std::string>
substitute(StringRef Text, const std::map<std::string, std::string> &Args, const LangOptions &LO)
{
    std::string Buf = Text.str();
    Lexer L(SourceLocation(), LO, Buf.data(), Buf.data(), Buf.data() + Buf.size());
    L.SetCommentRetentionState(true);
    std::string Out;
    size_t At = 0;
    Token Tok;
    while (true) {
        L.LexFromRawLexer(Tok);
        if (Tok.is(tok::eof))
            break;
        size_t Off = size_t(L.getBufferLocation() - Buf.data()) - Tok.getLength();
        if (Tok.isOneOf(tok::hash, tok::hashhash, tok::hashat))
            return std::nullopt;
        if (Tok.is(tok::raw_identifier)) {
            auto It = Args.find(Tok.getRawIdentifier().str());
            if (It != Args.end()) {
                Out += Buf.substr(At, Off - At) + It->second;
                At = Off + Tok.getLength();
            }
        }
    }
    Out += Buf.substr(At);
    return Out;
}

// The invocation NAME(a, b) written at [Begin, End): its arguments, split at top-level commas.
std::optional<std::vector<std::string>> invocationArgs(StringRef Text)
{
    size_t Open = Text.find('(');
    if (Open == StringRef::npos || !Text.rtrim().endswith(")"))
        return std::nullopt;
    StringRef Inner = Text.rtrim().drop_back().substr(Open + 1);
    std::vector<std::string> Out;
    int Depth = 0;
    char Quote = 0;
    std::string Cur;
    for (size_t I = 0; I < Inner.size(); ++I) {
        char C = Inner[I];
        if (Quote) {
            Cur += C;
            if (C == '\\' && I + 1 < Inner.size())
                Cur += Inner[++I];
            else if (C == Quote)
                Quote = 0;
            continue;
        }
        if (C == '"' || C == '\'')
            Quote = C;
        else if (C == '(' || C == '[' || C == '{')
            ++Depth;
        else if (C == ')' || C == ']' || C == '}')
            --Depth;
        else if (C == ',' && Depth == 0) {
            Out.push_back(StringRef(Cur).trim().str());
            Cur.clear();
            continue;
        }
        Cur += C;
    }
    Out.push_back(StringRef(Cur).trim().str());
    return Out;
}

// A statement macro whose expansion is a block holding the section: `{ [code;] lock; code;
// unlock; [code;] }`, the invocation a whole statement written in the main file.  The section
// is extracted from the definition's text, its parameters replaced by the use's arguments;
// the call site (in braces) replaces the invocation.  False when the shape is not this one.
bool macroSection(FunctionContext &F, Section &S, const Stmt *LockSt, std::string &Why)
{
    const SourceManager &SM = F.Src.sm();
    const LangOptions &LO = F.Src.langOpts();
    const auto *Block = dyn_cast_or_null<CompoundStmt>(F.PM->getParent(LockSt));
    if (!Block || !Block->getLBracLoc().isMacroID() || !Block->getRBracLoc().isMacroID())
        return false;
    SourceLocation LB = Block->getLBracLoc(), RB = Block->getRBracLoc();
    // The statement the expansion is: the block, or `do { ... } while (0)` around it.
    const Stmt *Unit = Block;
    if (const auto *D = dyn_cast_or_null<DoStmt>(F.PM->getParent(Block));
        D && D->getBody() == Block && isa<IntegerLiteral>(D->getCond()->IgnoreParenImpCasts()) &&
        cast<IntegerLiteral>(D->getCond()->IgnoreParenImpCasts())->getValue() == 0) {
        Unit = D;
        LB = D->getBeginLoc();
        RB = D->getEndLoc();
    }
    if (!LB.isMacroID() || !RB.isMacroID() || !Lexer::isAtStartOfMacroExpansion(LB, SM, LO) ||
        !Lexer::isAtEndOfMacroExpansion(RB, SM, LO))
        return false;
    CharSourceRange EB = SM.getExpansionRange(LB), EE = SM.getExpansionRange(RB);
    if (EB.getBegin() != EE.getBegin())
        return false;
    // The braces come from the macro's own definition (not from one of its arguments).
    if (SM.isMacroArgExpansion(LB) || SM.isMacroArgExpansion(RB) ||
        SM.getImmediateExpansionRange(LB).getBegin() != EB.getBegin())
        return false;
    std::optional<unsigned> Begin = F.Src.offset(EB.getBegin()), Last = F.Src.offset(EE.getEnd());
    if (!Begin || !Last)
        return false;
    unsigned End = *Last + Lexer::MeasureTokenLength(EE.getEnd(), SM, LO);
    const Stmt *Holder = F.PM->getParent(Unit);
    // Under a label the call site's declarations need a block of their own too.
    bool InBlock = isa_and_nonnull<CompoundStmt>(Holder);
    unsigned From = *Begin;
    if (!InBlock) {
        // `if (x) MACRO(...);`: the call site's block opens on the if's line.
        size_t Prev = F.Src.buffer().take_front(From).find_last_not_of(" \t\r\n");
        if (Prev != StringRef::npos)
            From = unsigned(Prev + 1);
    }
    {
        // `MACRO(...);`: the ';' goes with it (the call site takes the place of both).
        StringRef Rest = F.Src.buffer().substr(End);
        size_t Skip = Rest.find_first_not_of(" \t");
        if (Skip != StringRef::npos && Rest[Skip] == ';')
            End += unsigned(Skip + 1);
    }
    std::string Name = Lexer::getImmediateMacroName(LB, SM, LO).str();
    SourceLocation DefBegin = SM.getSpellingLoc(LB), DefEnd = SM.getSpellingLoc(RB);
    if (SM.getFileID(DefBegin) != SM.getFileID(DefEnd))
        return false;
    Why = "the section is written inside the macro " + Name;
    // Its parameters: the #define's logical line.
    StringRef File = SM.getBufferData(SM.getFileID(DefBegin));
    size_t At = SM.getFileOffset(DefBegin);
    size_t LineStart = File.rfind('\n', At);
    while (LineStart != StringRef::npos && LineStart > 0) {
        StringRef Prev = File.substr(0, LineStart).rtrim(" \t\r");
        if (!Prev.endswith("\\"))
            break;
        LineStart = File.rfind('\n', LineStart - 1);
    }
    LineStart = LineStart == StringRef::npos ? 0 : LineStart + 1;
    StringRef Head = File.substr(LineStart, At - LineStart).ltrim();
    if (!Head.consume_front("#"))
        return false;
    Head = Head.ltrim();
    if (!Head.consume_front("define"))
        return false;
    Head = Head.ltrim();
    if (!Head.consume_front(Name) || !Head.consume_front("("))
        return false;
    size_t Close = Head.find(')');
    if (Close == StringRef::npos) {
        Why += " (its definition could not be read)";
        return true;
    }
    std::vector<std::string> Params;
    for (StringRef P : llvm::split(Head.take_front(Close), ','))
        if (!P.trim().empty())
            Params.push_back(P.trim().str());
    std::optional<std::vector<std::string>> Args = invocationArgs(
        F.Src.text(Span{*Begin, *Last + Lexer::MeasureTokenLength(EE.getEnd(), SM, LO)}));
    if (!Args || (Args->size() != Params.size() &&
                  !(Params.empty() && Args->size() == 1 && Args->front().empty()))) {
        Why += " (its arguments could not be matched with its parameters)";
        return true;
    }
    std::map<std::string, std::string> Map;
    for (size_t K = 0; K < Params.size(); ++K) {
        if (Params[K] == "..." || StringRef(Params[K]).endswith("..."))
            return Why += " (variadic)", true;
        Map[Params[K]] = (*Args)[K];
    }
    // The block: code before the lock, the section, the unlock, code after it.
    std::vector<const Stmt *> Kids(Block->body_begin(), Block->body_end());
    size_t L = size_t(std::find(Kids.begin(), Kids.end(), LockSt) - Kids.begin());
    size_t U = Kids.size();
    for (size_t K = L + 1; K < Kids.size(); ++K)
        if (unlockOf(F, Kids[K], S.Lock.Identity)) {
            U = K;
            break;
        }
    if (U == Kids.size()) {
        Why += " (no unlock of " + S.Lock.Written + " ends it in the same block)";
        return true;
    }
    // Other lock operations of this lock, jumps out of the section's code, labels.
    std::string Bad;
    std::function<void(const Stmt *, bool)> Scan = [&](const Stmt *X, bool Held) {
        if (!X || !Bad.empty())
            return;
        if (const LockOp *Op = F.op(X); Op && Op->Identity == S.Lock.Identity)
            Bad = "another lock operation of " + S.Lock.Written;
        if (Held && (isa<ReturnStmt>(X) || isa<GotoStmt>(X) || isa<IndirectGotoStmt>(X) ||
                     isa<LabelStmt>(X) || isa<SwitchCase>(X)))
            Bad = "a jump or a label in the section's code";
        if (Held && (isa<BreakStmt>(X) || isa<ContinueStmt>(X))) {
            const Stmt *T = jumpTarget(F, X);
            bool Inside = false;
            for (const Stmt *P = T; P && !Inside; P = F.PM->getParent(P))
                Inside = P == Block;
            if (!Inside || T == nullptr)
                Bad = "a break or continue out of the section's code";
        }
        for (const Stmt *C : X->children())
            Scan(C, Held);
    };
    for (size_t K = 0; K < Kids.size(); ++K)
        if (K != L && K != U)
            Scan(Kids[K], K > L && K < U);
    if (!Bad.empty()) {
        Why += " (" + Bad + ")";
        return true;
    }
    // Variables: those the macro's other code uses must be the section's too (a variable bound
    // for the section is used only by it).
    auto vars = [&](const Stmt *X, std::set<const VarDecl *> &Out) {
        std::function<void(const Stmt *)> W = [&](const Stmt *Y) {
            if (!Y)
                return;
            if (const auto *D = dyn_cast<DeclRefExpr>(Y))
                if (const auto *V = dyn_cast<VarDecl>(D->getDecl()); V && V->isLocalVarDeclOrParm())
                    Out.insert(V);
            for (const Stmt *C : Y->children())
                W(C);
        };
        W(X);
    };
    std::set<const VarDecl *> InSection, Elsewhere;
    for (size_t K = 0; K < Kids.size(); ++K)
        vars(Kids[K], K > L && K < U ? InSection : Elsewhere);
    for (const VarDecl *V : Elsewhere)
        if (!InSection.count(V)) {
            Why += " (the macro's code outside the section uses '" + V->getNameAsString() + "')";
            return true;
        }
    // The text of each part.
    auto text = [&](size_t From, size_t To) -> std::optional<std::string> {
        if (From >= To)
            return std::string();
        SourceLocation B = inDefinition(SM, Kids[From]->getBeginLoc(), DefBegin, DefEnd, false);
        SourceLocation E = inDefinition(SM, Kids[To - 1]->getEndLoc(), DefBegin, DefEnd, true);
        if (B.isInvalid() || E.isInvalid() || SM.getFileOffset(E) < SM.getFileOffset(B))
            return std::nullopt;
        unsigned BO = SM.getFileOffset(B);
        size_t LS = File.take_front(BO).find_last_of('\n');
        LS = LS == StringRef::npos ? 0 : LS + 1;
        if (File.substr(LS, BO - LS).trim().empty())
            BO = unsigned(LS);
        unsigned EO = SM.getFileOffset(E) + Lexer::MeasureTokenLength(E, SM, LO);
        StringRef After = File.substr(EO);
        size_t Skip = After.find_first_not_of(" \t");
        if (Skip != StringRef::npos && After[Skip] == ';')
            EO += unsigned(Skip + 1);
        std::optional<std::string> T = substitute(File.substr(BO, EO - BO), Map, LO);
        if (!T)
            return std::nullopt;
        return definitionLines(*T);
    };
    std::optional<std::string> Before = text(0, L), Code = text(L + 1, U),
                               After = text(U + 1, Kids.size());
    if (!Before || !Code || !After) {
        Why += " (its text could not be taken from the definition: # or ##, or nested macros)";
        return true;
    }
    for (const char *Name : {"__func__", "__FUNCTION__", "__PRETTY_FUNCTION__"})
        if (StringRef(*Code).contains(Name)) {
            Why +=
                std::string(" (its code names ") + Name + ", which the macro's text cannot change)";
            return true;
        }
    std::optional<CfgPos> Lock = F.Cfg->find(S.Lock.Call);
    const CallExpr *UCall = unlockOf(F, Kids[U], S.Lock.Identity);
    std::optional<CfgPos> Exit = F.Cfg->find(UCall);
    if (!Lock || !Exit) {
        Why += " (unreachable)";
        return true;
    }
    Why.clear();
    S.InMacro = true;
    S.LockStmt = LockSt;
    S.Block = Block;
    S.First = unsigned(L);
    S.BodyFirst = unsigned(L + 1);
    S.Last = unsigned(U);
    S.Whole = S.Body = Span{From, End};
    S.Indent = F.Src.indentOf(*Begin);
    S.MacroJoin = !InBlock;
    if (S.MacroJoin)
        S.Indent = F.Src.indentOf(From);
    S.MacroBefore = *Before;
    S.MacroText = *Code;
    S.MacroAfter = *After;
    NormalEnd NE;
    NE.Unlock = UCall;
    NE.Exit = *Exit;
    NE.Final = true;
    S.Ends = {NE};
    S.Unlocks = {UCall};
    S.EndLines = {F.Src.line(*Begin)};
    S.Structured = true;
    return true;
}
} // namespace

std::optional<Span> statementSpan(const FunctionContext &F, const Stmt *S)
{
    if (std::optional<Span> Sp = F.Src.stmtSpan(S)) {
        // `LOCK(m);` with `#define LOCK(l) {pthread_mutex_lock(&(l));}`: the ';' after the
        // braces (an empty statement) goes with them.
        if (isa<CompoundStmt>(S) && soleStatement(S)) {
            StringRef Rest = F.Src.buffer().substr(Sp->End);
            size_t Skip = Rest.find_first_not_of(" \t");
            if (Skip != StringRef::npos && Rest[Skip] == ';')
                Sp->End += unsigned(Skip + 1);
        }
        return Sp;
    }
    const SourceManager &SM = F.Src.sm();
    SourceRange R = S->getSourceRange();
    if (!R.getBegin().isMacroID() ||
        !Lexer::isAtStartOfMacroExpansion(R.getBegin(), SM, F.Src.langOpts()))
        return std::nullopt;
    CharSourceRange B = SM.getExpansionRange(R.getBegin()), E = SM.getExpansionRange(R.getEnd());
    if (B.getBegin() != E.getBegin())
        return std::nullopt;
    // Nothing else of the block may come from the same invocation.
    const auto *Block = dyn_cast_or_null<CompoundStmt>(F.PM->getParent(S));
    if (!Block)
        return std::nullopt;
    for (const Stmt *X : Block->body())
        if (X != S && SM.getExpansionLoc(X->getBeginLoc()) == B.getBegin() && !isa<NullStmt>(X))
            return std::nullopt;
    std::optional<unsigned> Begin = F.Src.offset(B.getBegin());
    std::optional<unsigned> Last = F.Src.offset(E.getEnd());
    if (!Begin || !Last)
        return std::nullopt;
    unsigned End = *Last;
    if (E.isTokenRange())
        End += Lexer::MeasureTokenLength(E.getEnd(), SM, F.Src.langOpts());
    // The ';' written after the invocation (an empty statement) goes with it.
    StringRef Rest = F.Src.buffer().substr(End);
    size_t Skip = Rest.find_first_not_of(" \t");
    if (Skip != StringRef::npos && Rest[Skip] == ';')
        End += unsigned(Skip + 1);
    return Span{*Begin, End};
}

std::optional<ForLock> forLockOf(const FunctionContext &F, const CallExpr *Call)
{
    const LockOp *Op = F.op(Call);
    if (!Op || Op->Kind == OpKind::Trylock)
        return std::nullopt;
    // The for whose header holds the call.
    const ForStmt *O = nullptr;
    for (const Stmt *Cur = Call, *P = F.PM->getParent(Call); P; Cur = P, P = F.PM->getParent(P)) {
        if (const auto *Fo = dyn_cast<ForStmt>(P)) {
            if (Fo->getBody() == Cur)
                return std::nullopt;
            O = Fo;
            break;
        }
        if (!isa<Expr>(P) && !isa<DeclStmt>(P))
            return std::nullopt;
    }
    if (!O)
        return std::nullopt;
    std::vector<std::pair<const ForStmt *, const ForStmt *>> Tries;
    if (const auto *I = dyn_cast_or_null<ForStmt>(O->getBody()))
        Tries.push_back({O, I});
    if (const auto *Up = dyn_cast_or_null<ForStmt>(F.PM->getParent(O)); Up && Up->getBody() == O)
        Tries.push_back({Up, O});
    Tries.push_back({O, nullptr});
    for (auto [Outer, Inner] : Tries)
        if (std::optional<ForLock> FL = tryForLock(F, Outer, Inner, Op->Identity))
            if (FL->Lock == Call || FL->Unlock == Call)
                return FL;
    return std::nullopt;
}

const IfStmt *checkedIf(const FunctionContext &F, const CallExpr *Call)
{
    const LockOp *Op = F.op(Call);
    if (!Op || Op->Kind == OpKind::Trylock)
        return nullptr;
    const Stmt *Cur = Call;
    while (true) {
        const Stmt *P = F.PM->getParent(Cur);
        if (!P)
            return nullptr;
        // (checkedCall says which of these forms the whole condition may take)
        if (isa<ParenExpr>(P) || isa<ImplicitCastExpr>(P) ||
            (isa<BinaryOperator>(P) && cast<BinaryOperator>(P)->getOpcode() == BO_NE) ||
            (isa<UnaryOperator>(P) && cast<UnaryOperator>(P)->getOpcode() == UO_LNot)) {
            Cur = P;
            continue;
        }
        const auto *I = dyn_cast<IfStmt>(P);
        return I && I->getCond() == Cur && checkedCall(I) == Call ? I : nullptr;
    }
}

const Stmt *callStatement(const FunctionContext &F, const CallExpr *Call)
{
    const Stmt *Cur = Call;
    // A checked call, `if (pthread_mutex_lock(&m) != 0) abort();`: the if.
    if (const IfStmt *I = checkedIf(F, Call))
        Cur = I;
    while (true) {
        const Stmt *P = F.PM->getParent(Cur);
        if (!P)
            return nullptr;
        // A lock macro written `{pthread_mutex_lock(&(l));}`, as a statement of a block: the
        // braces.
        if (isa<CompoundStmt>(P) && soleStatement(P) == Cur) {
            const Stmt *PP = F.PM->getParent(P);
            if (PP && (isa<CompoundStmt>(PP) || isa<LabelStmt>(PP) || isa<AttributedStmt>(PP) ||
                       isa<SwitchCase>(PP))) {
                Cur = P;
                continue;
            }
        }
        if (isa<ParenExpr>(P) || isa<ImplicitCastExpr>(P)) {
            Cur = P;
            continue;
        }
        if (const auto *C = dyn_cast<CStyleCastExpr>(P); C && C->getType()->isVoidType()) {
            Cur = P;
            continue;
        }
        if (isa<Expr>(P))
            return nullptr;
        // A lock macro written `do { pthread_mutex_lock(m); } while (0)`: the do statement.
        if (isa<CompoundStmt>(P))
            if (const Stmt *D = F.PM->getParent(P); D && doWhileZero(D) == Cur)
                return D;
        // A statement holds Cur: Cur is an expression statement unless it is the condition,
        // the operand of a return, or a similar part of P.
        if (isa<CompoundStmt>(P) || isa<LabelStmt>(P) || isa<AttributedStmt>(P) ||
            isa<SwitchCase>(P))
            return Cur;
        if (const auto *I = dyn_cast<IfStmt>(P))
            return (I->getThen() == Cur || I->getElse() == Cur) ? Cur : nullptr;
        if (const auto *W = dyn_cast<WhileStmt>(P))
            return W->getBody() == Cur ? Cur : nullptr;
        if (const auto *D = dyn_cast<DoStmt>(P))
            return D->getBody() == Cur ? Cur : nullptr;
        if (const auto *Fo = dyn_cast<ForStmt>(P))
            return Fo->getBody() == Cur ? Cur : nullptr;
        return nullptr;
    }
}

bool alwaysLeaves(const FunctionContext &F, const Stmt *S, Span Whole)
{
    if (!S)
        return false;
    if (const auto *A = dyn_cast<AttributedStmt>(S))
        return alwaysLeaves(F, A->getSubStmt(), Whole);
    if (isa<ReturnStmt>(S))
        return true;
    if (const auto *G = dyn_cast<GotoStmt>(S))
        return outside(F, G->getLabel()->getStmt(), Whole);
    if (isa<BreakStmt>(S) || isa<ContinueStmt>(S))
        return outside(F, jumpTarget(F, S), Whole);
    if (const CallExpr *C = asCall(S)) {
        const FunctionDecl *Callee = C->getDirectCallee();
        return Callee && Callee->isNoReturn();
    }
    if (const auto *I = dyn_cast<IfStmt>(S))
        return I->getElse() && alwaysLeaves(F, I->getThen(), Whole) &&
               alwaysLeaves(F, I->getElse(), Whole);
    if (const auto *C = dyn_cast<CompoundStmt>(S)) {
        for (auto It = C->body_rbegin(); It != C->body_rend(); ++It)
            if (!isa<NullStmt>(*It))
                return alwaysLeaves(F, *It, Whole);
        return false;
    }
    return false;
}

Section findSection(FunctionContext &F, const LockOp &Op)
{
    Section S;
    S.Fn = F.Fn;
    S.Lock = Op;
    if (Op.Kind == OpKind::Trylock) {
        if (trylockSection(F, S))
            return S;
        std::string Why = S.Reason;
        S = Section();
        S.Fn = F.Fn;
        S.Lock = Op;
        S.Reason = Op.Call->getDirectCallee()->getName().contains("trylock")
                       ? "trylock: the section stays as lt_mutex_trylock/lt_mutex_unlock calls"
                       : "timed lock: the section stays as lt_mutex_timedlock/lt_mutex_unlock "
                         "calls";
        if (!Why.empty())
            S.Reason += " (" + Why + ")";
        if (std::optional<std::vector<CfgPos>> From = trylockSuccess(*F.Cfg, Op.Call, *F.PM)) {
            HeldWalk W(*F.Cfg, F.Src, Op.Written);
            WalkResult R = W.forward(
                *From,
                [&](const Stmt *X) {
                    const LockOp *O = F.op(X);
                    return O && O->Kind == OpKind::Unlock && O->Identity == Op.Identity;
                },
                [](const Stmt *) { return false; }, [](unsigned) { return true; });
            for (const Stmt *U : R.Stops) {
                S.Unlocks.push_back(cast<CallExpr>(U));
                if (std::optional<unsigned> Off = stmtOffset(F.Src, U))
                    S.EndLines.push_back(F.Src.line(*Off));
            }
            std::sort(S.EndLines.begin(), S.EndLines.end());
        }
        return S;
    }
    const Stmt *E = callStatement(F, Op.Call);
    if (!E)
        if (std::optional<ForLock> FL = forLockOf(F, Op.Call); FL && FL->Lock == Op.Call) {
            forLockSection(F, S, *FL);
            return S;
        }
    if (!E) {
        S.Reason = "the lock call at line " + lineOf(F, Op.Call) +
                   " is part of a larger expression (its result is used)";
        diagnose(F, S);
        return S;
    }
    const Stmt *Top = E, *P = F.PM->getParent(E);
    while (P && (isa<LabelStmt>(P) || isa<SwitchCase>(P) || isa<AttributedStmt>(P))) {
        Top = P;
        P = F.PM->getParent(P);
    }
    if (const auto *I = dyn_cast_or_null<IfStmt>(P)) {
        diagnose(F, S);
        S.Reason = "the lock is taken in one branch only (the if at line " + lineOf(F, I) +
                   "): the section's extent depends on the path";
        return S;
    }
    S.Block = dyn_cast_or_null<CompoundStmt>(P);
    if (!S.Block) {
        S.Reason = diagnose(F, S);
        S.Reason = "the lock call at line " + lineOf(F, Op.Call) +
                   " is the whole body of a loop or branch: " + S.Reason;
        return S;
    }
    std::optional<Span> LockSpan = statementSpan(F, E);
    if (!LockSpan) {
        std::string Why;
        if (macroSection(F, S, E, Why)) {
            if (!Why.empty())
                S.Reason = Why;
            return S;
        }
        // Name the outermost macro the lock call comes from.
        SourceLocation L = Op.Call->getBeginLoc(), Last = L;
        while (L.isMacroID()) {
            Last = L;
            L = F.Src.sm().getImmediateMacroCallerLoc(L);
        }
        StringRef Macro = Last.isMacroID()
                              ? Lexer::getImmediateMacroName(Last, F.Src.sm(), F.Src.langOpts())
                              : "";
        S.Reason = Macro.empty() ? "the lock call is written inside a macro"
                                 : "the section is written inside the macro " + Macro.str();
        diagnose(F, S);
        return S;
    }
    S.LockStmt = E;
    std::vector<const Stmt *> Kids(S.Block->body_begin(), S.Block->body_end());
    S.First = unsigned(std::find(Kids.begin(), Kids.end(), Top) - Kids.begin());
    S.BodyFirst = S.First + 1;
    std::optional<CfgPos> Pos = F.Cfg->find(Op.Call);
    if (!Pos) {
        S.Reason = "the lock call at line " + lineOf(F, Op.Call) + " is unreachable";
        return S;
    }
    S.Indent = F.Src.indentOf(LockSpan->Begin);
    std::vector<CfgPos> Start{CfgPos{Pos->Block, Pos->Index + 1}};
    if (checkedIf(F, Op.Call)) {
        // Held from the branch where the lock succeeded.
        std::optional<std::vector<CfgPos>> Success = trylockSuccess(*F.Cfg, Op.Call, *F.PM);
        if (!Success) {
            S.Reason = "the check of the lock call at line " + lineOf(F, Op.Call) +
                       " has no branch for success in the control-flow graph";
            return S;
        }
        Start = *Success;
        S.CheckedLock = true;
    }
    searchEnd(F, S, *LockSpan, Start);
    return S;
}

} // namespace locktune
