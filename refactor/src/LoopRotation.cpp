#include "LoopRotation.h"

#include "SectionFinder.h"

#include "clang/AST/Expr.h"
#include "clang/AST/Stmt.h"
#include "clang/AST/StmtCXX.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

using namespace clang;

namespace locktune {

namespace {

// `while (1)`, `while (true)`, `for (;;)`: a loop whose header does nothing and never ends it.
const CompoundStmt *endlessBody(const Stmt *S, const ASTContext &Ctx)
{
    const Stmt *Body = nullptr;
    if (const auto *W = dyn_cast<WhileStmt>(S)) {
        bool True = false;
        const Expr *C = W->getCond();
        if (W->getConditionVariable() || !C || C->HasSideEffects(Ctx) ||
            !C->EvaluateAsBooleanCondition(True, Ctx) || !True)
            return nullptr;
        Body = W->getBody();
    } else if (const auto *F = dyn_cast<ForStmt>(S)) {
        if (F->getInit() || F->getInc() || F->getConditionVariable())
            return nullptr;
        bool True = false;
        if (const Expr *C = F->getCond())
            if (C->HasSideEffects(Ctx) || !C->EvaluateAsBooleanCondition(True, Ctx) || !True)
                return nullptr;
        Body = F->getBody();
    }
    return dyn_cast_or_null<CompoundStmt>(Body);
}

// True when S holds what would run differently once the loop is rotated: a continue of the
// loop whose body S is part of (it would now skip the call moved to the end of the turn, or
// run the one moved to its top), or a label (a goto could enter a turn half-way).  A break, a
// return or a goto out of the loop leaves it in the same state either way: the moved calls
// sit at the turn's two ends, and no exit passes between them.
// Exits: a break or goto out of the loop blocks it too (a while loop's rotation moves the
// unlock that follows the loop to the end of each turn, which such an exit would skip).
bool blocksRotation(const Stmt *S, bool Exits, unsigned Loops = 0, unsigned Switches = 0)
{
    if (!S)
        return false;
    if (isa<LabelStmt>(S) || isa<StmtExpr>(S) || isa<CXXTryStmt>(S))
        return true; // a GNU statement expression may hold any of these: not worth the care
    if (isa<ContinueStmt>(S))
        return Loops == 0;
    if (Exits && (isa<GotoStmt>(S) || isa<IndirectGotoStmt>(S)))
        return true;
    if (Exits && isa<BreakStmt>(S))
        return Loops == 0 && Switches == 0;
    bool Loop = isa<WhileStmt>(S) || isa<ForStmt>(S) || isa<DoStmt>(S);
    bool Switch = isa<SwitchStmt>(S);
    for (const Stmt *Kid : S->children())
        if (blocksRotation(Kid, Exits, Loops + Loop, Switches + Switch))
            return true;
    return false;
}

std::vector<const Stmt *> statements(const CompoundStmt *C)
{
    std::vector<const Stmt *> Out;
    for (const Stmt *S : C->body())
        if (!isa<NullStmt>(S))
            Out.push_back(S);
    return Out;
}

// The operations of F by the statement each one is (callStatement).
std::map<const Stmt *, const LockOp *> byStatement(const FunctionContext &F)
{
    std::map<const Stmt *, const LockOp *> Out;
    for (const CallExpr *C : F.OpOrder)
        if (const Stmt *S = callStatement(F, C))
            Out[S] = &F.Ops.at(C);
    return Out;
}

std::string oneLine(llvm::StringRef Text)
{
    return Text.contains('\n') ? std::string() : Text.str();
}

// True when Text, moved to the end of Body, could name something else there: an identifier
// of it is declared by a statement of Body itself (`struct box *b = ...;` after the relock
// would capture the `b` of a moved `unlock(&b->lock)`).
bool shadowedAtEnd(const CompoundStmt *Body, llvm::StringRef Text)
{
    std::set<std::string> Words;
    for (size_t I = 0; I < Text.size();) {
        if (isalpha((unsigned char)Text[I]) || Text[I] == '_') {
            size_t J = I;
            while (J < Text.size() && (isalnum((unsigned char)Text[J]) || Text[J] == '_'))
                ++J;
            Words.insert(Text.slice(I, J).str());
            I = J;
        } else {
            ++I;
        }
    }
    for (const Stmt *S : Body->body())
        if (const auto *DS = dyn_cast<DeclStmt>(S))
            for (const Decl *D : DS->decls())
                if (const auto *ND = dyn_cast<NamedDecl>(D))
                    if (Words.count(ND->getNameAsString()))
                        return true;
    return false;
}

} // namespace

// W: `lock; P; while (c) { unlock; W; lock; B } unlock;` becomes
// `int g; lock; P; g = (c) != 0; unlock; while (g) { W; lock; B; g = (c) != 0; unlock; }`: the
// test, then the unlock that follows it on either outcome, now end each turn; the same calls
// and tests in the same order.  The unlock after the loop is the one at the top of a turn,
// written alike.
std::optional<Rotation> whileRotation(const FunctionContext &F,
                                      const std::map<const Stmt *, const LockOp *> &Ops,
                                      const LockOp &Pre, Span PreSpan,
                                      const std::vector<const Stmt *> &Kids,
                                      std::vector<const Stmt *>::const_iterator LoopAt)
{
    const SourceText &Src = F.Src;
    auto isOp = [&](const Stmt *S, OpKind K) {
        auto It = Ops.find(S);
        return It != Ops.end() && It->second->Kind == K && It->second->Identity == Pre.Identity;
    };
    // The first while after the lock call, among statements that do not touch the lock.
    const WhileStmt *Loop = nullptr;
    for (auto It = LoopAt; It != Kids.end() && !Loop; ++It) {
        Loop = dyn_cast<WhileStmt>(*It);
        if (Loop) {
            LoopAt = It;
            break;
        }
        for (const CallExpr *C : F.OpOrder) {
            std::optional<Span> CS = Src.span(C->getSourceRange());
            std::optional<Span> SS = statementSpan(F, *It);
            if (F.Ops.at(C).Identity == Pre.Identity && (!CS || !SS || SS->contains(*CS)))
                return std::nullopt;
        }
    }
    if (!Loop || LoopAt + 1 == Kids.end() || Loop->getConditionVariable())
        return std::nullopt;
    const auto *Body = dyn_cast<CompoundStmt>(Loop->getBody());
    const Stmt *After = *(LoopAt + 1);
    std::optional<Span> LoopSpan = Src.span(Loop->getSourceRange());
    std::optional<Span> CondSpan = Src.span(Loop->getCond()->getSourceRange());
    std::optional<Span> BodySpan = Body ? Src.span(Body->getSourceRange()) : std::nullopt;
    std::optional<Span> AfterSpan = statementSpan(F, After);
    std::optional<unsigned> WhileAt = Src.offset(Loop->getWhileLoc());
    if (!Body || !LoopSpan || !CondSpan || !BodySpan || !AfterSpan || !WhileAt ||
        !isOp(After, OpKind::Unlock) || blocksRotation(Body, true))
        return std::nullopt;
    std::vector<const Stmt *> Turn = statements(Body);
    if (Turn.size() < 2 || !isOp(Turn.front(), OpKind::Unlock))
        return std::nullopt;
    auto K = std::find_if(Turn.begin() + 1, Turn.end(),
                          [&](const Stmt *S) { return isOp(S, OpKind::Lock); });
    std::optional<Span> USpan = statementSpan(F, Turn.front());
    std::optional<Span> KSpan = K == Turn.end() ? std::nullopt : statementSpan(F, *K);
    if (!USpan || !KSpan)
        return std::nullopt;
    unsigned InLoop = 0;
    for (const CallExpr *X : F.OpOrder) {
        std::optional<Span> XS = Src.span(X->getSourceRange());
        if (F.Ops.at(X).Identity == Pre.Identity && (!XS || LoopSpan->contains(*XS)))
            ++InLoop;
    }
    std::string UText = oneLine(Src.text(*USpan)), Cond = oneLine(Src.text(*CondSpan));
    if (InLoop != 2 || UText.empty() || Cond.empty() || UText != oneLine(Src.text(*AfterSpan)) ||
        shadowedAtEnd(Body, UText + " " + Cond))
        return std::nullopt;
    Rotation R;
    R.Shape = 'W';
    R.Lock = Pre.Written;
    R.LoopLine = Src.line(LoopSpan->Begin);
    R.Lines = {Src.line(PreSpan.Begin), Src.line(KSpan->Begin)};
    R.Before = R.Lines;
    std::string G = "lt_again" + std::to_string(R.LoopLine);
    std::string Test = G + " = (" + Cond + ") != 0; " + UText;
    unsigned Close = BodySpan->End - 1;
    R.Edits = {{Span{PreSpan.Begin, PreSpan.Begin}, "int " + G + "; "},
               {Span{*WhileAt, *WhileAt}, Test + " "},
               {*CondSpan, G},
               {*USpan, ""},
               {Span{Close, Close}, Test + " "},
               {*AfterSpan, ""}};
    return R;
}

std::vector<Rotation> findRotations(const FunctionContext &F)
{
    std::vector<Rotation> Out;
    const SourceText &Src = F.Src;
    std::map<const Stmt *, const LockOp *> Ops = byStatement(F);
    auto opOf = [&](const Stmt *S, OpKind K, const std::string &Id) -> const LockOp * {
        auto It = Ops.find(S);
        if (It == Ops.end() || It->second->Kind != K || It->second->Identity != Id)
            return nullptr;
        return It->second;
    };
    for (const CallExpr *C : F.OpOrder) {
        const LockOp &Pre = F.Ops.at(C);
        const Stmt *PreSt = callStatement(F, C);
        if (Pre.Kind != OpKind::Lock || !PreSt)
            continue;
        const auto *Blk = dyn_cast_or_null<CompoundStmt>(F.PM->getParent(PreSt));
        if (!Blk)
            continue;
        std::vector<const Stmt *> Kids = statements(Blk);
        auto At = std::find(Kids.begin(), Kids.end(), PreSt);
        if (At == Kids.end() || At + 1 == Kids.end())
            continue;
        const Stmt *Loop = *(At + 1);
        const CompoundStmt *Body = endlessBody(Loop, F.Ctx);
        std::optional<Span> PreSpan = statementSpan(F, PreSt);
        std::optional<Span> BodySpan = Body ? Src.span(Body->getSourceRange()) : std::nullopt;
        std::optional<Span> LoopSpan = Src.span(Loop->getSourceRange());
        if (!Body && PreSpan && LoopSpan)
            if (std::optional<Rotation> R = whileRotation(F, Ops, Pre, *PreSpan, Kids, At + 1))
                Out.push_back(std::move(*R));
        if (!Body || !PreSpan || !BodySpan || !LoopSpan || blocksRotation(Body, false))
            continue;
        // The lock is taken and released exactly twice in the loop, by its own statements.
        unsigned InLoop = 0;
        for (const CallExpr *X : F.OpOrder) {
            std::optional<Span> XS = Src.span(X->getSourceRange());
            if (F.Ops.at(X).Identity == Pre.Identity && (!XS || LoopSpan->contains(*XS)))
                ++InLoop;
        }
        std::vector<const Stmt *> Turn = statements(Body);
        if (InLoop != 2 || Turn.size() < 2)
            continue;
        Rotation R;
        R.Lock = Pre.Written;
        R.LoopLine = Src.line(LoopSpan->Begin);
        unsigned Open = BodySpan->Begin + 1, Close = BodySpan->End - 1; // after '{', at '}'
        if (opOf(Turn.back(), OpKind::Lock, Pre.Identity)) {
            // E: the last statement locks; the unlock is a statement of the turn before it.
            auto U = std::find_if(Turn.begin(), Turn.end() - 1, [&](const Stmt *S) {
                return opOf(S, OpKind::Unlock, Pre.Identity) != nullptr;
            });
            std::optional<Span> LastSpan = statementSpan(F, Turn.back());
            if (U == Turn.end() - 1 || !LastSpan)
                continue;
            std::string PreText = oneLine(Src.text(*PreSpan));
            if (PreText.empty() || PreText != oneLine(Src.text(*LastSpan)))
                continue; // the two must read alike: one text stands for both now
            R.Shape = 'E';
            R.Lines = {Src.line(Open)};
            R.Before = {Src.line(PreSpan->Begin), Src.line(LastSpan->Begin)};
            R.Edits = {{*PreSpan, ""}, {Span{Open, Open}, " " + PreText}, {*LastSpan, ""}};
        } else if (opOf(Turn.front(), OpKind::Unlock, Pre.Identity)) {
            // T: the first statement unlocks; a later statement of the turn locks again.
            auto K = std::find_if(Turn.begin() + 1, Turn.end(), [&](const Stmt *S) {
                return opOf(S, OpKind::Lock, Pre.Identity) != nullptr;
            });
            std::optional<Span> USpan = statementSpan(F, Turn.front());
            std::optional<Span> KSpan = K == Turn.end() ? std::nullopt : statementSpan(F, *K);
            if (!USpan || !KSpan)
                continue;
            std::string UText = oneLine(Src.text(*USpan));
            if (UText.empty() || shadowedAtEnd(Body, UText))
                continue;
            R.Shape = 'T';
            R.Lines = {Src.line(PreSpan->Begin), Src.line(KSpan->Begin)};
            R.Before = R.Lines;
            R.Edits = {{Span{PreSpan->End, PreSpan->End}, " " + UText},
                       {*USpan, ""},
                       {Span{Close, Close}, UText + " "}};
        } else {
            continue;
        }
        Out.push_back(std::move(R));
    }
    return Out;
}

std::string describe(const Rotation &R)
{
    std::string Loop = "the loop at line " + std::to_string(R.LoopLine);
    const char *Same = " (the same calls, in the same order)";
    switch (R.Shape) {
    case 'E':
        return Loop + " took " + R.Lock +
               " before it and again at the end of each turn: it is now taken at the top of "
               "each turn" +
               Same;
    case 'T':
        return Loop + " released " + R.Lock +
               " at the top of each turn: it is now released at the end of each turn, and once "
               "before the loop" +
               Same;
    default:
        return Loop + " released " + R.Lock +
               " at the top of each turn and after it: its test is now made, and the lock "
               "released, at the end of each turn, and once before the loop" +
               Same;
    }
}

std::string applyRotations(llvm::StringRef Text, const std::vector<Rotation> &Rs)
{
    std::vector<std::pair<Span, std::string>> Edits;
    for (const Rotation &R : Rs)
        Edits.insert(Edits.end(), R.Edits.begin(), R.Edits.end());
    std::sort(Edits.begin(), Edits.end(), [](const auto &A, const auto &B) {
        return A.first.Begin != B.first.Begin ? A.first.Begin > B.first.Begin
                                              : A.first.End > B.first.End;
    });
    std::string Out = Text.str();
    for (const auto &[S, New] : Edits) {
        Out.replace(S.Begin, S.End - S.Begin, New);
        if (!New.empty() || S.empty())
            continue;
        // A deletion that leaves its line blank: the line stays, empty.
        size_t Begin = Out.rfind('\n', S.Begin == 0 ? 0 : S.Begin - 1);
        Begin = Begin == std::string::npos || S.Begin == 0 ? 0 : Begin + 1;
        size_t End = Out.find('\n', S.Begin);
        End = End == std::string::npos ? Out.size() : End;
        if (Out.find_first_not_of(" \t\r", Begin) >= End)
            Out.erase(Begin, End - Begin);
    }
    return Out;
}

} // namespace locktune
