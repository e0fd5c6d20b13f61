#include "Extractor.h"

#include "Emitter.h"
#include "Lifetime.h"
#include "LockSites.h"
#include "LoopRotation.h"
#include "SectionChecks.h"
#include "SectionFinder.h"
#include "TUContext.h"
#include "ThreadIdentity.h"
#include "VarBinding.h"

#include "clang/AST/RecursiveASTVisitor.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

using namespace clang;

namespace locktune {

std::string reportPath(const std::string &Absolute, const std::string &Root)
{
    StringRef A(Absolute), R(Root);
    R.consume_back("/");
    if (!R.empty() && A.startswith(R) && A.size() > R.size() && A[R.size()] == '/')
        return A.drop_front(R.size() + 1).str();
    return Absolute;
}

namespace {

struct CallFinder : RecursiveASTVisitor<CallFinder> {
    std::vector<const CallExpr *> Calls;
    bool VisitCallExpr(CallExpr *C)
    {
        Calls.push_back(C);
        return true;
    }
};

// The lock operations of FD, in source order, with its parent map; null when it has none.
std::unique_ptr<FunctionContext> functionOps(ASTContext &Ctx, const SourceText &Src,
                                             LockCalls &Calls, const FunctionDecl *FD)
{
    const SourceManager &SM = Ctx.getSourceManager();
    CallFinder CF;
    CF.TraverseStmt(FD->getBody());
    auto F = std::make_unique<FunctionContext>(Ctx, Src, FD);
    for (const CallExpr *C : CF.Calls)
        if (std::optional<LockOp> Op = Calls.classify(C, FD)) {
            F->Ops.emplace(C, *Op);
            F->OpOrder.push_back(C);
        }
    if (F->Ops.empty())
        return nullptr;
    std::stable_sort(F->OpOrder.begin(), F->OpOrder.end(),
                     [&](const CallExpr *A, const CallExpr *B) {
                         return SM.isBeforeInTranslationUnit(SM.getExpansionLoc(A->getBeginLoc()),
                                                             SM.getExpansionLoc(B->getBeginLoc()));
                     });
    F->PM = std::make_unique<ParentMap>(FD->getBody());
    return F;
}

// The path of a location's file as the report writes it.
PathOf reportPathOf(const SourceManager &SM, const std::string &Root)
{
    return [&SM, Root](SourceLocation L) -> std::string {
        FileID FID = SM.getFileID(SM.getExpansionLoc(L));
        const FileEntry *FE = SM.getFileEntryForID(FID);
        if (!FE)
            return "<unknown>";
        llvm::SmallString<256> P(FE->getName());
        llvm::sys::fs::make_absolute(P);
        llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
        return reportPath(P.str().str(), Root);
    };
}

// Everything about one function, kept alive until the file is rendered (edits refer to it).
struct FunctionWork {
    std::unique_ptr<FunctionContext> F;
    std::vector<std::unique_ptr<Section>> Sections;
};

} // namespace

std::optional<std::string> Extractor::run(Report &R)
{
    std::map<const CallExpr *, std::string> Keep;
    while (true) {
        Report Pass;
        std::vector<const CallExpr *> Conflicts;
        std::optional<std::string> Out = runOnce(Pass, Keep, Conflicts);
        bool Again = false;
        for (const CallExpr *C : Conflicts)
            if (!Keep.count(C)) {
                Keep[C] = "locktune-extract could not rewrite this section without its edits "
                          "overlapping (an internal limit, please report it): kept";
                Again = true;
            }
        if (!Again || Conflicts.empty()) {
            R.Sections.insert(R.Sections.end(), Pass.Sections.begin(), Pass.Sections.end());
            R.Sites.insert(R.Sites.end(), Pass.Sites.begin(), Pass.Sites.end());
            R.Diagnostics.insert(R.Diagnostics.end(), Pass.Diagnostics.begin(),
                                 Pass.Diagnostics.end());
            R.FilesRewritten.insert(R.FilesRewritten.end(), Pass.FilesRewritten.begin(),
                                    Pass.FilesRewritten.end());
            return Out;
        }
    }
}

std::optional<std::string> Extractor::rotate(std::vector<Rotation> &Out)
{
    const SourceManager &SM = Ctx.getSourceManager();
    SourceText Src(SM, Ctx.getLangOpts());
    LockCalls Calls(Ctx, Src, reportPathOf(SM, Opts.SourceRoot), Opts.Wrappers);
    for (Decl *D : Ctx.getTranslationUnitDecl()->decls()) {
        auto *FD = dyn_cast<FunctionDecl>(D);
        if (!FD || !FD->doesThisDeclarationHaveABody() ||
            !SM.isWrittenInMainFile(SM.getExpansionLoc(FD->getBeginLoc())))
            continue;
        if (std::unique_ptr<FunctionContext> F = functionOps(Ctx, Src, Calls, FD))
            for (Rotation &R : findRotations(*F))
                Out.push_back(std::move(R));
    }
    if (Out.empty())
        return std::nullopt;
    return applyRotations(Src.buffer(), Out);
}

std::optional<std::string> Extractor::runOnce(Report &R,
                                              const std::map<const CallExpr *, std::string> &Keep,
                                              std::vector<const CallExpr *> &Conflicts)
{
    const SourceManager &SM = Ctx.getSourceManager();
    SourceText Src(SM, Ctx.getLangOpts());
    PathOf Path = reportPathOf(SM, Opts.SourceRoot);
    std::string FileName = Path(SM.getLocForStartOfFile(SM.getMainFileID()));
    LockCalls Calls(Ctx, Src, Path, Opts.Wrappers);
    ThreadIdentity Identity(Src, Opts.External);
    TUContext TU{Ctx, Src, Calls, Identity, Skipped};
    TU.MutexAttributes = mutexAttributesSet(Ctx, Src);
    EditContext FileEdits(Src);
    Emitter Emit(Ctx, Src, FileEdits, FileName);
    std::vector<FunctionWork> Work;
    std::set<const CallExpr *> Removed; // lock and unlock calls that became lt_execute
    bool NeedsErrno = false;            // an extracted section carries errno

    for (Decl *D : Ctx.getTranslationUnitDecl()->decls()) {
        auto *FD = dyn_cast<FunctionDecl>(D);
        if (!FD || !FD->doesThisDeclarationHaveABody())
            continue;
        if (!SM.isWrittenInMainFile(SM.getExpansionLoc(FD->getBeginLoc())))
            continue;
        FunctionWork W;
        W.F = functionOps(Ctx, Src, Calls, FD);
        if (!W.F)
            continue;
        FunctionContext &F = *W.F;
        F.Facts = collectFacts(FD, *F.PM, Src);
        F.FnBegin = Src.offset(FD->getBeginLoc());
        F.Cfg = std::make_unique<CfgIndex>(FD, Ctx);
        bool HaveCfg = F.Cfg->valid() && F.FnBegin;
        noteExcludedCode(F.Facts, FD, Src, Skipped);
        if (HaveCfg) {
            F.Flow = std::make_unique<VarFlow>(*F.Cfg, FD);
            F.FunctionWideReason = functionWideReason(F, TU);
        }

        unsigned Number = 0;
        for (const CallExpr *C : F.OpOrder) {
            const LockOp &Op = F.Ops.at(C);
            if (Op.Kind == OpKind::Unlock)
                continue;
            ++Number;
            auto S = std::make_unique<Section>();
            if (HaveCfg) {
                *S = findSection(F, Op);
            } else {
                S->Fn = FD;
                S->Lock = Op;
                S->Reason = "no control-flow graph for " + FD->getNameAsString() + "()";
            }
            S->Number = Number;
            if (S->Structured && !F.FunctionWideReason.empty())
                S->Reason = F.FunctionWideReason;
            W.Sections.push_back(std::move(S));
        }

        // Inner sections first: a section's binding sees what its extracted inner sections use.
        std::vector<Section *> Order;
        for (auto &S : W.Sections)
            if (S->Structured && S->Reason.empty())
                Order.push_back(S.get());
        std::stable_sort(Order.begin(), Order.end(), [](const Section *A, const Section *B) {
            return A->Whole.End - A->Whole.Begin < B->Whole.End - B->Whole.Begin;
        });
        auto nearestExtracted = [&](Section *S, unsigned Off) -> Section * {
            Section *Best = nullptr;
            for (auto &E : W.Sections)
                if (E.get() != S && E->Extract && E->inHeld(Off) &&
                    (!Best || Best->Body.contains(E->Body)))
                    Best = E.get();
            return Best;
        };
        for (Section *S : Order) {
            S->Children.clear();
            for (auto &D : W.Sections)
                if (D.get() != S && D->Extract && S->inHeld(D->Whole.Begin)) {
                    Section *Between = nearestExtracted(D.get(), D->Whole.Begin);
                    if (!Between || !S->inHeld(Between->Whole.Begin) || Between == S)
                        S->Children.push_back(D.get());
                }
            std::optional<std::string> Why;
            if (auto K = Keep.find(S->Lock.Call); K != Keep.end())
                Why = K->second;
            if (!Why)
                Why = checkSection(F, *S, TU);
            if (!Why) {
                Identity.analyze(F, *S);
                Why = bindVariables(F, *S);
            }
            if (!Why)
                Why = checkExcludedBindings(F, *S);
            if (!Why)
                Why = checkLifetimes(F, *S);
            if (!Why && S->InMacro) {
                // Its code is the macro's text: nothing in it can be edited.
                for (const Binding &B : S->Bindings)
                    if (B.Mode == BindMode::Pointer && !Why)
                        Why = "the section is written inside a macro and '" +
                              B.Var->getNameAsString() + "' must be passed by pointer (" + B.Why +
                              ")";
                if (!Why && !S->Hoists.empty())
                    Why = std::string("the section is written inside a macro and declares what "
                                      "the code after it uses");
                if (!Why && !S->Children.empty())
                    Why = std::string("the section is written inside a macro and holds another");
                for (auto &D : W.Sections)
                    if (!Why && D.get() != S && D->Structured && D->inHeld(S->Whole.Begin))
                        Why = std::string("the section is written inside a macro used inside "
                                          "another section");
            }
            if (!Why && S->Trylock && S->Flags)
                Why = "a trylock section that " + S->IdentityWhy +
                      " needs LT_EXEC_* flags, which lt_execute_trylock does not take";
            if (Why) {
                S->Extract = false;
                S->Reason = *Why;
                S->Bindings.clear();
                S->Hoists.clear();
            } else {
                S->Extract = true;
            }
        }
        std::vector<Section *> Extracted;
        for (auto &S : W.Sections)
            if (S->Extract)
                Extracted.push_back(S.get());
        for (Section *S : Extracted)
            S->Parent = nearestExtracted(S, S->Whole.Begin);
        for (Section *S : Extracted) {
            S->Children.clear();
            for (Section *C : Extracted)
                if (C->Parent == S)
                    S->Children.push_back(C);
        }
        Emit.emit(F, Extracted);

        // A lock held when the function returns, because a function it calls released it.
        for (auto &SP : W.Sections) {
            Section &S = *SP;
            if (S.Extract || S.Structured || S.Lock.Kind != OpKind::Lock)
                continue;
            std::optional<unsigned> LockAt = Src.offset(S.Lock.Call->getBeginLoc());
            for (const CallExpr *C : F.Facts.Calls) {
                const FunctionDecl *Callee = C->getDirectCallee();
                std::optional<unsigned> At = Src.offset(C->getBeginLoc());
                if (!Callee || !Callee->hasBody() || F.Ops.count(C) || !At || !LockAt ||
                    *At <= *LockAt || Calls.isWrapper(Callee))
                    continue;
                const std::string &P = TU.calleeLockProblem(Callee);
                if (P.find("releases " + S.Lock.Written) == 0) {
                    S.Reason = "calls " + Callee->getNameAsString() + "() at line " +
                               std::to_string(Src.line(*At)) + ", which " + P + " (" + S.Reason +
                               ")";
                    break;
                }
            }
        }

        // The report.
        const bool IsWrapper = Calls.isWrapper(FD);
        std::set<const CallExpr *> Claimed;
        for (auto &SP : W.Sections) {
            const Section &S = *SP;
            Claimed.insert(S.Unlocks.begin(), S.Unlocks.end());
            if (S.Extract) {
                NeedsErrno |= S.CarryErrno;
                Removed.insert(S.Lock.Call);
                Removed.insert(S.Unlocks.begin(), S.Unlocks.end());
            }
            SectionEntry E;
            SourceLocation L = SM.getExpansionLoc(S.Lock.Call->getBeginLoc());
            E.File = Path(L);
            E.Line = SM.getExpansionLineNumber(L);
            E.Column = SM.getExpansionColumnNumber(L);
            E.EndLines = S.EndLines;
            E.Function = FD->getNameAsString();
            E.Lock = S.Lock.Written;
            E.LockKey = S.Lock.Key;
            E.Wrapper = S.Lock.Wrapper;
            E.Extracted = S.Extract;
            E.Reason = S.Reason;
            if (IsWrapper && !S.Extract) {
                E.Kind = "wrapper";
                E.Reason = "lock wrapper: " + FD->getNameAsString() + "() takes " + S.Lock.Written +
                           " for its callers";
            }
            if (S.Extract) {
                for (const Binding &B : S.Bindings) {
                    std::string N = B.Var->getNameAsString();
                    if (B.Mode == BindMode::Pointer)
                        E.ByPointer.push_back(N);
                    else if (B.Mode == BindMode::Value && B.In)
                        E.Inputs.push_back(N);
                    if (B.Mode == BindMode::Local || B.Mode == BindMode::Moved)
                        E.Locals.push_back(N);
                    if (!B.OutAt.empty())
                        E.Outputs.push_back(N);
                }
                for (const Hoisted &H : S.Hoists)
                    if (!H.OutAt.empty())
                        E.Outputs.push_back(H.Var->getNameAsString());
                E.IdentityHandling = S.IdentityHandling;
                E.IdentityWhy = S.IdentityWhy;
                E.ExtractedFunction = S.FnName;
                if (S.Flags & OnCaller)
                    E.Flags.push_back("LT_EXEC_ON_CALLER");
                if (S.Flags & MayWait)
                    E.Flags.push_back("LT_EXEC_MAY_WAIT");
                E.EarlyExits = unsigned(S.Tails.size());
                E.Context = S.HasCtx ? (S.Union ? "union" : "struct") : "";
            }
            R.Sections.push_back(E);
        }
        // Unlocks no section accounts for: the section began in another function.
        for (const CallExpr *C : F.OpOrder) {
            const LockOp &Op = F.Ops.at(C);
            if (Op.Kind != OpKind::Unlock || Claimed.count(C))
                continue;
            SectionEntry E;
            SourceLocation L = SM.getExpansionLoc(C->getBeginLoc());
            E.File = Path(L);
            E.Line = SM.getExpansionLineNumber(L);
            E.Column = SM.getExpansionColumnNumber(L);
            E.EndLines = {E.Line};
            E.Function = FD->getNameAsString();
            E.Lock = Op.Written;
            E.LockKey = Op.Key;
            E.Wrapper = Op.Wrapper;
            std::optional<CfgPos> Pos = HaveCfg ? F.Cfg->find(C) : std::nullopt;
            bool Reached = false;
            if (Pos) {
                HeldWalk Wk(*F.Cfg, Src, Op.Written);
                Reached = !Wk.backward(
                    *Pos,
                    [&](const Stmt *X) {
                        const LockOp *O = F.op(X);
                        return O && O->Kind != OpKind::Unlock && O->Identity == Op.Identity;
                    },
                    [](unsigned) { return true; });
            }
            E.Kind = IsWrapper ? "wrapper" : "unlock-only";
            if (IsWrapper)
                E.Reason = "lock wrapper: " + FD->getNameAsString() + "() releases " + Op.Written +
                           " for its callers";
            else
                E.Reason = Reached ? "this unlock of " + Op.Written +
                                         " ends no critical section found in " +
                                         FD->getNameAsString() + "()"
                                   : "unlock of " + Op.Written + " with no lock before it in " +
                                         FD->getNameAsString() +
                                         "(): the critical section starts in another function";
            R.Sections.push_back(E);
        }
        Work.push_back(std::move(W));
    }

    collectLockSites(Ctx, Src, Calls, Path, R.Sites);

    // A static wrapper whose every call became lt_execute would now be an unused function
    // (-Wunused-function): say it may be unused, and leave it in place.
    struct FunctionRefs : RecursiveASTVisitor<FunctionRefs> {
        std::map<const FunctionDecl *, unsigned> Count;
        bool VisitDeclRefExpr(DeclRefExpr *E)
        {
            if (const auto *F = dyn_cast<FunctionDecl>(E->getDecl()))
                Count[F->getCanonicalDecl()]++;
            return true;
        }
    } Refs;
    Refs.TraverseDecl(Ctx.getTranslationUnitDecl());
    std::map<const FunctionDecl *, unsigned> Gone;
    for (const CallExpr *C : Removed)
        if (const FunctionDecl *F = C->getDirectCallee())
            Gone[F->getCanonicalDecl()]++;
    for (const auto &[F, N] : Gone) {
        const FunctionDecl *Def = F->getDefinition();
        if (!Def || F->hasExternalFormalLinkage() || Refs.Count[F] != N ||
            F->hasAttr<UnusedAttr>() || pthreadOpKind(F->getName()))
            continue;
        if (std::optional<unsigned> At = Src.offset(F->getBeginLoc());
            At && !F->getBeginLoc().isMacroID())
            FileEdits.insert(*At, [] { return std::string("__attribute__((unused)) "); });
    }

    // errno carried by code that does not see <errno.h>.
    if (NeedsErrno && !Ctx.Idents.get("errno").hasMacroDefinition()) {
        unsigned At = 0;
        if (LastInclude) {
            size_t NL = Src.buffer().find('\n', *LastInclude);
            At = NL == StringRef::npos ? unsigned(Src.buffer().size()) : unsigned(NL + 1);
        }
        FileEdits.insert(At, [] { return std::string("#include <errno.h>\n"); });
    }

    if (FileEdits.empty())
        return std::nullopt;
    std::string Out = FileEdits.render(Span{0, unsigned(Src.buffer().size())});
    if (Src.editConflict()) {
        // The sections whose edits overlapped are kept on the next pass.
        for (const void *O : Src.conflictOwners())
            Conflicts.push_back(static_cast<const Section *>(O)->Lock.Call);
        R.Diagnostics.push_back({FileName, 0,
                                 "internal error: overlapping edits; the file is not rewritten "
                                 "(please report it)"});
        return std::nullopt;
    }
    if (Out == Src.buffer())
        return std::nullopt;
    return Out;
}

} // namespace locktune
