#include "SectionChecks.h"

#include "SectionFinder.h"

#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Lex/Lexer.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace clang;

namespace locktune {

namespace {

std::string lineOf(const SourceText &Src, const Stmt *S)
{
    std::optional<unsigned> Off = Src.offset(S->getBeginLoc());
    return Off ? std::to_string(Src.line(*Off)) : "?";
}

bool heldStmt(const SourceText &Src, const Section &S, const Stmt *X)
{
    std::optional<unsigned> Off = Src.offset(X->getBeginLoc());
    return Off && S.inHeld(*Off);
}

bool isSetjmp(StringRef N)
{
    return N == "setjmp" || N == "_setjmp" || N == "sigsetjmp" || N == "__sigsetjmp" ||
           N == "savectx" || N == "vfork" || N == "getcontext";
}

// --- lock expression ------------------------------------------------------------------------
std::optional<std::string> checkLockExpression(const FunctionContext &F, const Section &S)
{
    if (S.Lock.Exec.empty())
        return S.Lock.ExecUnknown.empty() ? "the lock cannot be named for lt_execute"
                                          : S.Lock.ExecUnknown;
    // Variables the lock expression reads must keep their value through the section.
    struct VarFinder : RecursiveASTVisitor<VarFinder> {
        std::set<const VarDecl *> Vars;
        bool VisitDeclRefExpr(DeclRefExpr *E)
        {
            if (const auto *V = dyn_cast<VarDecl>(E->getDecl()))
                Vars.insert(V);
            return true;
        }
    } VF;
    for (const Expr *E : S.Lock.ExecVars)
        VF.TraverseStmt(const_cast<Expr *>(E));
    // A local pointer the lock is named through stands for its initializer (lockAlias): the
    // variables that reads count too, and none may be declared inside the section (a loop
    // around it would give them a new value between the lock and the unlock).
    for (std::set<const VarDecl *> Seen; Seen != VF.Vars;) {
        Seen = VF.Vars;
        for (const VarDecl *V : Seen)
            if (const Expr *Init = lockAlias(V))
                VF.TraverseStmt(const_cast<Expr *>(Init));
    }
    for (const VarDecl *V : VF.Vars)
        if (std::optional<unsigned> Off = F.Src.offset(V->getLocation());
            Off && V->isLocalVarDecl() && S.inHeld(*Off))
            return "the lock expression " + S.Lock.Written + " uses '" + V->getNameAsString() +
                   "', declared inside the section (line " + std::to_string(F.Src.line(*Off)) + ")";
    for (const VarRef &W : F.Facts.Refs)
        if (VF.Vars.count(W.Var) && W.Var->getType()->isScalarType() &&
            (W.Assigned || (W.AddrTaken && W.Var->isLocalVarDeclOrParm())) && S.inHeld(W.At) &&
            !S.ownUnlock(W.At))
            return "the lock expression " + S.Lock.Written + " uses '" + W.Var->getNameAsString() +
                   "', which the section changes (line " + std::to_string(F.Src.line(W.At)) + ")";
    return std::nullopt;
}

// --- labels and case labels -----------------------------------------------------------------
std::optional<std::string> checkLabels(const FunctionContext &F, const Section &S)
{
    for (const LabelStmt *L : F.Facts.Labels) {
        std::optional<unsigned> LOff = F.Src.offset(L->getBeginLoc());
        bool OnEnd = false;
        for (const LabelStmt *E : S.EndLabels)
            OnEnd |= E == L;
        if (!LOff || (!S.Body.contains(*LOff) && !OnEnd))
            continue;
        for (const GotoStmt *G : F.Facts.Gotos) {
            if (G->getLabel()->getStmt() != L)
                continue;
            std::optional<unsigned> GOff = F.Src.offset(G->getBeginLoc());
            if (!GOff || !S.inHeld(*GOff))
                return "the label '" + std::string(L->getName()) + "' (line " + lineOf(F.Src, L) +
                       ") is reached by a goto from outside the section (line " + lineOf(F.Src, G) +
                       ")";
        }
    }
    for (const auto &[Case, Switch] : F.Facts.SwitchOf) {
        std::optional<unsigned> COff = F.Src.offset(Case->getBeginLoc());
        std::optional<unsigned> SOff = F.Src.offset(Switch->getBeginLoc());
        if (COff && S.Body.contains(*COff) && (!SOff || !S.Body.contains(*SOff)))
            return "the case label at line " + lineOf(F.Src, Case) +
                   " belongs to a switch outside the section";
    }
    return std::nullopt;
}

// The direct calls of the section's held region, with their callees' names.
std::vector<std::pair<const CallExpr *, StringRef>> heldCalls(const FunctionContext &F,
                                                              const Section &S)
{
    std::vector<std::pair<const CallExpr *, StringRef>> Out;
    for (const CallExpr *C : F.Facts.Calls)
        if (const FunctionDecl *Fn = C->getDirectCallee(); Fn && heldStmt(F.Src, S, C))
            Out.push_back({C, Fn->getName()});
    return Out;
}

bool isVarArgs(StringRef Callee)
{
    return Callee.startswith("__builtin_va_") || Callee == "va_start" || Callee == "va_arg";
}

// --- variable arguments ----------------------------------------------------------------------
//
// A variadic function's section may start, read and end a va_list of its own: `va_start(ap,
// last); log(e, ap); va_end(ap);` where nothing outside the section uses `ap` (memcached's
// logger_log).  The extracted function cannot va_start (it is not variadic), so the caller
// starts a list before the call and ends it after, and each va_start becomes a va_copy of that
// list: the same arguments from the first, each time.  Any other use of the variable arguments
// in the section (va_copy, va_arg or va_end of another list) keeps it.
std::optional<std::vector<const CallExpr *>> sectionVaStarts(const FunctionContext &F,
                                                             const Section &S)
{
    auto listVar = [](const Expr *E) -> const VarDecl * {
        const auto *D = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
        const auto *V = D ? dyn_cast<VarDecl>(D->getDecl()) : nullptr;
        return V && V->isLocalVarDecl() && !V->isStaticLocal() ? V : nullptr;
    };
    auto ownedBySection = [&](const VarDecl *V) {
        for (const VarRef &R : F.Facts.Refs)
            if (R.Var == V && !S.inHeld(R.At))
                return false;
        return true;
    };
    std::vector<const CallExpr *> Starts;
    std::set<const VarDecl *> Started;
    std::vector<const VarDecl *> Used;
    for (auto [C, N] : heldCalls(F, S)) {
        if (!isVarArgs(N))
            continue;
        const VarDecl *V = C->getNumArgs() ? listVar(C->getArg(0)) : nullptr;
        if (N == "__builtin_va_start" && V && F.Fn->isVariadic() && !S.Trylock &&
            F.Src.span(C->getSourceRange())) {
            Starts.push_back(C);
            Started.insert(V);
        } else if (N == "__builtin_va_end" && V) {
            Used.push_back(V);
        } else {
            return std::nullopt;
        }
    }
    struct VaArgs : RecursiveASTVisitor<VaArgs> {
        std::vector<const Expr *> Lists;
        bool VisitVAArgExpr(VAArgExpr *E)
        {
            Lists.push_back(E->getSubExpr());
            return true;
        }
    } A;
    for (unsigned I = S.BodyFirst; I <= S.Last && I < S.Block->size(); ++I)
        A.TraverseStmt(S.Block->body_begin()[I]);
    for (const Expr *L : A.Lists) {
        const VarDecl *V = listVar(L);
        if (!V)
            return std::nullopt;
        Used.push_back(V);
    }
    for (const VarDecl *V : Used)
        if (!Started.count(V))
            return std::nullopt;
    for (const VarDecl *V : Started)
        if (!ownedBySection(V))
            return std::nullopt;
    return Starts;
}

// --- builtins that tie code to its stack frame -------------------------------------------------
std::optional<std::string> checkBuiltins(const FunctionContext &F, const Section &S)
{
    std::optional<std::vector<const CallExpr *>> OwnLists = sectionVaStarts(F, S);
    for (auto [C, N] : heldCalls(F, S)) {
        if (N == "alloca" || N == "__builtin_alloca" || N == "__builtin_alloca_with_align")
            return "alloca() at line " + lineOf(F.Src, C) +
                   ": the memory would be freed when the extracted function returns";
        if (isVarArgs(N) && !OwnLists)
            return "the section uses the function's variable arguments (line " + lineOf(F.Src, C) +
                   ")";
        if (N == "__builtin_frame_address" || N == "__builtin_return_address")
            return N.str() + "() at line " + lineOf(F.Src, C) + " depends on the stack frame";
        if (N.contains("longjmp"))
            return N.str() + "() at line " + lineOf(F.Src, C);
    }
    // va_arg is an expression, not a call.
    struct VaFinder : RecursiveASTVisitor<VaFinder> {
        bool Found = false;
        bool VisitVAArgExpr(VAArgExpr *)
        {
            return !(Found = true);
        }
    };
    for (unsigned I = S.BodyFirst; I <= S.Last && I < S.Block->size() && !OwnLists; ++I) {
        VaFinder V;
        V.TraverseStmt(S.Block->body_begin()[I]);
        if (V.Found)
            return std::string("the section uses va_arg()");
    }
    return std::nullopt;
}

// --- code excluded by the preprocessor --------------------------------------------------------
//
// Only the configuration being compiled is analysed; code that #if leaves out moves into the
// extracted function as text, where another configuration compiles it.  There it must mean
// what it meant: no jump (its target may be outside), no __func__, and the variables it names
// must be bound under their own names with their values (checkExcludedBindings, after the
// bindings; the function's liveness counts every variable excluded code names as live
// everywhere, so such a variable is copied in and back).  A name that is not a variable here
// but that excluded code outside the section uses too is probably a variable of the other
// configuration, which the extracted function would not have.
std::optional<std::string> checkExcludedCode(const FunctionContext &F, const Section &S,
                                             const TUContext &TU)
{
    auto inSection = [&](Span Sk) { return S.Body.Begin < Sk.End && Sk.Begin < S.Body.End; };
    std::set<std::string> PlainOutside;
    for (const FunctionFacts::Excluded &E : F.Facts.ExcludedCode)
        if (!inSection(E.Where))
            PlainOutside.insert(E.Plain.begin(), E.Plain.end());
    for (const FunctionFacts::Excluded &E : F.Facts.ExcludedCode) {
        if (!inSection(E.Where))
            continue;
        std::string Line = std::to_string(F.Src.line(E.Where.Begin));
        for (const std::string &Id : E.Leaves)
            return "code excluded by the preprocessor (line " + Line + ") uses '" + Id +
                   "': only the configuration being compiled can be analysed";
        for (const std::string &Id : E.Plain)
            if (!F.Facts.LocalNames.count(Id) && PlainOutside.count(Id) &&
                TU.Ctx.getTranslationUnitDecl()
                    ->lookup(DeclarationName(&TU.Ctx.Idents.get(Id)))
                    .empty())
                return "code excluded by the preprocessor (line " + Line + ") uses '" + Id +
                       "', which excluded code outside the section uses too: a variable of "
                       "another configuration cannot be analysed";
    }
    return std::nullopt;
}

// --- preprocessor conditionals across the section's edge ------------------------------------
//
// The section's code moves into a function as text, and the lock and unlock statements become
// one call.  A conditional the code holds whole moves with it; one that the section's edge cuts
// does not: libmicrohttpd writes `#if THREADS` / lock / `#endif`, the code, then `#if THREADS` /
// unlock / `#endif`, and the text between the two calls starts with an #endif and ends with an
// #if.  Extracted, the function would not compile, and the caller's one call would sit in the
// lock's conditional, so another configuration would not run the code at all.
std::optional<std::string> checkConditionals(const FunctionContext &F, const Section &S)
{
    std::string Text = F.Src.text(S.Body).str();
    LangOptions LO = F.Src.langOpts();
    Lexer L(SourceLocation(), LO, Text.data(), Text.data(), Text.data() + Text.size());
    L.SetCommentRetentionState(false);
    // A raw lexer over a buffer with no file location gives each token the location whose
    // encoding is its offset in the buffer.
    auto lineAt = [&](const Token &T) {
        return std::to_string(F.Src.line(S.Body.Begin + T.getLocation().getRawEncoding()));
    };
    int Depth = 0;
    bool Hash = false;
    std::string OpenedAt;
    for (Token Tok; L.LexFromRawLexer(Tok), !Tok.is(tok::eof);) {
        if (Tok.isAtStartOfLine()) {
            Hash = Tok.is(tok::hash);
            continue;
        }
        if (!Hash)
            continue;
        Hash = false;
        if (!Tok.is(tok::raw_identifier))
            continue;
        StringRef D = Tok.getRawIdentifier();
        if (D == "if" || D == "ifdef" || D == "ifndef") {
            if (Depth++ == 0)
                OpenedAt = lineAt(Tok);
        } else if (D == "endif" || D == "else" || D.startswith("elif")) {
            if (Depth == 0)
                return "the #" + D.str() + " at line " + lineAt(Tok) +
                       " belongs to a conditional opened before the section (the lock call is "
                       "inside #if ... #endif of its own): extracted, the section would cut it";
            if (D == "endif")
                --Depth;
        }
    }
    if (Depth > 0)
        return "the #if at line " + OpenedAt +
               " is closed after the section (the unlock call is inside #if ... #endif of its "
               "own): extracted, the section would cut it";
    return std::nullopt;
}

// --- names and types visible above the function ------------------------------------------------
struct NameFinder : RecursiveASTVisitor<NameFinder> {
    const FunctionContext *F = nullptr;
    const Section *S = nullptr;
    std::optional<std::string> Problem;

    bool visibleAbove(const Decl *D)
    {
        for (const Decl *R : D->redecls())
            if (R->getDeclContext()->isFileContext() &&
                F->Ctx.getSourceManager().isBeforeInTranslationUnit(R->getLocation(),
                                                                    F->Fn->getBeginLoc()))
                return true;
        return false;
    }
    bool localType(const Decl *D)
    {
        return D->getDeclContext()->isFunctionOrMethod();
    }

    bool VisitDeclRefExpr(DeclRefExpr *E)
    {
        if (Problem || !heldStmt(F->Src, *S, E))
            return true;
        const ValueDecl *D = E->getDecl();
        if (const auto *V = dyn_cast<VarDecl>(D)) {
            if (V->isLocalVarDeclOrParm())
                return true;
        } else if (const auto *EC = dyn_cast<EnumConstantDecl>(D)) {
            if (localType(cast<Decl>(EC->getDeclContext())))
                Problem = "the enumerator '" + EC->getNameAsString() + "' is declared inside " +
                          F->Fn->getNameAsString() + "()";
            return true;
        } else if (!isa<FunctionDecl>(D)) {
            return true;
        }
        if (const auto *FD = dyn_cast<FunctionDecl>(D); FD && FD->getBuiltinID())
            return true;
        if (!visibleAbove(D))
            Problem = "'" + D->getNameAsString() + "' (line " + lineOf(F->Src, E) +
                      ") is not declared above " + F->Fn->getNameAsString() + "()";
        return true;
    }
    bool VisitTypeLoc(TypeLoc TL)
    {
        if (Problem)
            return true;
        const Decl *D = nullptr;
        if (const auto *T = TL.getTypePtr()->getAs<TypedefType>())
            D = T->getDecl();
        else if (const auto *T = TL.getTypePtr()->getAs<TagType>())
            D = T->getDecl();
        if (D && localType(D))
            Problem = "the type '" + cast<NamedDecl>(D)->getNameAsString() +
                      "' is declared inside " + F->Fn->getNameAsString() + "()";
        return true;
    }
};

std::optional<std::string> checkVisibility(const FunctionContext &F, const Section &S)
{
    NameFinder NF;
    NF.F = &F;
    NF.S = &S;
    for (unsigned I = S.BodyFirst; I <= S.Last && I < S.Block->size(); ++I)
        NF.TraverseStmt(const_cast<Stmt *>(S.Block->body_begin()[I]));
    return NF.Problem;
}

// --- other locks ------------------------------------------------------------------------------
// C is the lock or the unlock of a for-statement lock macro whose body cannot leave with the
// lock held: the control-flow graph, which does not know the values of the macro's variables,
// sees a loop that takes the lock again; the macro takes and releases it once.
bool cleanForLock(FunctionContext &F, const CallExpr *C)
{
    std::optional<ForLock> FL = forLockOf(F, C);
    if (!FL)
        return false;
    Section T = findSection(F, F.Ops.at(FL->Lock));
    return T.Structured && T.ForLock;
}

std::optional<std::string> checkOtherLocks(FunctionContext &F, const Section &S)
{
    auto inRegion = [&](unsigned Off) { return S.inHeld(Off); };
    for (const CallExpr *C : F.OpOrder) {
        const LockOp &Op = F.Ops.at(C);
        std::optional<unsigned> Off = F.Src.offset(C->getBeginLoc());
        if (!Off || !S.inHeld(*Off) || Op.Identity == S.Lock.Identity)
            continue;
        if (cleanForLock(F, C)) {
            // Taken and released inside the section when the macro's header lies in it.
            std::optional<ForLock> FL = forLockOf(F, C);
            std::optional<unsigned> B = F.Src.offset(FL->Outer->getBeginLoc());
            if (B && S.inHeld(*B))
                continue;
        }
        std::optional<CfgPos> Pos = F.Cfg->find(C);
        if (!Pos)
            continue;
        HeldWalk W(*F.Cfg, F.Src, Op.Written);
        auto sameUnlock = [&](const Stmt *X) {
            const LockOp *O = F.op(X);
            return O && O->Kind == OpKind::Unlock && O->Identity == Op.Identity;
        };
        auto sameLock = [&](const Stmt *X) {
            const LockOp *O = F.op(X);
            return O && O->Kind != OpKind::Unlock && O->Identity == Op.Identity;
        };
        if (Op.Kind == OpKind::Unlock) {
            if (std::optional<std::string> E = W.backward(*Pos, sameLock, inRegion))
                return "the unlock of " + Op.Written + " at line " +
                       std::to_string(F.Src.line(*Off)) +
                       " releases a lock taken before the section";
            continue;
        }
        std::vector<CfgPos> From{CfgPos{Pos->Block, Pos->Index + 1}};
        if (Op.Kind == OpKind::Trylock) {
            std::optional<std::vector<CfgPos>> Succ = trylockSuccess(*F.Cfg, C, *F.PM);
            if (!Succ)
                return "the trylock of " + Op.Written + " at line " +
                       std::to_string(F.Src.line(*Off)) + " is not tested in an if";
            From = *Succ;
        }
        WalkResult R = W.forward(From, sameUnlock, sameLock, inRegion);
        if (R.Escape)
            return Op.Written + ", taken at line " + std::to_string(F.Src.line(*Off)) +
                   ", is not released inside the section (" + *R.Escape + ")";
    }
    // A condition wait on a lock other than the section's must wait on one taken inside it.
    for (const CallExpr *C : F.Facts.Calls) {
        const Expr *M = LockCalls::condWaitMutex(C);
        std::optional<unsigned> Off = F.Src.offset(C->getBeginLoc());
        if (!M || !Off || !S.inHeld(*Off) || canonicalLock(M) == S.Lock.Identity)
            continue;
        std::optional<CfgPos> Pos = F.Cfg->find(C);
        if (!Pos)
            continue;
        std::string Id = canonicalLock(M);
        HeldWalk W(*F.Cfg, F.Src, "the mutex");
        auto lockOf = [&](const Stmt *X) {
            const LockOp *O = F.op(X);
            return O && O->Kind != OpKind::Unlock && O->Identity == Id;
        };
        if (W.backward(*Pos, lockOf, inRegion))
            return "the condition wait at line " + std::to_string(F.Src.line(*Off)) +
                   " uses a mutex taken before the section";
    }
    return std::nullopt;
}

// --- callees ----------------------------------------------------------------------------------
std::optional<std::string> checkCallees(const FunctionContext &F, const Section &S, TUContext &TU)
{
    for (const CallExpr *C : F.Facts.Calls) {
        if (!heldStmt(F.Src, S, C) || F.Ops.count(C))
            continue;
        const FunctionDecl *Callee = C->getDirectCallee();
        if (!Callee || !Callee->hasBody() || TU.Calls.isWrapper(Callee))
            continue;
        const std::string &P = TU.calleeLockProblem(Callee);
        if (!P.empty())
            return "calls " + Callee->getNameAsString() + "() at line " + lineOf(F.Src, C) +
                   ", which " + P;
    }
    return std::nullopt;
}

// --- checked lock calls ------------------------------------------------------------------------
// `if (pthread_mutex_lock(&m) != 0) abort();`: lt_execute cannot hand a lock error back, so
// the check goes away with the lock call.  A mutex of the default type cannot fail to lock
// in a correct program (EINVAL only for a mutex that is not one, which is undefined); the
// types that fail by design (EDEADLK, EAGAIN, EOWNERDEAD) are made with attributes.
std::optional<std::string> checkCheckedLock(const FunctionContext &F, const Section &S,
                                            const TUContext &TU)
{
    if (S.CheckedLock && !TU.MutexAttributes.empty())
        return "the result of the lock call at line " + lineOf(F.Src, S.Lock.Call) +
               " is checked and this file makes mutexes whose lock can fail (" +
               TU.MutexAttributes + "): lt_execute has no error to return to the check";
    // The failure branches that go away with their calls must not leave a variable or a label
    // unused (-Wunused-variable, -Wunused-parameter, -Wunused-label).
    std::vector<const CallExpr *> Calls{S.Lock.Call};
    Calls.insert(Calls.end(), S.Unlocks.begin(), S.Unlocks.end());
    std::set<const Stmt *> Dropped; // the failure branches
    for (const CallExpr *C : Calls)
        if (const IfStmt *I = checkedIf(F, C))
            Dropped.insert(I->getThen());
    auto dropped = [&](const Stmt *X) {
        for (; X; X = F.PM->getParent(X))
            if (Dropped.count(X))
                return true;
        return false;
    };
    for (const VarRef &R : F.Facts.Refs)
        if (R.Var->isLocalVarDeclOrParm() && dropped(R.Ref))
            return "the check of a lock or unlock call uses '" + R.Var->getNameAsString() +
                   "' (line " + std::to_string(F.Src.line(R.At)) +
                   "): the check goes away with the call and could leave it unused";
    for (const GotoStmt *G : F.Facts.Gotos) {
        if (!dropped(G))
            continue;
        bool Other = false;
        for (const GotoStmt *H : F.Facts.Gotos)
            Other |= H->getLabel() == G->getLabel() && !dropped(H);
        if (!Other)
            return "the check at line " + lineOf(F.Src, G) + " is the only goto to '" +
                   G->getLabel()->getName().str() +
                   "': the check goes away with its call and would leave the label unused";
    }
    return std::nullopt;
}

} // namespace

std::string mutexAttributesSet(ASTContext &Ctx, const SourceText &Src)
{
    struct Finder : RecursiveASTVisitor<Finder> {
        const SourceManager *SM = nullptr;
        const LangOptions *LO = nullptr;
        std::string Found;
        std::string where(SourceLocation L)
        {
            L = SM->getExpansionLoc(L);
            std::string File = SM->isWrittenInMainFile(L)
                                   ? ""
                                   : llvm::sys::path::filename(SM->getFilename(L)).str() + ":";
            return " at " + (File.empty() ? "line " : File) +
                   std::to_string(SM->getExpansionLineNumber(L));
        }
        bool VisitCallExpr(CallExpr *C)
        {
            if (const FunctionDecl *F = C->getDirectCallee())
                if (Found.empty() && F->getName().startswith("pthread_mutexattr_set"))
                    Found = F->getName().str() + "()" + where(C->getBeginLoc());
            return Found.empty();
        }
        bool VisitVarDecl(VarDecl *V)
        {
            const Expr *I = V->getInit();
            if (!Found.empty() || !I || !I->getBeginLoc().isMacroID())
                return Found.empty();
            CharSourceRange R = Lexer::makeFileCharRange(
                CharSourceRange::getTokenRange(I->getSourceRange()), *SM, *LO);
            StringRef T = R.isValid() ? Lexer::getSourceText(R, *SM, *LO) : "";
            if (T.contains("_MUTEX_INITIALIZER_NP"))
                Found = T.trim().str() + where(I->getBeginLoc());
            return Found.empty();
        }
    } F;
    F.SM = &Ctx.getSourceManager();
    F.LO = &Ctx.getLangOpts();
    (void)Src;
    F.TraverseDecl(Ctx.getTranslationUnitDecl());
    return F.Found;
}

const std::string &TUContext::calleeLockProblem(const FunctionDecl *F)
{
    F = F->getCanonicalDecl();
    auto It = Memo.find(F);
    if (It != Memo.end())
        return It->second;
    std::string &Out = Memo[F];
    const FunctionDecl *Def = F->getDefinition();
    if (!Def || !Def->hasBody())
        return Out;
    FunctionContext FC(Ctx, Src, Def);
    struct OpFinder : RecursiveASTVisitor<OpFinder> {
        std::vector<const CallExpr *> Calls;
        bool VisitCallExpr(CallExpr *C)
        {
            Calls.push_back(C);
            return true;
        }
    } Finder;
    Finder.TraverseStmt(Def->getBody());
    for (const CallExpr *C : Finder.Calls)
        if (std::optional<LockOp> Op = Calls.classify(C, Def)) {
            FC.Ops.emplace(C, *Op);
            FC.OpOrder.push_back(C);
        }
    if (FC.Ops.empty())
        return Out;
    FC.PM = std::make_unique<ParentMap>(Def->getBody());
    FC.Cfg = std::make_unique<CfgIndex>(Def, Ctx);
    if (!FC.Cfg->valid())
        return Out;
    for (const CallExpr *C : FC.OpOrder) {
        const LockOp &Op = FC.Ops.at(C);
        std::optional<CfgPos> Pos = FC.Cfg->find(C);
        if (!Pos || Op.Kind == OpKind::Trylock || cleanForLock(FC, C))
            continue;
        HeldWalk W(*FC.Cfg, Src, Op.Written);
        auto same = [&](OpKind K) {
            return [&FC, &Op, K](const Stmt *X) {
                const LockOp *O = FC.op(X);
                return O &&
                       (K == OpKind::Unlock ? O->Kind == OpKind::Unlock
                                            : O->Kind != OpKind::Unlock) &&
                       O->Identity == Op.Identity;
            };
        };
        if (Op.Kind == OpKind::Unlock) {
            if (W.backward(*Pos, same(OpKind::Lock), [](unsigned) { return true; })) {
                Out = "releases " + Op.Written + " without taking it";
                break;
            }
        } else {
            WalkResult R = W.forward(
                {CfgPos{Pos->Block, Pos->Index + 1}}, same(OpKind::Unlock),
                [](const Stmt *) { return false; }, [](unsigned) { return true; });
            if (R.Escape) {
                Out = "takes " + Op.Written + " and " + *R.Escape;
                break;
            }
        }
    }
    return Out;
}

std::string functionWideReason(const FunctionContext &F, TUContext &)
{
    // A function whose name a macro makes (libuv's `TEST_IMPL(name) { ... }`) is extracted
    // like any other when its body is written in the file: the extracted functions go before
    // the macro's use.  Not when the macro writes the braces too.
    const Stmt *Body = F.Fn->getBody();
    if (F.Fn->getLocation().isMacroID() &&
        (!Body || Body->getBeginLoc().isMacroID() || Body->getEndLoc().isMacroID()))
        return F.Fn->getNameAsString() + "() is defined by a macro, its body included";
    for (const CallExpr *C : F.Facts.Calls)
        if (const FunctionDecl *Callee = C->getDirectCallee())
            if (isSetjmp(Callee->getName()))
                return F.Fn->getNameAsString() + "() calls " + Callee->getNameAsString() +
                       "() (line " + lineOf(F.Src, C) +
                       "): moving code out of it could change which locals survive a longjmp";
    if (F.Facts.ComputedGoto)
        return F.Fn->getNameAsString() +
               "() uses computed goto (label addresses cannot leave the function)";
    return "";
}

std::optional<std::string> checkSection(FunctionContext &F, Section &S, TUContext &TU)
{
    if (std::optional<std::string> R = checkLockExpression(F, S))
        return R;
    if (std::optional<std::string> R = checkLabels(F, S))
        return R;
    if (std::optional<std::string> R = checkBuiltins(F, S))
        return R;
    if (std::optional<std::string> R = checkConditionals(F, S))
        return R;
    if (std::optional<std::string> R = checkExcludedCode(F, S, TU))
        return R;
    if (std::optional<std::string> R = checkVisibility(F, S))
        return R;
    if (std::optional<std::string> R = checkOtherLocks(F, S))
        return R;
    if (std::optional<std::string> R = checkCallees(F, S, TU))
        return R;
    if (std::optional<std::string> R = checkCheckedLock(F, S, TU))
        return R;
    if (std::optional<std::vector<const CallExpr *>> V = sectionVaStarts(F, S))
        S.VaStarts = *V;
    return std::nullopt;
}

std::optional<std::string> checkExcludedBindings(const FunctionContext &F, const Section &S)
{
    for (const FunctionFacts::Excluded &E : F.Facts.ExcludedCode) {
        if (!(S.Body.Begin < E.Where.End && E.Where.Begin < S.Body.End))
            continue;
        std::string Line = std::to_string(F.Src.line(E.Where.Begin));
        for (const std::string &Id : E.Names) {
            if (!F.Facts.LocalNames.count(Id))
                continue;
            const Binding *B = nullptr;
            unsigned Named = 0;
            for (const Binding &X : S.Bindings)
                if (X.Var->getName() == Id)
                    B = &X, ++Named;
            bool Inside = false;
            for (const VarRef &R : F.Facts.Refs)
                if (R.Var->getName() == Id)
                    if (std::optional<unsigned> D = F.Src.offset(R.Var->getLocation()))
                        Inside |= S.Body.contains(*D);
            if (Inside && !B)
                continue; // declared in the section: it moves with the code
            std::string Why;
            if (!B)
                Why = "which the compiled section does not use";
            else if (Named > 1)
                Why = "a name two of the section's variables have";
            else if (B->Mode == BindMode::Pointer)
                Why = "which the section reaches through a pointer (" + B->Why +
                      "): the excluded code would not be rewritten";
            else if (B->Mode == BindMode::Local)
                Why = "which the extracted function gets as a fresh variable";
            if (!Why.empty())
                return "code excluded by the preprocessor (line " + Line + ") uses '" + Id + "', " +
                       Why;
        }
    }
    return std::nullopt;
}

} // namespace locktune
