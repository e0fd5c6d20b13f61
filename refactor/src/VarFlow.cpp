#include "VarFlow.h"

#include "clang/AST/Expr.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/Stmt.h"

using namespace clang;

namespace locktune {

namespace {
struct Collect : RecursiveASTVisitor<Collect> {
    std::vector<const VarDecl *> Vars;
    llvm::DenseSet<const DeclRefExpr *> PureWrites;
    bool VisitVarDecl(VarDecl *V)
    {
        if (V->hasLocalStorage())
            Vars.push_back(V);
        return true;
    }
    bool VisitBinaryOperator(BinaryOperator *B)
    {
        if (B->getOpcode() == BO_Assign)
            if (const auto *D = dyn_cast<DeclRefExpr>(B->getLHS()->IgnoreParens()))
                PureWrites.insert(D);
        return true;
    }
};
} // namespace

VarFlow::VarFlow(const CfgIndex &G, const FunctionDecl *Fn)
{
    Collect C;
    for (const ParmVarDecl *P : Fn->parameters())
        C.Vars.push_back(P);
    C.TraverseStmt(Fn->getBody());
    for (const VarDecl *V : C.Vars)
        Index.try_emplace(V, unsigned(Index.size()));
    PureWrites = std::move(C.PureWrites);

    const CFG &Cfg = G.cfg();
    unsigned N = Cfg.getNumBlockIDs(), NV = unsigned(Index.size());
    LiveOut.assign(N, llvm::BitVector(NV));
    AssignedIn.assign(N, llvm::BitVector(NV, true));

    // Liveness: backward, union over successors, to a fixed point.
    std::vector<llvm::BitVector> LiveIn(N, llvm::BitVector(NV));
    for (bool Changed = true; Changed;) {
        Changed = false;
        for (auto It = Cfg.rbegin(); It != Cfg.rend(); ++It) {
            const CFGBlock *B = *It;
            llvm::BitVector Out(NV);
            for (const CFGBlock::AdjacentBlock &A : B->succs())
                if (const CFGBlock *S = A.getReachableBlock())
                    Out |= LiveIn[S->getBlockID()];
            llvm::BitVector In = Out;
            for (unsigned I = B->size(); I-- > 0;)
                if (const Stmt *S = CfgIndex::stmtAt(B, I))
                    transferLive(S, In);
            if (Out != LiveOut[B->getBlockID()] || In != LiveIn[B->getBlockID()]) {
                LiveOut[B->getBlockID()] = Out;
                LiveIn[B->getBlockID()] = In;
                Changed = true;
            }
        }
    }

    // Definite assignment: forward, intersection over predecessors; parameters have values.
    const CFGBlock *Entry = &Cfg.getEntry();
    llvm::BitVector Params(NV);
    for (const ParmVarDecl *P : Fn->parameters())
        Params.set(Index.lookup(P));
    std::vector<llvm::BitVector> AssignedOut(N, llvm::BitVector(NV, true));
    for (bool Changed = true; Changed;) {
        Changed = false;
        for (const CFGBlock *B : Cfg) {
            llvm::BitVector In(NV, true);
            if (B == Entry) {
                In = Params;
            } else {
                bool Any = false;
                for (const CFGBlock::AdjacentBlock &A : B->preds())
                    if (const CFGBlock *P = A.getReachableBlock()) {
                        In &= AssignedOut[P->getBlockID()];
                        Any = true;
                    }
                if (!Any)
                    In = llvm::BitVector(NV, true); // unreachable: no constraint
            }
            llvm::BitVector Out = In;
            for (unsigned I = 0; I < B->size(); ++I)
                if (const Stmt *S = CfgIndex::stmtAt(B, I))
                    transferAssigned(S, Out);
            if (In != AssignedIn[B->getBlockID()] || Out != AssignedOut[B->getBlockID()]) {
                AssignedIn[B->getBlockID()] = In;
                AssignedOut[B->getBlockID()] = Out;
                Changed = true;
            }
        }
    }
}

int VarFlow::indexOf(const Expr *E) const
{
    if (const auto *D = dyn_cast<DeclRefExpr>(E->IgnoreParens()))
        if (const auto *V = dyn_cast<VarDecl>(D->getDecl())) {
            auto It = Index.find(V);
            if (It != Index.end())
                return int(It->second);
        }
    return -1;
}

void VarFlow::transferLive(const Stmt *S, llvm::BitVector &Live) const
{
    if (const auto *D = dyn_cast<DeclRefExpr>(S)) {
        if (!PureWrites.count(D)) {
            int I = indexOf(D);
            if (I >= 0)
                Live.set(unsigned(I));
        }
    } else if (const auto *B = dyn_cast<BinaryOperator>(S)) {
        if (B->getOpcode() == BO_Assign) {
            int I = indexOf(B->getLHS());
            if (I >= 0)
                Live.reset(unsigned(I));
        }
    } else if (const auto *DS = dyn_cast<DeclStmt>(S)) {
        for (const Decl *D : DS->decls())
            if (const auto *V = dyn_cast<VarDecl>(D)) {
                auto It = Index.find(V);
                if (It != Index.end())
                    Live.reset(It->second);
            }
    }
}

void VarFlow::transferAssigned(const Stmt *S, llvm::BitVector &Assigned) const
{
    if (const auto *B = dyn_cast<BinaryOperator>(S)) {
        if (B->isAssignmentOp()) {
            int I = indexOf(B->getLHS());
            if (I >= 0)
                Assigned.set(unsigned(I));
        }
    } else if (const auto *U = dyn_cast<UnaryOperator>(S)) {
        if (U->getOpcode() == UO_AddrOf) { // may be written through the pointer
            int I = indexOf(U->getSubExpr());
            if (I >= 0)
                Assigned.set(unsigned(I));
        }
    } else if (const auto *DS = dyn_cast<DeclStmt>(S)) {
        for (const Decl *D : DS->decls())
            if (const auto *V = dyn_cast<VarDecl>(D); V && V->hasInit()) {
                auto It = Index.find(V);
                if (It != Index.end())
                    Assigned.set(It->second);
            }
    }
}

bool VarFlow::liveBefore(CfgPos P, const VarDecl *V) const
{
    auto It = Index.find(V);
    if (It == Index.end())
        return false;
    llvm::BitVector Live = LiveOut[P.Block->getBlockID()];
    for (unsigned I = P.Block->size(); I-- > P.Index;)
        if (const Stmt *S = CfgIndex::stmtAt(P.Block, I))
            transferLive(S, Live);
    return Live.test(It->second);
}

bool VarFlow::assignedBefore(CfgPos P, const VarDecl *V) const
{
    auto It = Index.find(V);
    if (It == Index.end())
        return false;
    llvm::BitVector A = AssignedIn[P.Block->getBlockID()];
    for (unsigned I = 0; I < P.Index; ++I)
        if (const Stmt *S = CfgIndex::stmtAt(P.Block, I))
            transferAssigned(S, A);
    return A.test(It->second);
}

} // namespace locktune
