// VarFlow: two data-flow analyses over the function's CFG, for its locals and parameters.
//
//   liveness            (backward, may)  a variable is live before a point when some path from
//                       there reads it before writing it.  Inputs of a section are its variables
//                       live at its start; outputs are those it writes that are live after an exit
//                       (a variable written on only some paths stays live at the start, so its
//                       prior value is passed in and survives).
//   definite assignment (forward, must)  every path to a point has given the variable a value.
//                       A section never copies a value that may be uninitialised: such a variable
//                       is passed by pointer instead (no read, no -Wmaybe-uninitialized).
#ifndef LOCKTUNE_EXTRACT_VARFLOW_H
#define LOCKTUNE_EXTRACT_VARFLOW_H

#include "HeldRegion.h"

#include "clang/AST/Decl.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <vector>

namespace locktune {

class VarFlow {
public:
    VarFlow(const CfgIndex &G, const clang::FunctionDecl *Fn);
    bool tracked(const clang::VarDecl *V) const
    {
        return Index.count(V);
    }
    bool liveBefore(CfgPos P, const clang::VarDecl *V) const;
    bool assignedBefore(CfgPos P, const clang::VarDecl *V) const;

private:
    void transferLive(const clang::Stmt *S, llvm::BitVector &Live) const;
    void transferAssigned(const clang::Stmt *S, llvm::BitVector &Assigned) const;
    int indexOf(const clang::Expr *E) const;

    llvm::DenseMap<const clang::VarDecl *, unsigned> Index;
    llvm::DenseSet<const clang::DeclRefExpr *> PureWrites; // `v = ...`: v is not read
    std::vector<llvm::BitVector> LiveOut, AssignedIn;      // by block id
};

} // namespace locktune

#endif
