// HeldRegion: where a lock is held, by control flow (clang::CFG), not by adjacency.
//
// From a lock call, walk the CFG forward until each path meets an unlock of the same lock.
// What the walk finds decides whether a critical section has a clean extent: the unlocks that
// end it, and every way the lock escapes (a return, break, continue or goto with the lock
// still held, the lock taken again, the code after the section reached while holding it).
// The same walk, run backward from an unlock, tells whether the lock was taken inside a
// region.  The CFG is linearised (every expression is an element), so a walk stops exactly
// at the unlock call and "where" is the element's position in the main file.
#ifndef LOCKTUNE_EXTRACT_HELDREGION_H
#define LOCKTUNE_EXTRACT_HELDREGION_H

#include "SourceText.h"

#include "clang/AST/ParentMap.h"
#include "clang/Analysis/CFG.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace locktune {

struct CfgPos {
    const clang::CFGBlock *Block = nullptr;
    unsigned Index = 0;
};

// The function's CFG with every statement located.
class CfgIndex {
public:
    CfgIndex(const clang::FunctionDecl *Fn, clang::ASTContext &Ctx);
    bool valid() const
    {
        return bool(Cfg);
    }
    const clang::CFG &cfg() const
    {
        return *Cfg;
    }
    std::optional<CfgPos> find(const clang::Stmt *S) const;
    static const clang::Stmt *stmtAt(const clang::CFGBlock *B, unsigned I);

private:
    std::unique_ptr<clang::CFG> Cfg;
    std::map<const clang::Stmt *, CfgPos> Where;
};

// What a forward walk meets.
struct WalkResult {
    std::vector<const clang::Stmt *> Stops; // the stopping elements met (unlock calls)
    std::optional<std::string> Escape;      // first way out with the lock held, in words
    unsigned EscapeOffset = 0;              // where (main-file offset), when known
    std::vector<unsigned> Visited;          // offsets of the elements walked while held
};

class HeldWalk {
public:
    using StmtPred = std::function<bool(const clang::Stmt *)>;
    HeldWalk(const CfgIndex &G, const SourceText &Src, llvm::StringRef What)
        : G(G), Src(Src), What(What.str())
    {
    }

    // Walks forward from just after Start (or from the first element of the given blocks).
    // IsStop: an element that releases the lock (the walk stops there).  InRegion: offsets the
    // lock may be held at.  IsRelock: an element that takes the lock again.
    // KeepGoing: after an escape, go on collecting the stops of the other paths.
    WalkResult forward(std::vector<CfgPos> From, const StmtPred &IsStop, const StmtPred &IsRelock,
                       const std::function<bool(unsigned)> &InRegion, bool KeepGoing = false) const;
    // Walks backward from just before End until each path meets IsStart; reports whether a
    // path leaves InRegion (or reaches the function's entry) first.
    std::optional<std::string> backward(CfgPos End, const StmtPred &IsStart,
                                        const std::function<bool(unsigned)> &InRegion) const;

private:
    std::string describeExit(const clang::CFGBlock *B) const;
    const CfgIndex &G;
    const SourceText &Src;
    std::string What;
};

// The `if` a trylock call is tested in (`if (pthread_mutex_trylock(m) == 0)`, `!trylock(m)`,
// `trylock(m) != 0`, ...), and whether success takes its then branch.
struct TrylockTest {
    const clang::IfStmt *If = nullptr;
    bool SuccessWhenTrue = false;
};
std::optional<TrylockTest> trylockTest(const clang::CallExpr *Call, clang::ParentMap &PM);

// The CFG blocks where a trylock call has succeeded: the branch of the `if` it is tested in.
std::optional<std::vector<CfgPos>> trylockSuccess(const CfgIndex &G, const clang::CallExpr *Call,
                                                  clang::ParentMap &PM);

// Offset of a statement in the main file (expansion location), if it has one.
std::optional<unsigned> stmtOffset(const SourceText &Src, const clang::Stmt *S);

} // namespace locktune

#endif
