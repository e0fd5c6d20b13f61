#include "ThreadIdentity.h"

#include "LockCalls.h"

#include "clang/AST/RecursiveASTVisitor.h"
#include "llvm/Support/Path.h"

using namespace clang;

namespace locktune {

bool identityDependent(StringRef N)
{
    static const char *const Names[] = {
        "pthread_self",
        "pthread_getspecific",
        "pthread_setspecific",
        "pthread_sigmask",
        "sigprocmask",
        "gettid",
        "uselocale",
        "pthread_setcancelstate",
        "pthread_setcanceltype",
        "pthread_testcancel",
        "sched_getcpu",
        "pthread_getattr_np",
        "pthread_getcpuclockid",
        "raise",
        "sigwait",
        "pthread_kill",
        "syscall",
        "pthread_exit",
    };
    for (const char *Name : Names)
        if (N == Name)
            return true;
    return false;
}

namespace {

bool isErrno(StringRef N)
{
    return N == "__errno_location" || N == "__error" || N == "_errno";
}

// Library functions that never set errno (memory and string functions, character classes,
// the pthread calls, which return their errors).
bool leavesErrno(const FunctionDecl *F)
{
    static const char *const Names[] = {
        "memcpy",
        "memmove",
        "memset",
        "memcmp",
        "memchr",
        "strlen",
        "strnlen",
        "strcmp",
        "strncmp",
        "strcpy",
        "strncpy",
        "strcat",
        "strncat",
        "strchr",
        "strrchr",
        "strstr",
        "strspn",
        "strcspn",
        "strpbrk",
        "abs",
        "labs",
        "llabs",
        "isalpha",
        "isdigit",
        "isalnum",
        "isspace",
        "isupper",
        "islower",
        "isprint",
        "ispunct",
        "isxdigit",
        "tolower",
        "toupper",
        "htonl",
        "htons",
        "ntohl",
        "ntohs",
        "pthread_equal",
        "pthread_self",
        "pthread_cond_signal",
        "pthread_cond_broadcast",
        "pthread_cond_wait",
        "pthread_cond_timedwait",
        "pthread_mutex_init",
        "pthread_mutex_destroy",
        "pthread_cond_init",
        "pthread_cond_destroy",
    };
    StringRef N = F->getName();
    if (N.startswith("__builtin") || N.startswith("lt_") || pthreadOpKind(N) || F->isNoReturn())
        return true;
    for (const char *Name : Names)
        if (N == Name)
            return true;
    return false;
}

struct Scanner : RecursiveASTVisitor<Scanner> {
    std::function<bool(const Stmt *)> In;
    std::function<std::string(const Stmt *)> Where;
    ThreadIdentity *TI;
    IdentityFacts Facts;

    bool VisitDeclRefExpr(DeclRefExpr *E)
    {
        if (!In(E))
            return true;
        if (const auto *V = dyn_cast<VarDecl>(E->getDecl()))
            if (V->getTLSKind() != VarDecl::TLS_None && Facts.OnCaller.empty())
                Facts.OnCaller = "uses the thread-local variable '" + V->getNameAsString() + "' (" +
                                 Where(E) + ")";
        return true;
    }
    bool VisitCallExpr(CallExpr *C)
    {
        if (!In(C))
            return true;
        const FunctionDecl *F = C->getDirectCallee();
        if (!F) {
            // The code a pointer reaches is not known here: it may ask which thread runs it.
            // libmicrohttpd's completion callback, called in a section, checks that
            // pthread_self() is the thread that served the request; run by an RCL server it
            // aborted its own test suite.  A file-scope pointer the whole-program pass
            // resolved is followed as a call is (header comment).
            const CalleeFacts &X = TI->external();
            const VarDecl *P = calledPointer(C);
            std::string Star = P ? "*" + P->getNameAsString() : "";
            if (P && X.Listing) {
                // an edge of the call graph (ListFunctions), closed over by the caller
            } else if (P && X.Resolved.count(Star)) {
                auto Bound = X.OnCaller.find(Star);
                if (Bound != X.OnCaller.end() && Facts.OnCaller.empty())
                    Facts.OnCaller = "calls through " + P->getNameAsString() + " (" + Where(C) +
                                     "), which " + Bound->second;
                auto Waits = X.Wait.find(Star);
                if (Waits != X.Wait.end() && Facts.Wait.empty())
                    Facts.Wait = "calls through " + P->getNameAsString() + " (" + Where(C) +
                                 "), which " + Waits->second;
            } else if (Facts.OnCaller.empty()) {
                Facts.OnCaller =
                    P ? "calls through " + P->getNameAsString() + " (" + Where(C) +
                            "), a pointer not every assignment of which the program's files "
                            "show: its code may depend on its thread"
                      : "calls through a function pointer (" + Where(C) +
                            "), whose code may depend on its thread";
            }
            if (Facts.SetsErrno.empty())
                Facts.SetsErrno =
                    "calls through a function pointer (" + Where(C) + "), which may set errno";
            return true;
        }
        StringRef N = F->getName();
        if (isErrno(N)) {
            if (Facts.Errno.empty())
                Facts.Errno = "uses errno (" + Where(C) + ")";
            return true;
        }
        if (!F->hasBody() && !leavesErrno(F) && Facts.SetsErrno.empty())
            Facts.SetsErrno = "calls " + N.str() + "() (" + Where(C) + "), which may set errno";
        if (identityDependent(N) && Facts.OnCaller.empty())
            Facts.OnCaller = "calls " + N.str() + "() (" + Where(C) + ")";
        if (!F->hasBody()) { // defined in another file: what the whole-program pass found
            const CalleeFacts &X = TI->external();
            auto Bound = X.OnCaller.find(N.str());
            if (Bound != X.OnCaller.end() && Facts.OnCaller.empty())
                Facts.OnCaller =
                    "calls " + N.str() + "() (" + Where(C) + "), which " + Bound->second;
            auto Waits = X.Wait.find(N.str());
            if (Waits != X.Wait.end() && Facts.Wait.empty())
                Facts.Wait = "calls " + N.str() + "() (" + Where(C) + "), which " + Waits->second;
        }
        if (LockCalls::condWaitMutex(C) && Facts.Wait.empty())
            Facts.Wait = "waits on a condition variable (" + Where(C) + ")";
        if (F->hasBody() && !pthreadOpKind(N)) {
            const IdentityFacts &Sub = TI->ofFunction(F);
            std::string Via = " in " + N.str() + "(), called " + Where(C);
            if (!Sub.OnCaller.empty() && Facts.OnCaller.empty())
                Facts.OnCaller = Sub.OnCaller + Via;
            if (!Sub.Errno.empty() && Facts.Errno.empty())
                Facts.Errno = Sub.Errno + Via;
            if (!Sub.Wait.empty() && Facts.Wait.empty())
                Facts.Wait = Sub.Wait + Via;
            if (!Sub.SetsErrno.empty() && Facts.SetsErrno.empty())
                Facts.SetsErrno = Sub.SetsErrno + Via;
        }
        return true;
    }
};

} // namespace

const VarDecl *fileScopePointer(const Expr *E)
{
    const auto *D = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
    const auto *V = D ? dyn_cast<VarDecl>(D->getDecl()) : nullptr;
    return V && V->isFileVarDecl() && V->getType()->isFunctionPointerType() ? V : nullptr;
}

const VarDecl *calledPointer(const CallExpr *C)
{
    const Expr *Callee = C->getCallee()->IgnoreParenImpCasts();
    if (const auto *U = dyn_cast<UnaryOperator>(Callee); U && U->getOpcode() == UO_Deref)
        Callee = U->getSubExpr(); // (*hash)(key, n)
    return fileScopePointer(Callee);
}

std::string ThreadIdentity::where(const Stmt *S) const
{
    const SourceManager &SM = Src.sm();
    SourceLocation L = SM.getExpansionLoc(S->getBeginLoc());
    PresumedLoc P = SM.getPresumedLoc(L);
    if (P.isInvalid())
        return "?";
    if (SM.getFileID(L) == SM.getMainFileID())
        return "line " + std::to_string(P.getLine());
    return llvm::sys::path::filename(P.getFilename()).str() + ":" + std::to_string(P.getLine());
}

IdentityFacts ThreadIdentity::scan(const Stmt *Root, const std::function<bool(const Stmt *)> &In,
                                   const FunctionDecl *)
{
    Scanner Sc;
    Sc.In = In;
    Sc.Where = [this](const Stmt *S) { return where(S); };
    Sc.TI = this;
    Sc.TraverseStmt(const_cast<Stmt *>(Root));
    return Sc.Facts;
}

const IdentityFacts &ThreadIdentity::ofFunction(const FunctionDecl *Fn)
{
    Fn = Fn->getCanonicalDecl();
    auto It = Memo.find(Fn);
    if (It != Memo.end())
        return It->second;
    static const IdentityFacts None;
    const FunctionDecl *Def = Fn->getDefinition();
    if (!Def || !Def->hasBody() || !Busy.insert(Fn).second)
        return None; // recursion: what is being computed is being computed
    IdentityFacts R = scan(
        Def->getBody(), [](const Stmt *) { return true; }, Def);
    Busy.erase(Fn);
    return Memo[Fn] = R;
}

void ThreadIdentity::analyze(const FunctionContext &F, Section &S)
{
    auto inHeld = [&](const Stmt *X) {
        std::optional<unsigned> Off = Src.offset(X->getBeginLoc());
        return Off && S.inHeld(*Off);
    };
    IdentityFacts Facts;
    for (unsigned I = S.BodyFirst; I <= S.Last && I < S.Block->size(); ++I) {
        IdentityFacts Part = scan(S.Block->body_begin()[I], inHeld, F.Fn);
        if (Facts.OnCaller.empty())
            Facts.OnCaller = Part.OnCaller;
        if (Facts.Errno.empty())
            Facts.Errno = Part.Errno;
        if (Facts.Wait.empty())
            Facts.Wait = Part.Wait;
        if (Facts.SetsErrno.empty())
            Facts.SetsErrno = Part.SetsErrno;
    }
    std::vector<std::string> Handling, Why;
    if (!Facts.OnCaller.empty()) {
        S.Flags |= OnCaller;
        Handling.push_back("on-caller");
        Why.push_back(Facts.OnCaller);
    } else if (!Facts.Errno.empty() || !Facts.SetsErrno.empty()) {
        S.CarryErrno = true;
        Handling.push_back("errno-carried");
        Why.push_back(!Facts.Errno.empty() ? Facts.Errno : Facts.SetsErrno);
    }
    if (!Facts.Wait.empty()) {
        S.Flags |= MayWait;
        Handling.push_back("may-wait");
        Why.push_back(Facts.Wait);
    }
    S.IdentityHandling.clear();
    S.IdentityWhy.clear();
    for (size_t I = 0; I < Handling.size(); ++I) {
        S.IdentityHandling += (I ? "+" : "") + Handling[I];
        S.IdentityWhy += (I ? "; " : "") + Why[I];
    }
}

} // namespace locktune
