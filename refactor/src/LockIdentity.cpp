#include "LockIdentity.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/PrettyPrinter.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "llvm/Support/raw_ostream.h"

using namespace clang;

namespace locktune {

namespace {

std::string printed(const Expr *E)
{
    std::string S;
    llvm::raw_string_ostream OS(S);
    LangOptions LO;
    LO.C99 = true;
    PrintingPolicy P(LO);
    E->printPretty(OS, nullptr, P);
    return OS.str();
}

// --- aliases ----------------------------------------------------------------------------------
//
// A local pointer that holds its initializer's value all its life names what the initializer
// names: `T *job = &jobs[id]; lock(&job->m); ... unlock(&jobs[id].m);` is one lock (zstd's
// ZSTDMT_getFrameProgression).  "All its life": declared with an initializer, never assigned,
// incremented or address-taken in its function, not volatile, not static; and the initializer
// reads only variables of the same kind (parameters and locals never changed, arrays) through
// member access, subscripts, & and *, casts and arithmetic: no call, no global pointer.

// v = ..., v op= ..., v++, --v, &v anywhere in the function.
struct ChangeFinder : RecursiveASTVisitor<ChangeFinder> {
    const VarDecl *V = nullptr;
    bool Changed = false;
    bool names(const Expr *E) const
    {
        const auto *D = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
        return D && D->getDecl() == V;
    }
    bool VisitBinaryOperator(BinaryOperator *B)
    {
        Changed |= B->isAssignmentOp() && names(B->getLHS());
        return !Changed;
    }
    bool VisitUnaryOperator(UnaryOperator *U)
    {
        Changed |=
            (U->isIncrementDecrementOp() || U->getOpcode() == UO_AddrOf) && names(U->getSubExpr());
        return !Changed;
    }
};

bool neverChanged(const VarDecl *V)
{
    if (V->getType().isVolatileQualified() || !V->hasLocalStorage())
        return false;
    const auto *Fn = dyn_cast_or_null<FunctionDecl>(V->getParentFunctionOrMethod());
    if (!Fn || !Fn->hasBody())
        return false;
    ChangeFinder C;
    C.V = V;
    C.TraverseStmt(Fn->getBody());
    return !C.Changed;
}

const Expr *aliasInit(const VarDecl *V);

bool stable(const Expr *E, unsigned Depth)
{
    E = E->IgnoreParenImpCasts();
    if (Depth > 8)
        return false;
    if (const auto *D = dyn_cast<DeclRefExpr>(E)) {
        const auto *V = dyn_cast<VarDecl>(D->getDecl());
        if (!V)
            return false;
        if (V->getType()->isArrayType())
            return true; // its address, whatever is stored in it
        return neverChanged(V);
    }
    if (const auto *M = dyn_cast<MemberExpr>(E))
        return stable(M->getBase(), Depth + 1);
    if (const auto *A = dyn_cast<ArraySubscriptExpr>(E))
        return stable(A->getBase(), Depth + 1) && stable(A->getIdx(), Depth + 1);
    if (const auto *U = dyn_cast<UnaryOperator>(E))
        return (U->getOpcode() == UO_AddrOf || U->getOpcode() == UO_Deref) &&
               stable(U->getSubExpr(), Depth + 1);
    if (const auto *B = dyn_cast<BinaryOperator>(E))
        return !B->isAssignmentOp() && B->getOpcode() != BO_Comma &&
               stable(B->getLHS(), Depth + 1) && stable(B->getRHS(), Depth + 1);
    if (const auto *C = dyn_cast<CStyleCastExpr>(E))
        return stable(C->getSubExpr(), Depth + 1);
    return isa<IntegerLiteral>(E);
}

const Expr *aliasInit(const VarDecl *V)
{
    if (isa<ParmVarDecl>(V) || !V->isLocalVarDecl() || V->isStaticLocal() ||
        !V->getType()->isPointerType() || !V->hasInit())
        return nullptr;
    const Expr *Init = V->getInit();
    if (!neverChanged(V) || !stable(Init, 0))
        return nullptr;
    return Init;
}

// E without parentheses and implicit casts, a substituted alias replaced by its initializer.
const Expr *resolved(const Expr *E, const ParamSubst *Subst)
{
    for (unsigned I = 0; I < 8; ++I) {
        E = E->IgnoreParenImpCasts();
        const auto *D = dyn_cast<DeclRefExpr>(E);
        const auto *V = D ? dyn_cast<VarDecl>(D->getDecl()) : nullptr;
        if (!V || (Subst && isa<ParmVarDecl>(V) && Subst->count(cast<ParmVarDecl>(V))))
            return E;
        const Expr *Init = aliasInit(V);
        if (!Init)
            return E;
        E = Init;
    }
    return E;
}

bool isAddrOf(const Expr *E)
{
    const auto *U = dyn_cast<UnaryOperator>(E);
    return U && U->getOpcode() == UO_AddrOf;
}

void canon(const Expr *E, const ParamSubst *Subst, std::string &Out)
{
    E = resolved(E, Subst);
    if (const auto *D = dyn_cast<DeclRefExpr>(E)) {
        if (Subst)
            if (const auto *P = dyn_cast<ParmVarDecl>(D->getDecl())) {
                auto It = Subst->find(P);
                if (It != Subst->end()) {
                    Out += It->second;
                    return;
                }
            }
        Out += D->getDecl()->getNameAsString();
        return;
    }
    if (const auto *M = dyn_cast<MemberExpr>(E)) {
        // (&x)->f is x.f
        const Expr *Base = resolved(M->getBase(), Subst);
        bool Arrow = M->isArrow();
        if (Arrow && isAddrOf(Base)) {
            Base = cast<UnaryOperator>(Base)->getSubExpr();
            Arrow = false;
        }
        canon(Base, Subst, Out);
        Out += Arrow ? "->" : ".";
        Out += M->getMemberDecl()->getNameAsString();
        return;
    }
    if (const auto *A = dyn_cast<ArraySubscriptExpr>(E)) {
        canon(A->getBase(), Subst, Out);
        Out += "[";
        canon(A->getIdx(), Subst, Out);
        Out += "]";
        return;
    }
    if (const auto *U = dyn_cast<UnaryOperator>(E)) {
        // *&x is x
        if (U->getOpcode() == UO_Deref)
            if (const Expr *Sub = resolved(U->getSubExpr(), Subst); isAddrOf(Sub)) {
                canon(cast<UnaryOperator>(Sub)->getSubExpr(), Subst, Out);
                return;
            }
        Out += "(";
        Out += UnaryOperator::getOpcodeStr(U->getOpcode()).str();
        canon(U->getSubExpr(), Subst, Out);
        Out += ")";
        return;
    }
    if (const auto *B = dyn_cast<BinaryOperator>(E)) {
        Out += "(";
        canon(B->getLHS(), Subst, Out);
        Out += " " + B->getOpcodeStr().str() + " ";
        canon(B->getRHS(), Subst, Out);
        Out += ")";
        return;
    }
    if (const auto *C = dyn_cast<ConditionalOperator>(E)) {
        Out += "(";
        canon(C->getCond(), Subst, Out);
        Out += " ? ";
        canon(C->getTrueExpr(), Subst, Out);
        Out += " : ";
        canon(C->getFalseExpr(), Subst, Out);
        Out += ")";
        return;
    }
    if (const auto *I = dyn_cast<IntegerLiteral>(E)) {
        Out += std::to_string(I->getValue().getLimitedValue());
        return;
    }
    if (const auto *C = dyn_cast<CStyleCastExpr>(E)) {
        Out += "((" + C->getTypeAsWritten().getAsString() + ")";
        canon(C->getSubExpr(), Subst, Out);
        Out += ")";
        return;
    }
    if (const auto *Call = dyn_cast<CallExpr>(E)) {
        canon(Call->getCallee(), Subst, Out);
        Out += "(";
        for (unsigned I = 0; I < Call->getNumArgs(); ++I) {
            if (I)
                Out += ", ";
            canon(Call->getArg(I), Subst, Out);
        }
        Out += ")";
        return;
    }
    Out += printed(E);
}

std::string tagName(const RecordDecl *RD)
{
    if (!RD->getName().empty())
        return RD->getNameAsString();
    if (const TypedefNameDecl *T = RD->getTypedefNameForAnonDecl())
        return T->getNameAsString();
    return "<anonymous>";
}

std::string fieldKey(const MemberExpr *M)
{
    const auto *F = dyn_cast<FieldDecl>(M->getMemberDecl());
    if (!F)
        return "unknown";
    return "field:" + tagName(F->getParent()) + "." + F->getNameAsString();
}

// var:/array: key of a variable, with the file that every translation unit agrees on: the
// definition for internal linkage, the first declaration (usually a header) otherwise.
std::string varKey(const char *Kind, const VarDecl *V, const FunctionDecl *Fn, const PathOf &Path)
{
    std::string Name = V->getNameAsString();
    if (V->isLocalVarDeclOrParm()) {
        const auto *Owner = dyn_cast_or_null<FunctionDecl>(V->getParentFunctionOrMethod());
        if (!Owner)
            Owner = Fn;
        Name = (Owner ? Owner->getNameAsString() : std::string("?")) + "." + Name;
        if (isa<ParmVarDecl>(V))
            return "param:" + Name;
        return std::string(Kind) + ":" + Path(V->getLocation()) + ":" + Name;
    }
    const VarDecl *Where = V->getFirstDecl();
    if (!V->hasExternalFormalLinkage())
        if (const VarDecl *Def = V->getDefinition())
            Where = Def;
    return std::string(Kind) + ":" + Path(Where->getLocation()) + ":" + Name;
}

} // namespace

const Expr *lockAlias(const VarDecl *V)
{
    return aliasInit(V);
}

std::string canonicalLock(const Expr *E, const ParamSubst *Subst)
{
    std::string Out;
    canon(E, Subst, Out);
    return Out;
}

std::string lockKey(const Expr *MutexPtr, const FunctionDecl *Fn, const PathOf &Path)
{
    const Expr *E = MutexPtr->IgnoreParenImpCasts();
    // &lock, &s->lock, &locks[i]
    if (const auto *U = dyn_cast<UnaryOperator>(E); U && U->getOpcode() == UO_AddrOf) {
        const Expr *X = U->getSubExpr()->IgnoreParenImpCasts();
        if (const auto *D = dyn_cast<DeclRefExpr>(X)) {
            if (const auto *V = dyn_cast<VarDecl>(D->getDecl())) {
                if (V->getType()->isArrayType())
                    return varKey("array", V, Fn, Path);
                return varKey("var", V, Fn, Path);
            }
            return "unknown";
        }
        if (const auto *M = dyn_cast<MemberExpr>(X))
            return fieldKey(M);
        if (const auto *A = dyn_cast<ArraySubscriptExpr>(X)) {
            const Expr *Base = A->getBase()->IgnoreParenImpCasts();
            if (const auto *D = dyn_cast<DeclRefExpr>(Base))
                if (const auto *V = dyn_cast<VarDecl>(D->getDecl())) {
                    if (isa<ParmVarDecl>(V))
                        return "param:" + (Fn ? Fn->getNameAsString() : std::string("?")) + "." +
                               V->getNameAsString();
                    return varKey("array", V, Fn, Path);
                }
            if (const auto *M = dyn_cast<MemberExpr>(Base))
                return fieldKey(M);
        }
        return "unknown";
    }
    // locks + i: an element of an array of locks.
    if (const auto *B = dyn_cast<BinaryOperator>(E); B && B->isAdditiveOp()) {
        const Expr *Base = B->getLHS()->IgnoreParenImpCasts();
        if (!Base->getType()->isPointerType())
            Base = B->getRHS()->IgnoreParenImpCasts();
        if (const auto *D = dyn_cast<DeclRefExpr>(Base))
            if (const auto *V = dyn_cast<VarDecl>(D->getDecl()))
                if (V->getType()->isArrayType() || !V->isLocalVarDeclOrParm())
                    return varKey("array", V, Fn, Path);
        return "unknown";
    }
    // A pointer parameter: the caller's lock.
    if (const auto *D = dyn_cast<DeclRefExpr>(E)) {
        if (const auto *P = dyn_cast<ParmVarDecl>(D->getDecl()))
            return "param:" + (Fn ? Fn->getNameAsString() : std::string("?")) + "." +
                   P->getNameAsString();
        if (const auto *V = dyn_cast<VarDecl>(D->getDecl()); V && V->getType()->isArrayType())
            return varKey("array", V, Fn, Path); // an array of locks decays to its first element
    }
    return "unknown";
}

std::string variableKey(const VarDecl *V, const FunctionDecl *Fn, const PathOf &Path)
{
    return varKey(V->getType()->isArrayType() ? "array" : "var", V, Fn, Path);
}

std::string lockName(const std::string &Written)
{
    llvm::StringRef S = llvm::StringRef(Written).trim();
    if (S.startswith("&"))
        S = S.drop_front().ltrim();
    if (S.startswith("(") && S.endswith(")"))
        S = S.drop_front().drop_back().trim();
    return S.str();
}

} // namespace locktune
