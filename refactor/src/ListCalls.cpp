#include "ListCalls.h"

#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/ASTMatchers/ASTMatchers.h"
#include "clang/Lex/Lexer.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

using namespace clang;
using namespace clang::ast_matchers;

namespace locktune {

namespace {

struct LockCall {
    std::string File;
    unsigned Line;
    unsigned Column;
    std::string Call;
    std::string Function;
    std::string Lock;
};

// Matcher: a call to one of the pthread mutex functions, inside a function definition.
StatementMatcher lockCallMatcher()
{
    return callExpr(callee(functionDecl(hasAnyName("pthread_mutex_lock", "pthread_mutex_trylock",
                                                   "pthread_mutex_unlock"))),
                    argumentCountIs(1), hasAncestor(functionDecl(isDefinition()).bind("fn")))
        .bind("call");
}

class CollectLockCalls : public MatchFinder::MatchCallback {
public:
    explicit CollectLockCalls(std::vector<LockCall> &Out) : Out(Out) {}
    void run(const MatchFinder::MatchResult &R) override
    {
        const auto *Call = R.Nodes.getNodeAs<CallExpr>("call");
        const auto *Fn = R.Nodes.getNodeAs<FunctionDecl>("fn");
        const SourceManager &SM = *R.SourceManager;
        SourceLocation Loc = SM.getExpansionLoc(Call->getBeginLoc());
        if (SM.isInSystemHeader(Loc))
            return;
        PresumedLoc P = SM.getPresumedLoc(Loc);
        std::string Lock =
            Lexer::getSourceText(CharSourceRange::getTokenRange(Call->getArg(0)->getSourceRange()),
                                 SM, R.Context->getLangOpts())
                .str();
        Out.push_back({P.getFilename(), P.getLine(), P.getColumn(),
                       Call->getDirectCallee()->getNameAsString(), Fn->getNameAsString(), Lock});
    }

private:
    std::vector<LockCall> &Out;
};

} // namespace

int listLockCalls(tooling::ClangTool &Tool)
{
    std::vector<LockCall> Calls;
    CollectLockCalls Collector(Calls);
    MatchFinder Finder;
    Finder.addMatcher(lockCallMatcher(), &Collector);
    int Status = Tool.run(tooling::newFrontendActionFactory(&Finder).get());

    // Matches arrive in AST traversal order; report them in source order.
    std::stable_sort(Calls.begin(), Calls.end(), [](const LockCall &A, const LockCall &B) {
        return std::tie(A.File, A.Line, A.Column) < std::tie(B.File, B.Line, B.Column);
    });
    llvm::json::Array Arr;
    for (const LockCall &C : Calls)
        Arr.push_back(llvm::json::Object{{"file", C.File},
                                         {"line", static_cast<int64_t>(C.Line)},
                                         {"call", C.Call},
                                         {"function", C.Function},
                                         {"lock", C.Lock}});
    llvm::json::Object Doc{{"schema", "locktune-extract-calls/0"}, {"calls", std::move(Arr)}};
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(Doc))) << "\n";
    return Status == 0 ? 0 : 1;
}

} // namespace locktune
