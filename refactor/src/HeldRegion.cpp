#include "HeldRegion.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ParentMap.h"
#include "clang/AST/Stmt.h"

#include <set>

using namespace clang;

namespace locktune {

CfgIndex::CfgIndex(const FunctionDecl *Fn, ASTContext &Ctx)
{
    CFG::BuildOptions BO;
    BO.setAllAlwaysAdd(); // every expression is an element, in evaluation order
    Cfg = CFG::buildCFG(Fn, Fn->getBody(), &Ctx, BO);
    if (!Cfg)
        return;
    for (const CFGBlock *B : *Cfg)
        for (unsigned I = 0; I < B->size(); ++I)
            if (const Stmt *S = stmtAt(B, I))
                Where.emplace(S, CfgPos{B, I});
}

const Stmt *CfgIndex::stmtAt(const CFGBlock *B, unsigned I)
{
    if (Optional<CFGStmt> S = (*B)[I].getAs<CFGStmt>())
        return S->getStmt();
    return nullptr;
}

std::optional<CfgPos> CfgIndex::find(const Stmt *S) const
{
    auto It = Where.find(S);
    if (It == Where.end())
        return std::nullopt;
    return It->second;
}

std::optional<unsigned> stmtOffset(const SourceText &Src, const Stmt *S)
{
    return Src.offset(S->getBeginLoc());
}

static const char *jumpWord(const Stmt *T)
{
    if (isa<BreakStmt>(T))
        return "break";
    if (isa<ContinueStmt>(T))
        return "continue";
    if (isa<GotoStmt>(T) || isa<IndirectGotoStmt>(T))
        return "goto";
    return nullptr;
}

std::string HeldWalk::describeExit(const CFGBlock *B) const
{
    for (unsigned I = B->size(); I-- > 0;) {
        const Stmt *S = CfgIndex::stmtAt(B, I);
        if (!S)
            continue;
        if (isa<ReturnStmt>(S)) {
            std::optional<unsigned> Off = stmtOffset(Src, S);
            return "returns at line " + (Off ? std::to_string(Src.line(*Off)) : "?") + " with " +
                   What + " held";
        }
        break;
    }
    return "the function ends with " + What + " held";
}

WalkResult HeldWalk::forward(std::vector<CfgPos> From, const StmtPred &IsStop,
                             const StmtPred &IsRelock,
                             const std::function<bool(unsigned)> &InRegion, bool KeepGoing) const
{
    WalkResult R;
    // With KeepGoing, the first escape is remembered and the walk goes on.
    std::optional<std::string> First;
    unsigned FirstAt = 0;
    auto escaped = [&] {
        if (!KeepGoing || !R.Escape)
            return bool(R.Escape);
        if (!First) {
            First = R.Escape;
            FirstAt = R.EscapeOffset;
        }
        R.Escape.reset();
        return false;
    };
    struct Item {
        CfgPos Pos;
        const CFGBlock *Pred;
    };
    std::vector<Item> Work;
    for (CfgPos P : From)
        Work.push_back({P, nullptr});
    std::set<std::pair<unsigned, unsigned>> Seen;
    const CFGBlock *Exit = &G.cfg().getExit();
    while (!Work.empty() && !escaped()) {
        Item It = Work.back();
        Work.pop_back();
        const CFGBlock *B = It.Pos.Block;
        if (!Seen.insert({B->getBlockID(), It.Pos.Index}).second)
            continue;
        bool Stopped = false;
        for (unsigned I = It.Pos.Index; I < B->size(); ++I) {
            const Stmt *S = CfgIndex::stmtAt(B, I);
            if (!S)
                continue;
            if (IsStop(S)) {
                R.Stops.push_back(S);
                Stopped = true;
                break;
            }
            std::optional<unsigned> Off = stmtOffset(Src, S);
            if (IsRelock(S)) {
                R.Escape = What + " is taken again at line " +
                           (Off ? std::to_string(Src.line(*Off)) : "?") + " while held";
                R.EscapeOffset = Off.value_or(0);
                break;
            }
            if (Off && !InRegion(*Off)) {
                const Stmt *T = It.Pred && I == 0 ? It.Pred->getTerminatorStmt() : nullptr;
                std::optional<unsigned> TOff = T ? stmtOffset(Src, T) : std::nullopt;
                if (T && jumpWord(T) && TOff && InRegion(*TOff))
                    R.Escape = std::string("the ") + jumpWord(T) + " at line " +
                               std::to_string(Src.line(*TOff)) + " leaves with " + What + " held";
                else
                    R.Escape = What + " is still held at line " + std::to_string(Src.line(*Off));
                R.EscapeOffset = *Off;
                break;
            }
            if (Off)
                R.Visited.push_back(*Off);
        }
        if (Stopped || escaped())
            continue;
        for (const CFGBlock::AdjacentBlock &A : B->succs()) {
            const CFGBlock *Succ = A.getReachableBlock();
            if (!Succ)
                continue;
            if (Succ == Exit) {
                if (B->hasNoReturnElement()) {
                    // abort(), exit(), assert failures: the process ends, nothing is left held.
                    // A thread exit or a longjmp would leave the lock held by someone else.
                    for (unsigned I = B->size(); I-- > 0;)
                        if (const auto *C = dyn_cast_or_null<CallExpr>(CfgIndex::stmtAt(B, I))) {
                            const FunctionDecl *F = C->getDirectCallee();
                            StringRef N = F ? F->getName() : "";
                            if (N == "pthread_exit" || N.contains("longjmp")) {
                                std::optional<unsigned> Off = stmtOffset(Src, C);
                                R.Escape = N.str() + "() at line " +
                                           (Off ? std::to_string(Src.line(*Off)) : "?") +
                                           " leaves with " + What + " held";
                                R.EscapeOffset = Off.value_or(0);
                            }
                            break;
                        }
                    continue;
                }
                R.Escape = describeExit(B);
                for (unsigned I = B->size(); I-- > 0;)
                    if (const Stmt *S = CfgIndex::stmtAt(B, I)) {
                        R.EscapeOffset = stmtOffset(Src, S).value_or(0);
                        break;
                    }
                break;
            }
            Work.push_back({CfgPos{Succ, 0}, B});
        }
    }
    escaped();
    if (First) {
        R.Escape = First;
        R.EscapeOffset = FirstAt;
    }
    return R;
}

std::optional<std::string> HeldWalk::backward(CfgPos End, const StmtPred &IsStart,
                                              const std::function<bool(unsigned)> &InRegion) const
{
    struct Item {
        const CFGBlock *B;
        unsigned Upto; // scan elements [0, Upto) backwards
    };
    std::vector<Item> Work{{End.Block, End.Index}};
    std::set<std::pair<unsigned, unsigned>> Seen;
    const CFGBlock *Entry = &G.cfg().getEntry();
    while (!Work.empty()) {
        Item It = Work.back();
        Work.pop_back();
        if (!Seen.insert({It.B->getBlockID(), It.Upto}).second)
            continue;
        bool Started = false;
        for (unsigned I = It.Upto; I-- > 0;) {
            const Stmt *S = CfgIndex::stmtAt(It.B, I);
            if (!S)
                continue;
            if (IsStart(S)) {
                Started = true;
                break;
            }
            std::optional<unsigned> Off = stmtOffset(Src, S);
            if (Off && !InRegion(*Off))
                return What +
                       " is released without being taken in the section (it is held at line " +
                       std::to_string(Src.line(*Off)) + ")";
        }
        if (Started)
            continue;
        if (It.B == Entry)
            return What + " is released without being taken in the section";
        if (It.B->pred_empty())
            continue; // dead code (after the last case of a switch that ends in a break, say)
        for (const CFGBlock::AdjacentBlock &A : It.B->preds())
            if (const CFGBlock *P = A.getReachableBlock())
                Work.push_back({P, unsigned(P->size())});
    }
    return std::nullopt;
}

std::optional<TrylockTest> trylockTest(const CallExpr *Call, ParentMap &PM)
{
    // Climb from the call to the whole condition, noting when success means "true".
    const Stmt *Cur = Call;
    bool SuccessWhenTrue = false; // a bare trylock() is non-zero on failure
    while (true) {
        const Stmt *P = PM.getParent(Cur);
        if (!P)
            return std::nullopt;
        if (isa<ParenExpr>(P) || isa<ImplicitCastExpr>(P)) {
            Cur = P;
            continue;
        }
        if (const auto *U = dyn_cast<UnaryOperator>(P); U && U->getOpcode() == UO_LNot) {
            SuccessWhenTrue = !SuccessWhenTrue;
            Cur = P;
            continue;
        }
        if (const auto *B = dyn_cast<BinaryOperator>(P);
            B && (B->getOpcode() == BO_EQ || B->getOpcode() == BO_NE)) {
            const Expr *Other = B->getLHS() == Cur ? B->getRHS() : B->getLHS();
            const auto *Lit = dyn_cast<IntegerLiteral>(Other->IgnoreParenImpCasts());
            if (!Lit || Lit->getValue() != 0)
                return std::nullopt;
            if (B->getOpcode() == BO_EQ)
                SuccessWhenTrue = !SuccessWhenTrue;
            Cur = P;
            continue;
        }
        if (const auto *If = dyn_cast<IfStmt>(P); If && If->getCond() == Cur)
            return TrylockTest{If, SuccessWhenTrue};
        return std::nullopt;
    }
}

std::optional<std::vector<CfgPos>> trylockSuccess(const CfgIndex &G, const CallExpr *Call,
                                                  ParentMap &PM)
{
    std::optional<TrylockTest> T = trylockTest(Call, PM);
    if (!T)
        return std::nullopt;
    for (const CFGBlock *B : G.cfg()) {
        if (B->getTerminatorStmt() != T->If)
            continue;
        if (B->succ_size() != 2)
            return std::nullopt;
        auto It = B->succ_begin();
        std::vector<CfgPos> Out;
        if (const CFGBlock *S = (T->SuccessWhenTrue ? *It : *(It + 1)).getReachableBlock())
            Out.push_back(CfgPos{S, 0});
        return Out;
    }
    return std::nullopt;
}

} // namespace locktune
