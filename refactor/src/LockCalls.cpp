#include "LockCalls.h"
#include "WrapperShape.h"

#include "clang/AST/PrettyPrinter.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Lex/Lexer.h"
#include "llvm/Support/raw_ostream.h"

using namespace clang;

namespace locktune {

std::optional<OpKind> pthreadOpKind(llvm::StringRef Name)
{
    if (Name == "pthread_mutex_lock" || Name == "lt_mutex_lock")
        return OpKind::Lock;
    if (Name == "pthread_mutex_unlock" || Name == "lt_mutex_unlock")
        return OpKind::Unlock;
    if (Name == "pthread_mutex_trylock" || Name == "lt_mutex_trylock" ||
        Name == "pthread_mutex_timedlock" || Name == "lt_mutex_timedlock" ||
        Name == "pthread_mutex_clocklock")
        return OpKind::Trylock; // acquisitions that may fail
    return std::nullopt;
}

std::optional<std::string> parseWrapperSpec(llvm::StringRef Text, std::string &Name,
                                            WrapperSpec &Spec)
{
    auto [N, Rest] = Text.split('=');
    N = N.trim();
    if (N.empty() || Rest.empty())
        return "--lock-wrapper " + Text.str() + ": expected NAME=lock|unlock|trylock[:EXPR]";
    for (char C : N)
        if (!(isalnum(static_cast<unsigned char>(C)) || C == '_') ||
            isdigit(static_cast<unsigned char>(N[0])))
            return "--lock-wrapper " + Text.str() + ": '" + N.str() + "' is not a C identifier";
    auto [Role, Expr] = Rest.split(':');
    Role = Role.trim();
    if (Role == "lock")
        Spec.Role = OpKind::Lock;
    else if (Role == "unlock")
        Spec.Role = OpKind::Unlock;
    else if (Role == "trylock")
        Spec.Role = OpKind::Trylock;
    else
        return "--lock-wrapper " + Text.str() + ": role must be lock, unlock or trylock, not '" +
               Role.str() + "'";
    if (Rest.contains(':')) {
        if (Expr.trim().empty())
            return "--lock-wrapper " + Text.str() + ": empty lock expression after ':'";
        Spec.Expr = Expr.trim().str();
    }
    Name = N.str();
    return std::nullopt;
}

LockCalls::LockCalls(ASTContext &Ctx, const SourceText &Src, PathOf Path,
                     const std::map<std::string, WrapperSpec> &Named)
    : Ctx(Ctx), Src(Src), Path(std::move(Path)), Named(Named)
{
}

std::string LockCalls::written(const Expr *E) const
{
    if (std::optional<std::string> W = Src.written(E->getSourceRange()))
        return *W;
    // Outside the main file or built by a macro: the expression as Clang prints it.
    CharSourceRange R =
        Lexer::makeFileCharRange(CharSourceRange::getTokenRange(E->getSourceRange()),
                                 Ctx.getSourceManager(), Ctx.getLangOpts());
    if (R.isValid())
        return Lexer::getSourceText(R, Ctx.getSourceManager(), Ctx.getLangOpts()).str();
    std::string S;
    llvm::raw_string_ostream OS(S);
    E->printPretty(OS, nullptr, PrintingPolicy(Ctx.getLangOpts()));
    return OS.str();
}

const LockCalls::Derived &LockCalls::derive(const FunctionDecl *F)
{
    F = F->getCanonicalDecl();
    auto It = Cache.find(F);
    if (It != Cache.end())
        return It->second;
    Derived &D = Cache[F];
    const FunctionDecl *Def = F->getDefinition();
    if (!Def || !Def->hasBody())
        return D;
    // One lock call, possibly with checks around it (WrapperShape.h).
    std::optional<WrapperShape> Shape = lockWrapperShape(Def, Ctx);
    if (!Shape)
        return D;
    const CallExpr *Inner = Shape->Inner;
    std::optional<OpKind> K = Shape->Kind;
    const Expr *Arg = Inner->getArg(0);
    // The argument's text as written in the wrapper, with each parameter replaced by a
    // reference to the caller's argument.
    const SourceManager &SM = Ctx.getSourceManager();
    CharSourceRange R = Lexer::makeFileCharRange(
        CharSourceRange::getTokenRange(Arg->getSourceRange()), SM, Ctx.getLangOpts());
    if (R.isInvalid())
        return D;
    StringRef Text = Lexer::getSourceText(R, SM, Ctx.getLangOpts());
    std::map<std::string, unsigned> Params;
    for (unsigned I = 0; I < Def->getNumParams(); ++I)
        Params[Def->getParamDecl(I)->getNameAsString()] = I;
    std::string Copy = Text.str(); // the raw lexer wants a NUL after the last byte
    Lexer L(R.getBegin(), Ctx.getLangOpts(), Copy.data(), Copy.data(), Copy.data() + Copy.size());
    Token Tok;
    unsigned Base = SM.getFileOffset(R.getBegin()), Done = 0;
    tok::TokenKind Prev = tok::unknown;
    std::vector<LockPiece> Pieces;
    std::vector<unsigned> Index;
    while (true) {
        L.LexFromRawLexer(Tok);
        if (Tok.is(tok::eof))
            break;
        unsigned Off = SM.getFileOffset(Tok.getLocation()) - Base;
        if (Tok.is(tok::raw_identifier) && Prev != tok::period && Prev != tok::arrow) {
            auto P = Params.find(Tok.getRawIdentifier().str());
            if (P != Params.end()) {
                Pieces.push_back(LockPiece{Text.slice(Done, Off).str(), nullptr});
                Pieces.push_back(LockPiece{"", nullptr});
                Index.push_back(unsigned(Pieces.size() - 1)); // the slot...
                Index.push_back(P->second);                   // ...takes this argument
                Done = Off + Tok.getLength();
            }
        }
        Prev = Tok.getKind();
    }
    Pieces.push_back(LockPiece{Text.substr(Done).str(), nullptr});
    D.Valid = true;
    D.Kind = *K;
    D.Inner = Inner;
    D.Template = std::move(Pieces);
    D.ArgIndex = std::move(Index); // pairs: piece position, argument number
    return D;
}

bool LockCalls::isWrapper(const FunctionDecl *F)
{
    if (Named.count(F->getNameAsString()))
        return true;
    return derive(F).Valid;
}

namespace {
// Every declaration an expression refers to that is not a parameter of Owner.
struct RefFinder : RecursiveASTVisitor<RefFinder> {
    std::vector<const ValueDecl *> Refs;
    bool VisitDeclRefExpr(DeclRefExpr *E)
    {
        Refs.push_back(E->getDecl());
        return true;
    }
};

bool isMutexPointer(QualType T)
{
    const auto *P = T->getAs<PointerType>();
    if (!P)
        return false;
    std::string S = P->getPointeeType().getUnqualifiedType().getAsString();
    return S == "pthread_mutex_t" || S == "lt_mutex_t" || S == "struct lt_mutex" ||
           S == "union pthread_mutex_t";
}

bool hasCallOrSideEffect(const Expr *E, const ASTContext &Ctx)
{
    return E->HasSideEffects(Ctx, /*IncludePossibleEffects=*/false);
}
} // namespace

std::optional<LockOp> LockCalls::direct(OpKind K, const CallExpr *Call, const FunctionDecl *Fn)
{
    LockOp Op;
    Op.Kind = K;
    Op.Call = Call;
    const Expr *M = Call->getArg(0);
    Op.Identity = canonicalLock(M);
    Op.Written = written(M);
    Op.Key = lockKey(M, Fn, Path);
    Op.Exec.push_back(LockPiece{"", M});
    Op.ExecVars.push_back(M);
    if (hasCallOrSideEffect(M, Ctx)) {
        Op.Exec.clear();
        Op.ExecUnknown = "the lock expression '" + Op.Written +
                         "' has side effects: lt_execute would evaluate it once, not twice";
    }
    return Op;
}

std::optional<LockOp> LockCalls::classify(const CallExpr *Call, const FunctionDecl *Fn)
{
    const FunctionDecl *Callee = Call->getDirectCallee();
    if (!Callee)
        return std::nullopt;
    std::string Name = Callee->getNameAsString();
    if (std::optional<OpKind> K = pthreadOpKind(Name)) {
        if (Call->getNumArgs() < 1)
            return std::nullopt;
        return direct(*K, Call, Fn);
    }
    auto NamedIt = Named.find(Name);
    std::string WrapperName = Name;
    // A macro named with --lock-wrapper whose expansion starts with this call
    // (`#define LOCK(x) my_acquire(&(x)->spin)`): the call performs the macro's role.
    if (NamedIt == Named.end() && Call->getBeginLoc().isMacroID()) {
        const SourceManager &SM = Ctx.getSourceManager();
        for (SourceLocation L = Call->getBeginLoc(); L.isMacroID();
             L = SM.getImmediateMacroCallerLoc(L)) {
            if (!Lexer::isAtStartOfMacroExpansion(L, SM, Ctx.getLangOpts()))
                break;
            StringRef Macro = Lexer::getImmediateMacroName(L, SM, Ctx.getLangOpts());
            auto It = Named.find(Macro.str());
            if (It != Named.end()) {
                NamedIt = It;
                WrapperName = Macro.str();
                break;
            }
        }
    }
    const Derived &D = derive(Callee);
    if (NamedIt == Named.end() && !D.Valid)
        return std::nullopt;

    LockOp Op;
    Op.Call = Call;
    Op.Wrapper = WrapperName;
    Op.Kind = NamedIt != Named.end() ? NamedIt->second.Role : D.Kind;
    Op.Written = written(Call);
    for (unsigned I = 0; I < Call->getNumArgs(); ++I)
        Op.ExecVars.push_back(Call->getArg(I));
    std::string Args;
    for (unsigned I = 0; I < Call->getNumArgs(); ++I)
        Args += (I ? ", " : "") + canonicalLock(Call->getArg(I));

    auto argPiece = [&](unsigned I) -> LockPiece {
        return LockPiece{"", I < Call->getNumArgs() ? Call->getArg(I) : nullptr};
    };

    if (NamedIt != Named.end() && NamedIt->second.Expr) {
        // --lock-wrapper NAME=ROLE:EXPR, $1 $2 ... for the arguments.
        StringRef T = *NamedIt->second.Expr;
        std::string Lit, Ident;
        bool Bad = false;
        while (!T.empty()) {
            if (T[0] == '$' && T.size() > 1 && isdigit(static_cast<unsigned char>(T[1]))) {
                unsigned N = 0;
                size_t I = 1;
                while (I < T.size() && isdigit(static_cast<unsigned char>(T[I])))
                    N = N * 10 + unsigned(T[I++] - '0');
                if (N == 0 || N > Call->getNumArgs()) {
                    Bad = true;
                    break;
                }
                Op.Exec.push_back(LockPiece{Lit, nullptr});
                Op.Exec.push_back(argPiece(N - 1));
                Ident += "(" + canonicalLock(Call->getArg(N - 1)) + ")";
                Lit.clear();
                T = T.drop_front(I);
                continue;
            }
            if (!isspace(static_cast<unsigned char>(T[0])))
                Ident += T[0];
            Lit += T[0];
            T = T.drop_front();
        }
        Op.Exec.push_back(LockPiece{Lit, nullptr});
        Op.Identity = "expr:" + Ident;
        if (Bad) {
            Op.Exec.clear();
            Op.ExecUnknown = "--lock-wrapper " + Name + ": the expression names an argument " +
                             Name + "() does not have";
        }
        // Every name in the expression must mean something here: a macro, or something
        // declared above the function (a static lock of another file is not).
        if (!Op.Exec.empty()) {
            StringRef X = *NamedIt->second.Expr;
            char Prev = 0;
            for (size_t I = 0; I < X.size();) {
                if (!(isalpha(static_cast<unsigned char>(X[I])) || X[I] == '_')) {
                    if (!isspace(static_cast<unsigned char>(X[I])))
                        Prev = X[I];
                    ++I;
                    continue;
                }
                size_t J = I;
                while (J < X.size() && (isalnum(static_cast<unsigned char>(X[J])) || X[J] == '_'))
                    ++J;
                StringRef Id = X.slice(I, J);
                bool Member = Prev == '.' || Prev == '>';
                Prev = 'a';
                I = J;
                // A function (`lt_lock_of_item_lock($1)`) may be declared by a header the
                // rewrite adds (locktune_config.h declares locktune rewrite's lock accessors).
                bool Called = X.substr(J).ltrim().startswith("(");
                if (Member || Called)
                    continue;
                IdentifierInfo &II = Ctx.Idents.get(Id);
                if (II.hasMacroDefinition() || II.isKeyword(Ctx.getLangOpts()))
                    continue;
                bool Found = false;
                for (const NamedDecl *D :
                     Ctx.getTranslationUnitDecl()->lookup(DeclarationName(&II)))
                    Found |= !Fn || Ctx.getSourceManager().isBeforeInTranslationUnit(
                                        D->getLocation(), Fn->getBeginLoc());
                if (!Found) {
                    Op.Exec.clear();
                    Op.ExecUnknown = "--lock-wrapper " + Name + ": '" + Id.str() +
                                     "' is not declared before " +
                                     (Fn ? Fn->getNameAsString() + "()" : "here") + " in this file";
                    break;
                }
            }
        }
        // A key for the common shapes `&name` and `&name[...]`.
        StringRef E = StringRef(*NamedIt->second.Expr).trim();
        Op.Key = "unknown";
        if (E.consume_front("&")) {
            E = E.ltrim();
            size_t End = 0;
            while (End < E.size() && (isalnum(static_cast<unsigned char>(E[End])) || E[End] == '_'))
                ++End;
            StringRef Id = E.take_front(End), After = E.drop_front(End).ltrim();
            if (!Id.empty() && (After.empty() || After.startswith("["))) {
                auto R = Ctx.getTranslationUnitDecl()->lookup(DeclarationName(&Ctx.Idents.get(Id)));
                for (const NamedDecl *ND : R)
                    if (const auto *V = dyn_cast<VarDecl>(ND)) {
                        std::string File = Path(V->getFirstDecl()->getLocation());
                        if (!V->hasExternalFormalLinkage())
                            if (const VarDecl *Def = V->getDefinition())
                                File = Path(Def->getLocation());
                        bool Array = After.startswith("[") || V->getType()->isArrayType();
                        Op.Key = std::string(Array ? "array:" : "var:") + File + ":" + Id.str();
                        break;
                    }
            }
        }
    } else if (D.Valid && (NamedIt == Named.end() || NamedIt->second.Role == D.Kind)) {
        // A wrapper defined here: its body names the lock in terms of its parameters.
        const FunctionDecl *Def = Callee->getDefinition();
        ParamSubst Subst;
        for (unsigned I = 0; I < Def->getNumParams() && I < Call->getNumArgs(); ++I)
            Subst[Def->getParamDecl(I)] = canonicalLock(Call->getArg(I));
        const Expr *InnerArg = D.Inner->getArg(0);
        Op.Identity = canonicalLock(InnerArg, &Subst);
        Op.Key = lockKey(InnerArg, Def, Path);
        // A wrapper that locks its parameter itself (`mythread_mutex_lock(mutex)`) locks the
        // caller's argument: the key is the argument's, which joins the section to the lock's
        // site (a parameter's key names no site).
        if (const auto *R = dyn_cast<DeclRefExpr>(InnerArg->IgnoreParenImpCasts()))
            if (const auto *P = dyn_cast<ParmVarDecl>(R->getDecl()))
                if (P->getFunctionScopeIndex() < Call->getNumArgs())
                    Op.Key = lockKey(Call->getArg(P->getFunctionScopeIndex()), Fn, Path);
        // pieces: D.Template with argument slots filled
        std::vector<LockPiece> Pieces = D.Template;
        for (size_t I = 0; I + 1 < D.ArgIndex.size(); I += 2)
            Pieces[D.ArgIndex[I]] = argPiece(D.ArgIndex[I + 1]);
        Op.Exec = std::move(Pieces);
        // Everything the lock expression names besides the parameters must be visible where
        // the section's function is.
        RefFinder RF;
        RF.TraverseStmt(const_cast<Expr *>(InnerArg));
        for (const ValueDecl *VD : RF.Refs) {
            if (isa<ParmVarDecl>(VD))
                continue;
            bool Visible = false;
            for (const Decl *R : VD->redecls())
                if (R->getDeclContext()->isFileContext() && Fn &&
                    Ctx.getSourceManager().isBeforeInTranslationUnit(R->getLocation(),
                                                                     Fn->getBeginLoc()))
                    Visible = true;
            if (!Visible) {
                Op.Exec.clear();
                Op.ExecUnknown = "the lock taken by " + Name + "() (" + written(InnerArg) +
                                 ") names '" + VD->getNameAsString() +
                                 "', which is not declared before " +
                                 (Fn ? Fn->getNameAsString() : std::string("this function")) + "()";
                break;
            }
        }
    } else if (Call->getNumArgs() >= 1 && isMutexPointer(Call->getArg(0)->getType())) {
        // A wrapper that takes the lock itself.
        const Expr *M = Call->getArg(0);
        Op.Identity = canonicalLock(M);
        Op.Key = lockKey(M, Fn, Path);
        Op.Exec.push_back(LockPiece{"", M});
    } else {
        Op.Identity = "wrapper(" + Args + ")";
        Op.Key = "unknown";
        Op.ExecUnknown = "the lock is chosen inside " + Name +
                         "(), defined elsewhere; name it with --lock-wrapper " + Name + "=" +
                         (Op.Kind == OpKind::Lock     ? "lock"
                          : Op.Kind == OpKind::Unlock ? "unlock"
                                                      : "trylock") +
                         ":EXPR";
    }
    if (!Op.Exec.empty())
        for (const Expr *A : Op.ExecVars)
            if (hasCallOrSideEffect(A, Ctx)) {
                Op.Exec.clear();
                Op.ExecUnknown = "the argument '" + written(A) + "' of " + Name +
                                 "() has side effects: lt_execute would evaluate it once";
                break;
            }
    return Op;
}

const Expr *LockCalls::condWaitMutex(const CallExpr *Call)
{
    const FunctionDecl *F = Call->getDirectCallee();
    if (!F || Call->getNumArgs() < 2)
        return nullptr;
    StringRef N = F->getName();
    if (N == "pthread_cond_wait" || N == "pthread_cond_timedwait" ||
        N == "pthread_cond_clockwait" || N == "lt_cond_wait" || N == "lt_cond_timedwait")
        return Call->getArg(1);
    return nullptr;
}

const Expr *LockCalls::mutexInitArg(const CallExpr *Call)
{
    const FunctionDecl *F = Call->getDirectCallee();
    if (!F || Call->getNumArgs() != 2 || F->getName() != "pthread_mutex_init")
        return nullptr;
    return Call->getArg(0);
}

} // namespace locktune
