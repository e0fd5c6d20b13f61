#include "VarBinding.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ParentMap.h"
#include "clang/Lex/Lexer.h"

#include <algorithm>

#include <map>
#include <set>

using namespace clang;

namespace locktune {

namespace {

struct Use {
    bool Read = false;  // evaluated (not only in sizeof)
    bool Reads = false; // its value is read (not only assigned)
    bool Write = false;
    bool Unevaluated = false;
    unsigned First = ~0u; // first use, for a stable order
};

bool declaredIn(const FunctionContext &F, const VarDecl *V)
{
    if (const auto *P = dyn_cast<ParmVarDecl>(V))
        return P->getDeclContext() == F.Fn;
    return V->getParentFunctionOrMethod() == F.Fn;
}

// True when the type mentions a type declared inside a function.
bool usesLocalType(QualType T)
{
    while (true) {
        if (const auto *TT = T->getAs<TypedefType>())
            if (TT->getDecl()->getDeclContext()->isFunctionOrMethod())
                return true;
        if (const auto *Tag = T->getAs<TagType>())
            return Tag->getDecl()->getDeclContext()->isFunctionOrMethod() ||
                   (Tag->getDecl()->getName().empty() &&
                    !Tag->getDecl()->getTypedefNameForAnonDecl());
        if (const auto *P = T->getAs<PointerType>()) {
            T = P->getPointeeType();
            continue;
        }
        if (const auto *A = T->getAsArrayTypeUnsafe()) {
            T = A->getElementType();
            continue;
        }
        return false;
    }
}

// Can the CFG come back to the section's lock after leaving the section (a loop around it)?
bool inLoop(const FunctionContext &F, const Section &S)
{
    std::optional<CfgPos> Lock = F.Cfg->find(S.Lock.Call);
    if (!Lock)
        return true;
    std::vector<const CFGBlock *> Work;
    for (const Tail &T : S.Tails)
        Work.push_back(T.Exit.Block);
    for (const NormalEnd &E : S.Ends)
        Work.push_back(E.Exit.Block);
    std::set<const CFGBlock *> Seen;
    bool First = true;
    while (!Work.empty()) {
        const CFGBlock *B = Work.back();
        Work.pop_back();
        if (!First && B == Lock->Block)
            return true;
        if (!Seen.insert(B).second)
            continue;
        for (const CFGBlock::AdjacentBlock &A : B->succs())
            if (const CFGBlock *Succ = A.getReachableBlock()) {
                if (Succ == Lock->Block)
                    return true;
                Work.push_back(Succ);
            }
        First = false;
    }
    return false;
}

std::string uniqueField(std::set<std::string> &Taken, const std::string &Want)
{
    std::string Name = Want;
    for (unsigned I = 2; Taken.count(Name); ++I)
        Name = Want + "_" + std::to_string(I);
    Taken.insert(Name);
    return Name;
}

} // namespace

const DeclStmt *declStmtOf(const FunctionContext &F, const VarDecl *V)
{
    for (const DeclStmt *D : F.Facts.Decls)
        for (const Decl *X : D->decls())
            if (X == V)
                return D;
    return nullptr;
}

std::optional<Span> declaratorSpan(const FunctionContext &F, const DeclStmt *DS, const VarDecl *V)
{
    if (!DS || DS->isSingleDecl())
        return std::nullopt;
    std::vector<const VarDecl *> Vars;
    for (const Decl *D : DS->decls()) {
        const auto *X = dyn_cast<VarDecl>(D);
        if (!X || X->getLocation().isMacroID() || X->getEndLoc().isMacroID())
            return std::nullopt;
        Vars.push_back(X);
    }
    const SourceManager &SM = F.Src.sm();
    const LangOptions &LO = F.Src.langOpts();
    auto endOf = [&](const VarDecl *X) -> std::optional<unsigned> {
        std::optional<unsigned> O = F.Src.offset(X->getEndLoc());
        if (!O)
            return std::nullopt;
        return *O + Lexer::MeasureTokenLength(X->getEndLoc(), SM, LO);
    };
    size_t I = size_t(std::find(Vars.begin(), Vars.end(), V) - Vars.begin());
    if (I == Vars.size())
        return std::nullopt;
    StringRef Buf = F.Src.buffer();
    Span Cut;
    if (I > 0) {
        std::optional<unsigned> PrevEnd = endOf(Vars[I - 1]), End = endOf(V);
        if (!PrevEnd || !End)
            return std::nullopt;
        Cut = Span{*PrevEnd, *End}; // ", v"
    } else {
        std::optional<unsigned> Name = F.Src.offset(V->getLocation()), End = endOf(V);
        if (!Name || !End)
            return std::nullopt;
        unsigned Begin = *Name;
        while (Begin > 0 && (Buf[Begin - 1] == '*' || Buf[Begin - 1] == ' '))
            --Begin;
        while (Begin < *Name && Buf[Begin] == ' ')
            ++Begin;
        unsigned After = *End;
        while (After < Buf.size() && Buf[After] == ' ')
            ++After;
        if (After >= Buf.size() || Buf[After] != ',')
            return std::nullopt;
        ++After;
        while (After < Buf.size() && Buf[After] == ' ')
            ++After;
        Cut = Span{Begin, After}; // "*v, "
    }
    StringRef Text = F.Src.text(Cut);
    if (Text.contains('(') || Text.contains(')') || Text.contains('\n') || Text.contains('='))
        return std::nullopt;
    return Cut;
}

std::optional<std::vector<Span>> declaratorCuts(const FunctionContext &F, const DeclStmt *DS,
                                                const std::vector<const VarDecl *> &Gone)
{
    std::optional<Span> Whole = DS ? F.Src.stmtSpan(DS) : std::nullopt;
    if (!Whole)
        return std::nullopt;
    std::vector<const VarDecl *> Vars;
    for (const Decl *D : DS->decls()) {
        const auto *X = dyn_cast<VarDecl>(D);
        if (!X)
            return std::nullopt;
        Vars.push_back(X);
    }
    std::vector<bool> Cut(Vars.size(), false);
    for (const VarDecl *V : Gone) {
        auto It = std::find(Vars.begin(), Vars.end(), V);
        if (It == Vars.end())
            return std::nullopt;
        Cut[size_t(It - Vars.begin())] = true;
    }
    if (std::all_of(Cut.begin(), Cut.end(), [](bool B) { return B; }))
        return std::vector<Span>{*Whole};
    for (size_t I = 0; I < Vars.size(); ++I)
        if (Cut[I] && !declaratorSpan(F, DS, Vars[I]))
            return std::nullopt;
    const SourceManager &SM = F.Src.sm();
    const LangOptions &LO = F.Src.langOpts();
    StringRef Buf = F.Src.buffer();
    // Where declarator K starts (its '*'s included) and ends.
    auto begin = [&](size_t K) -> std::optional<unsigned> {
        std::optional<unsigned> Name = F.Src.offset(Vars[K]->getLocation());
        if (!Name)
            return std::nullopt;
        unsigned B = *Name;
        while (B > 0 && (Buf[B - 1] == '*' || Buf[B - 1] == ' '))
            --B;
        while (B < *Name && Buf[B] == ' ')
            ++B;
        return B;
    };
    auto end = [&](size_t K) -> std::optional<unsigned> {
        std::optional<unsigned> O = F.Src.offset(Vars[K]->getEndLoc());
        if (!O)
            return std::nullopt;
        return *O + Lexer::MeasureTokenLength(Vars[K]->getEndLoc(), SM, LO);
    };
    std::vector<Span> Out;
    for (size_t I = 0; I < Vars.size();) {
        if (!Cut[I]) {
            ++I;
            continue;
        }
        size_t J = I;
        while (J + 1 < Vars.size() && Cut[J + 1])
            ++J;
        std::optional<unsigned> B, E;
        if (J + 1 < Vars.size()) { // "*a, *b, " before a declarator that stays
            B = begin(I);
            E = begin(J + 1);
        } else { // ", *a, *b" after one that stays
            B = end(I - 1);
            E = end(J);
        }
        if (!B || !E || *B >= *E)
            return std::nullopt;
        Span C{*B, *E};
        StringRef Text = F.Src.text(C);
        if (Text.contains('(') || Text.contains(')') || Text.contains('\n') || Text.contains('='))
            return std::nullopt;
        Out.push_back(C);
        I = J + 1;
    }
    return Out;
}

std::optional<std::string> bindVariables(FunctionContext &F, Section &S)
{
    S.Bindings.clear();
    S.Hoists.clear();
    std::optional<CfgPos> Entry = F.Cfg->find(S.Lock.Call);
    if (!Entry)
        return "the lock call is unreachable";

    auto inExtractedChild = [&](unsigned Off) {
        for (const Section *C : S.Children)
            if (C->Extract && C->inHeld(Off))
                return true;
        return false;
    };

    // What S's own code (and the call sites of the sections extracted inside it) uses.
    std::map<const VarDecl *, Use> Uses;
    for (const VarRef &R : F.Facts.Refs) {
        if (!S.inHeld(R.At) || inExtractedChild(R.At) || S.ownUnlock(R.At))
            continue;
        Use &U = Uses[R.Var];
        U.First = std::min(U.First, R.At);
        if (R.Unevaluated) {
            U.Unevaluated = true;
            continue;
        }
        U.Read = true;
        U.Reads |= !R.PureWrite;
        U.Write |= R.Write || R.AddrTaken;
    }
    for (const Section *C : S.Children) {
        if (!C->Extract)
            continue;
        for (const Binding &B : C->Bindings) {
            if (B.Mode == BindMode::Local || B.Mode == BindMode::Moved)
                continue;
            Use &U = Uses[B.Var];
            U.First = std::min(U.First, C->Whole.Begin);
            U.Read = true;
            U.Reads |= B.In || B.Mode == BindMode::Pointer;
            U.Write |= B.Mode == BindMode::Pointer || !B.OutAt.empty();
        }
    }

    auto liveAtExit = [&](const VarDecl *V, unsigned Code) {
        if (Code > 0)
            return F.Flow->liveBefore(S.Tails[Code - 1].Exit, V);
        for (const NormalEnd &E : S.Ends)
            if (F.Flow->liveBefore(E.Exit, V))
                return true;
        return false;
    };
    auto outAt = [&](const VarDecl *V) {
        std::set<unsigned> Out;
        if (liveAtExit(V, 0))
            Out.insert(0);
        for (const Tail &T : S.Tails)
            if (liveAtExit(V, T.Code))
                Out.insert(T.Code);
        return Out;
    };
    auto usedOutside = [&](const VarDecl *V) {
        for (const VarRef &R : F.Facts.Refs)
            if (R.Var == V && !S.inHeld(R.At))
                return true;
        return false;
    };
    const bool Loop = inLoop(F, S);

    std::vector<std::pair<unsigned, const VarDecl *>> Order;
    for (const auto &[V, U] : Uses)
        Order.push_back({U.First, V});
    std::sort(Order.begin(), Order.end());

    std::set<std::string> InNames, OutNames;
    for (const auto &[At, V] : Order) {
        const Use &U = Uses[V];
        if (!declaredIn(F, V))
            continue; // a global: reachable by name
        std::optional<unsigned> DeclAt = F.Src.offset(V->getLocation());
        if (!isa<ParmVarDecl>(V) && DeclAt && S.inHeld(*DeclAt))
            continue; // declared in the section: a local of the extracted function
        std::string Name = V->getNameAsString();
        QualType T = V->getType();
        if (T->isVariablyModifiedType())
            return "uses the variable-length array '" + Name + "' declared before the section";
        if (usesLocalType(T))
            return "the type of '" + Name + "' is declared inside " + F.Fn->getNameAsString() +
                   "() or has no name";
        Binding B;
        B.Var = V;
        std::string PtrWhy;
        if (V->isStaticLocal())
            PtrWhy = "static local";
        else if (V->hasExternalStorage())
            PtrWhy = "declared extern inside the function";
        else if (T->isArrayType())
            PtrWhy = "array";
        else if (T->isRecordType())
            PtrWhy = T->isUnionType() ? "union" : "struct";
        else if (F.Facts.AddrTaken.count(V))
            PtrWhy = "its address is taken";
        else if (T.isVolatileQualified())
            PtrWhy = "volatile";

        const DeclStmt *DS = isa<ParmVarDecl>(V) ? nullptr : declStmtOf(F, V);
        bool Movable = DS && (DS->isSingleDecl() || declaratorSpan(F, DS, V)) && !V->hasInit() &&
                       !V->isStaticLocal() && !V->hasExternalStorage() && !usedOutside(V) &&
                       F.Src.stmtSpan(DS) && !S.Whole.contains(F.Src.stmtSpan(DS)->Begin) &&
                       (!PtrWhy.empty() ? !Loop && (T->isArrayType() || T->isRecordType()) &&
                                              !F.Facts.AddrTaken.count(V)
                                        : true);
        // Code the preprocessor left out names V: another configuration may read or write it
        // there.  Inside the section it sees the extracted function's V: copied in (unless V
        // has no value yet on any path to the section: no initializer, nothing before the
        // section names it, no loop around it, no goto) and, where the code after reads it, copied
        // back.  After the section (or anywhere, in a loop or with a goto) it reads the function's
        // V: copied back at every exit.
        bool ExclInside = false, ExclAfter = false, ExclBefore = false;
        for (const FunctionFacts::Excluded &E : F.Facts.ExcludedCode) {
            if (!std::count(E.Names.begin(), E.Names.end(), Name))
                continue;
            bool Overlaps = S.Body.Begin < E.Where.End && E.Where.Begin < S.Body.End;
            ExclInside |= Overlaps;
            ExclAfter |= !Overlaps && (E.Where.Begin >= S.Whole.End || Loop ||
                                       !F.Facts.Gotos.empty()); // may run after it
            ExclBefore |= !Overlaps && E.Where.Begin < S.Whole.Begin;
        }
        bool LiveIn = F.Flow->liveBefore(*Entry, V);
        if (ExclInside || ExclAfter) {
            bool NoValueYet = !Loop && F.Facts.Gotos.empty() && !isa<ParmVarDecl>(V) &&
                              !V->hasInit() && !ExclBefore;
            for (const VarRef &R : F.Facts.Refs)
                NoValueYet &= !(R.Var == V && R.At < S.Whole.Begin);
            LiveIn |= !NoValueYet;
            Movable &= !ExclAfter; // the code after the section declares nothing then
        }
        if (!PtrWhy.empty()) {
            if (Movable) {
                B.Mode = BindMode::Moved;
            } else {
                B.Mode = BindMode::Pointer;
                B.Why = PtrWhy;
                B.In = true;
            }
        } else if (!U.Read) {
            // Only in sizeof/_Alignof: the function needs the name, not the value.  The
            // caller must still use its declaration (-Wunused-variable).
            if (Movable) {
                B.Mode = BindMode::Moved;
            } else if (usedOutside(V)) {
                B.Mode = BindMode::Local;
            } else if (V->hasInit() || isa<ParmVarDecl>(V)) {
                B.Mode = BindMode::Value;
                B.In = true;
            } else {
                B.Mode = BindMode::Pointer;
                B.Why = "used only in sizeof, declared together with other variables";
                B.In = true;
            }
        } else {
            std::set<unsigned> Out = U.Write || ExclInside ? outAt(V) : std::set<unsigned>{};
            if (ExclAfter && (U.Write || ExclInside)) {
                Out.insert(0);
                for (const Tail &T : S.Tails)
                    Out.insert(T.Code);
            }
            if (LiveIn && !F.Flow->assignedBefore(*Entry, V)) {
                B.Mode = BindMode::Pointer;
                B.Why = "may have no value when the section starts";
                B.In = true;
            } else if (LiveIn || !Out.empty()) {
                B.Mode = BindMode::Value;
                B.In = LiveIn;
                B.OutAt = Out;
            } else if (isa<ParmVarDecl>(V)) {
                B.Mode = BindMode::Value; // keeps the parameter used by the caller
                B.In = true;
            } else if (Movable) {
                B.Mode = BindMode::Moved;
            } else if (usedOutside(V) && U.Reads) {
                B.Mode = BindMode::Local;
            } else if (usedOutside(V)) {
                // Only assigned here (a value nobody reads): a fresh local would be set but
                // unused; the section writes the function's own variable instead.
                B.Mode = BindMode::Pointer;
                B.Why = "assigned in the section, its value unused";
                B.In = true;
            } else if (V->hasInit()) {
                B.Mode = BindMode::Value; // keeps the declaration used
                B.In = true;
            } else {
                B.Mode = BindMode::Pointer;
                B.Why = "declared together with other variables";
                B.In = true;
            }
        }
        if (B.Mode == BindMode::Pointer) {
            if (V->getStorageClass() == SC_Register)
                return "'" + Name + "' is declared register but must be passed by pointer (" +
                       B.Why + ")";
            for (const VarRef &R : F.Facts.Refs)
                if (R.Var == V && S.Body.contains(R.At) && !R.Spelled)
                    return "'" + Name + "' must be passed by pointer (" + B.Why +
                           ") but is used inside a macro at line " +
                           std::to_string(F.Src.line(R.At));
        }
        if (B.In || B.Mode == BindMode::Pointer)
            B.Field = uniqueField(InNames, Name);
        if (!B.OutAt.empty()) {
            if (B.Field.empty() || OutNames.count(B.Field))
                B.Field = uniqueField(OutNames, Name);
            else
                OutNames.insert(B.Field);
        }
        S.Bindings.push_back(B);
    }

    // Variables declared in the section and needed after it.
    for (const DeclStmt *D : F.Facts.Decls) {
        std::optional<unsigned> Off = F.Src.offset(D->getBeginLoc());
        if (!Off || !S.inHeld(*Off) || inExtractedChild(*Off))
            continue;
        bool TopLevel = F.PM->getParent(D) == S.Block;
        for (const Decl *X : D->decls()) {
            const auto *V = dyn_cast<VarDecl>(X);
            if (!V)
                continue;
            bool After = false;
            std::set<unsigned> InTails;
            for (const VarRef &R : F.Facts.Refs) {
                if (R.Var != V)
                    continue;
                if (!S.Whole.contains(R.At))
                    After = true;
                for (const Tail &T : S.Tails)
                    if (T.Code_.contains(R.At))
                        InTails.insert(T.Code);
            }
            if (!After && InTails.empty())
                continue;
            std::string Name = V->getNameAsString();
            if (V->isStaticLocal() || V->getType()->isArrayType() ||
                V->getType()->isVariablyModifiedType())
                return "'" + Name + "', declared in the section, is used after it";
            if (F.Facts.AddrTaken.count(V))
                return "the address of '" + Name + "', declared in the section, is used after it";
            if (usesLocalType(V->getType()))
                return "the type of '" + Name + "' is declared inside " + F.Fn->getNameAsString() +
                       "()";
            for (const Binding &B : S.Bindings)
                if (B.Var->getName() == V->getName())
                    return "'" + Name + "', declared in the section, hides another '" + Name +
                           "' the section uses";
            Hoisted H;
            H.Var = V;
            H.AfterSection = TopLevel;
            if (!TopLevel)
                H.Tails = InTails;
            for (unsigned Code = 0; Code <= S.Tails.size(); ++Code) {
                bool Needed = Code == 0 ? After || TopLevel : InTails.count(Code) || TopLevel;
                if (Needed && liveAtExit(V, Code))
                    H.OutAt.insert(Code);
            }
            if (!H.OutAt.empty())
                H.Field = uniqueField(OutNames, Name);
            S.Hoists.push_back(H);
        }
    }
    return std::nullopt;
}

} // namespace locktune
