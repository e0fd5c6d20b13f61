// locktune-extract: extracts the critical sections of C programs into functions run by
// lt_execute (docs/extract.md).
//
//   locktune-extract [options] FILE... -- CFLAGS
//   locktune-extract [options] -p BUILD_DIR FILE...        (compile_commands.json)
//
// Each FILE is parsed with its real compile flags.  The report (JSON, schema
// locktune-extract/1) lists every critical section, extracted or kept with the reason, and
// every place a lock comes to life; with --out-dir the rewritten files are written there.
#include "Extractor.h"
#include "ListCalls.h"
#include "ListFunctions.h"
#include "Report.h"

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Frontend/Utils.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CommonOptionsParser.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace clang;
using namespace clang::tooling;

namespace {

llvm::cl::OptionCategory Category("locktune-extract options");
llvm::cl::opt<std::string>
    OutDir("out-dir", llvm::cl::value_desc("DIR"), llvm::cl::cat(Category),
           llvm::cl::desc("Write the rewritten version of each FILE whose text changed to\n"
                          "DIR/<path relative to --source-root> (without it: only report)"));
llvm::cl::opt<std::string> SourceRoot(
    "source-root", llvm::cl::value_desc("DIR"), llvm::cl::cat(Category),
    llvm::cl::desc("Root for relative paths (default: the FILEs' common parent directory)"));
llvm::cl::opt<std::string>
    ReportFile("report", llvm::cl::value_desc("FILE"), llvm::cl::cat(Category),
               llvm::cl::desc("Write the JSON report there (default: stdout)"));
llvm::cl::list<std::string> LockWrappers(
    "lock-wrapper", llvm::cl::value_desc("NAME=lock|unlock|trylock[:EXPR]"),
    llvm::cl::cat(Category),
    llvm::cl::desc("A project function or macro that locks or unlocks its argument, or a lock it\n"
                   "computes from its argument; EXPR names that lock with $1, $2... for the\n"
                   "arguments (e.g. item_lock=lock:&item_locks[$1 & mask]). Repeatable."));
llvm::cl::opt<bool> List("list", llvm::cl::cat(Category),
                         llvm::cl::desc("Only list the pthread mutex calls (JSON)"));
llvm::cl::opt<bool> ListFns(
    "list-functions", llvm::cl::cat(Category),
    llvm::cl::desc("Only list each function defined in the FILEs: whether it depends on its\n"
                   "thread or may wait on a condition variable, and the functions of other\n"
                   "files it calls (JSON; the whole-program pass before extraction)"));
llvm::cl::opt<std::string> CalleeFactsFile(
    "callee-facts", llvm::cl::value_desc("FILE"), llvm::cl::cat(Category),
    llvm::cl::desc("What functions of other files do, from --list-functions closed over the\n"
                   "call graph: {\"on_caller\": {NAME: WHY}, \"wait\": {NAME: WHY}}"));

std::string absolute(StringRef P)
{
    llvm::SmallString<256> S(P);
    llvm::sys::fs::make_absolute(S);
    llvm::sys::path::remove_dots(S, /*remove_dot_dot=*/true);
    return S.str().str();
}

std::string commonParent(const std::vector<std::string> &Files)
{
    if (Files.empty())
        return absolute(".");
    std::string Common = llvm::sys::path::parent_path(absolute(Files[0])).str();
    for (const std::string &F : Files) {
        std::string Dir = llvm::sys::path::parent_path(absolute(F)).str();
        while (!Common.empty() && !(Dir == Common || StringRef(Dir).startswith(Common + "/")))
            Common = llvm::sys::path::parent_path(Common).str();
    }
    return Common.empty() ? "/" : Common;
}

// One line per error, naming the file and line; the report gets them too.  Warnings are the
// program's business, not ours.
class Diagnostics : public DiagnosticConsumer {
public:
    explicit Diagnostics(locktune::Report &R, const std::string &Root) : R(R), Root(Root) {}
    void HandleDiagnostic(DiagnosticsEngine::Level Level, const Diagnostic &Info) override
    {
        DiagnosticConsumer::HandleDiagnostic(Level, Info);
        if (Level < DiagnosticsEngine::Error)
            return;
        llvm::SmallString<256> Msg;
        Info.FormatDiagnostic(Msg);
        std::string File = "<command line>";
        unsigned Line = 0, Col = 0;
        if (Info.hasSourceManager() && Info.getLocation().isValid()) {
            PresumedLoc P = Info.getSourceManager().getPresumedLoc(
                Info.getSourceManager().getExpansionLoc(Info.getLocation()));
            if (P.isValid()) {
                File = locktune::reportPath(absolute(P.getFilename()), Root);
                Line = P.getLine();
                Col = P.getColumn();
            }
        }
        llvm::errs() << "locktune-extract: " << File << ":" << Line << ":" << Col
                     << ": error: " << Msg << "\n";
        R.Diagnostics.push_back({File, Line, Msg.str().str()});
    }

private:
    locktune::Report &R;
    const std::string &Root;
};

// Records the main file's ranges that #if/#ifdef left out, and where its last #include ends.
class SkippedRanges : public PPCallbacks {
public:
    SkippedRanges(const SourceManager &SM, std::vector<locktune::Span> &Out,
                  std::optional<unsigned> &LastInclude)
        : SM(SM), Out(Out), LastInclude(LastInclude)
    {
    }
    void InclusionDirective(SourceLocation Hash, const Token &, StringRef, bool,
                            CharSourceRange Name, const FileEntry *, StringRef, StringRef,
                            const Module *, SrcMgr::CharacteristicKind) override
    {
        if (Hash.isFileID() && SM.isWrittenInMainFile(Hash) && Name.getEnd().isFileID())
            LastInclude = SM.getFileOffset(Name.getEnd());
    }
    void SourceRangeSkipped(SourceRange Range, SourceLocation) override
    {
        if (!SM.isWrittenInMainFile(Range.getBegin()))
            return;
        Out.push_back({SM.getFileOffset(Range.getBegin()), SM.getFileOffset(Range.getEnd())});
    }

private:
    const SourceManager &SM;
    std::vector<locktune::Span> &Out;
    std::optional<unsigned> &LastInclude;
};

// Declarations the rewritten text uses, for checking it before the Coccinelle pass has made
// it include locktune.h (which includes <pthread.h>, hence NULL and intptr_t; the locks are
// still pthread_mutex_t here, hence `void *`).
const char *const Prelude = R"(#ifndef LOCKTUNE_H
#include <stddef.h>
typedef __INTPTR_TYPE__ intptr_t;
void *lt_execute(void *m, void *(*fn)(void *), void *ctx);
void *lt_execute_ex(void *m, void *(*fn)(void *), void *ctx, unsigned flags);
int lt_execute_trylock(void *m, void *(*fn)(void *), void *ctx, void **result);
enum { LT_EXEC_ON_CALLER = 1, LT_EXEC_MAY_WAIT = 2 };
#endif
)";

// The prelude of the check against the file's other commands: the lock argument must still be
// a pthread_mutex_t * there (a C11 _Generic with no other association: anything else is an
// error).  The analysis saw it as one under the first command; under another, a wrapper macro
// may expand to another type (zstd's debug threading: a pthread_mutex_t **).  `int` passes
// too: a lock accessor the rewriter declares later (memcached's item_lock wrapper) is an
// implicitly declared function in this text, and no lock expression is an int otherwise.
const char *const StrictPrelude = R"(#ifndef LOCKTUNE_H
#define LT_CHECKED_LOCK_(m) _Generic((m), pthread_mutex_t *: (m), int: (m))
#define lt_execute(m, fn, ctx) lt_execute(LT_CHECKED_LOCK_(m), fn, ctx)
#define lt_execute_ex(m, fn, ctx, fl) lt_execute_ex(LT_CHECKED_LOCK_(m), fn, ctx, fl)
#define lt_execute_trylock(m, fn, ctx, r) lt_execute_trylock(LT_CHECKED_LOCK_(m), fn, ctx, r)
#endif
)";

// Collects the errors of the check below, as FILE:LINE: message.
class ErrorList : public DiagnosticConsumer {
public:
    std::vector<std::string> Errors;
    void HandleDiagnostic(DiagnosticsEngine::Level Level, const Diagnostic &Info) override
    {
        DiagnosticConsumer::HandleDiagnostic(Level, Info);
        if (Level < DiagnosticsEngine::Error)
            return;
        llvm::SmallString<256> Msg;
        Info.FormatDiagnostic(Msg);
        std::string Where;
        if (Info.hasSourceManager() && Info.getLocation().isValid()) {
            PresumedLoc P = Info.getSourceManager().getPresumedLoc(
                Info.getSourceManager().getExpansionLoc(Info.getLocation()));
            if (P.isValid())
                Where = std::to_string(P.getLine());
        }
        Errors.push_back(Where + ": " + Msg.str().str());
    }
};

// Parses the rewritten text with the file's own compile flags: what the tool writes must
// compile.  Returns the errors (none: it does).
// The rewritten text parsed with an invocation: its errors ("LINE: message").  Strict: pointer
// conversions count as errors too (not int to pointer: see StrictPrelude).  A lock expression that
// names an lt_mutex_t under one configuration may name an lt_mutex_t * under another (zstd's debug
// threading makes its mutex type a pointer): `lt_execute((&ctx->queueMutex), ...)` was only a
// warning there, and the tests built that way ran the section on the wrong memory.
std::vector<std::string> checkRewritten(const CompilerInvocation &Base, StringRef Path,
                                        StringRef Text, bool Strict)
{
    auto Inv = std::make_shared<CompilerInvocation>(Base);
    PreprocessorOptions &PPO = Inv->getPreprocessorOpts();
    PPO.addRemappedFile(Path, llvm::MemoryBuffer::getMemBufferCopy(Text, Path).release());
    std::string Text0 = std::string(Prelude) + (Strict ? StrictPrelude : "");
    PPO.addRemappedFile("/locktune-extract-prelude.h",
                        llvm::MemoryBuffer::getMemBufferCopy(Text0).release());
    PPO.Includes.insert(PPO.Includes.begin(), "/locktune-extract-prelude.h");
    PPO.RetainRemappedFileBuffers = false;
    Inv->getFrontendOpts().ProgramAction = frontend::ParseSyntaxOnly;
    CompilerInstance Check;
    Check.setInvocation(Inv);
    ErrorList Errors;
    Check.createDiagnostics(&Errors, /*ShouldOwnClient=*/false);
    if (Strict)
        Check.getDiagnostics().setIgnoreAllWarnings(false); // -w would silence these too
    if (Strict)
        for (const char *Group :
             {"incompatible-pointer-types", "incompatible-function-pointer-types"})
            Check.getDiagnostics().setSeverityForGroup(diag::Flavor::WarningOrError, Group,
                                                       diag::Severity::Error);
    SyntaxOnlyAction Action;
    Check.ExecuteAction(Action);
    return Errors.Errors;
}

// The commands the build ran, made independent of the working directory.  ClangTool runs
// every file in one FileManager, which caches a path as first looked up: with `-I.` in
// lib/ and `-I../lib` in src/, "./config.h" found for one file was reused for the next,
// or not found at all, although each command was right in its own directory.  Every path
// of a command that is relative to its directory (include directories, forced includes,
// response files are already expanded by the options parser) is made absolute here, so a
// translation unit resolves exactly as its build resolved it, whatever ran before it.
//
// A file compiled several times (memcached and memcached-debug) is analysed once, with the
// first command the database gives for it; its rewritten text must compile with every one
// of them (otherwise its sections are kept: one of them depends on the configuration).
class BuildCommands : public CompilationDatabase {
public:
    explicit BuildCommands(const CompilationDatabase &Base) : Base(Base) {}
    std::vector<CompileCommand> getCompileCommands(StringRef File) const override
    {
        std::vector<CompileCommand> C = allCommands(File);
        if (C.size() > 1)
            C.resize(1);
        return C;
    }
    // Every command the build ran for File (the first is the one analysed).
    std::vector<CompileCommand> allCommands(StringRef File) const
    {
        std::vector<CompileCommand> C = Base.getCompileCommands(File);
        for (CompileCommand &Cmd : C)
            Cmd.CommandLine = absolutePaths(Cmd.CommandLine, Cmd.Directory, Cmd.Filename);
        return C;
    }
    std::vector<std::string> getAllFiles() const override
    {
        return Base.getAllFiles();
    }

    // The source file too: zstd compiles `.//common/debug.c` in lib/, and a header it
    // includes by a quoted name is then looked up as `.//common/portability_macros.h`,
    // relative again, and cached across directories like the include paths.
    static std::vector<std::string> absolutePaths(const std::vector<std::string> &Args,
                                                  StringRef Dir, StringRef File)
    {
        // Options whose value is a path relative to the command's directory, spelled
        // `-I dir`, `-Idir` or `--include=file`.
        static const char *const Joined[] = {"-I",         "-iquote",   "-isystem",
                                             "-idirafter", "-include",  "-imacros",
                                             "-iprefix",   "-isysroot", "--sysroot="};
        static const char *const Separate[] = {"-I",         "-iquote",   "-isystem",
                                               "-idirafter", "-include",  "-imacros",
                                               "-isysroot",  "--sysroot", "-iprefix"};
        auto Abs = [&](StringRef P) {
            if (P.empty() || llvm::sys::path::is_absolute(P) || Dir.empty())
                return P.str();
            llvm::SmallString<256> S(Dir);
            llvm::sys::path::append(S, P);
            llvm::sys::path::remove_dots(S, /*remove_dot_dot=*/false);
            return S.str().str();
        };
        std::vector<std::string> Out;
        for (size_t I = 0; I < Args.size(); ++I) {
            StringRef A = Args[I];
            bool Done = false;
            for (const char *Opt : Separate)
                if (A == Opt && I + 1 < Args.size()) {
                    Out.push_back(A.str());
                    Out.push_back(Abs(Args[++I]));
                    Done = true;
                    break;
                }
            for (const char *Opt : Joined)
                if (!Done && A.startswith(Opt) && A.size() > strlen(Opt)) {
                    Out.push_back(Opt + Abs(A.drop_front(strlen(Opt))));
                    Done = true;
                }
            if (!Done && !A.startswith("-") && !llvm::sys::path::is_absolute(A) &&
                sameFile(Abs(A), File, Dir))
                Out.push_back(Abs(A));
            else if (!Done)
                Out.push_back(A.str());
        }
        return Out;
    }

private:
    static bool sameFile(StringRef A, StringRef File, StringRef Dir)
    {
        llvm::SmallString<256> X(A), Y(File);
        if (!llvm::sys::path::is_absolute(Y)) {
            Y = Dir;
            llvm::sys::path::append(Y, File);
        }
        llvm::sys::path::remove_dots(X, /*remove_dot_dot=*/true);
        llvm::sys::path::remove_dots(Y, /*remove_dot_dot=*/true);
        return X == Y;
    }

    const CompilationDatabase &Base;
};

// The arguments ClangTool gives the compiler for a command (see main): syntax only, no
// outputs or dependency files, our resource directory, the program's warnings off.
std::vector<std::string> toolArguments(const CompileCommand &Cmd)
{
    CommandLineArguments Args = Cmd.CommandLine;
    for (const ArgumentsAdjuster &A : {getClangSyntaxOnlyAdjuster(), getClangStripOutputAdjuster(),
                                       getClangStripDependencyFileAdjuster()})
        Args = A(Args, Cmd.Filename);
    if (!Args.empty())
        Args.insert(Args.begin() + 1, "-resource-dir=" LOCKTUNE_CLANG_RESOURCE_DIR);
    for (const char *A : {"-w", "-Wno-error", "-Qunused-arguments", "-fno-caret-diagnostics"})
        Args.push_back(A);
    return Args;
}

struct Run {
    const BuildCommands *Db = nullptr;
    locktune::ExtractOptions Opts;
    locktune::Report Report;
    std::string OutDir;
    bool Failed = false;
};

// The main file's text with its loops rotated (LoopRotation.h), analysed in its place.
struct RotatedText {
    std::string Original; // the file as written
    std::string Text;
    std::vector<locktune::Rotation> Rotations;
    const CompilerInvocation *Base = nullptr; // the file's own invocation, for the checks
    bool Parsed = false;                      // set by the nested analysis
    std::string Error;                        // its first error ("LINE: message"), if any
};

class Consumer : public ASTConsumer {
public:
    Consumer(Run &R, CompilerInstance &CI, std::vector<locktune::Span> &Skipped,
             std::optional<unsigned> &LastInclude, RotatedText *Rotated = nullptr)
        : R(R), CI(CI), Skipped(Skipped), LastInclude(LastInclude), Rotated(Rotated),
          FirstDiag(R.Report.Diagnostics.size())
    {
    }
    void HandleTranslationUnit(ASTContext &Ctx) override
    {
        const SourceManager &SM = Ctx.getSourceManager();
        const FileEntry *Main = SM.getFileEntryForID(SM.getMainFileID());
        std::string Path = absolute(Main ? Main->getName() : "<input>");
        std::string Rel = locktune::reportPath(Path, R.Opts.SourceRoot);
        if (Rotated) {
            if (CI.getDiagnostics().hasErrorOccurred())
                return; // the caller analyses the file as written
            Rotated->Parsed = true;
        } else if (!CI.getDiagnostics().hasErrorOccurred()) {
            std::vector<locktune::Rotation> Rs;
            locktune::Extractor X0(Ctx, R.Opts, Skipped, LastInclude);
            if (std::optional<std::string> Text = X0.rotate(Rs)) {
                RotatedText T;
                T.Original = SM.getBufferData(SM.getMainFileID()).str();
                T.Text = std::move(*Text);
                T.Rotations = std::move(Rs);
                T.Base = &CI.getInvocation();
                if (analyseRotated(Path, Rel, T))
                    return;
                if (!T.Error.empty())
                    llvm::errs() << "locktune-extract: " << Rel << ":" << T.Rotations[0].LoopLine
                                 << ": note: the rotated loops do not parse (line " << T.Error
                                 << "; a bug of the tool): the file is analysed as written\n";
            }
        }
        if (CI.getDiagnostics().hasErrorOccurred()) {
            R.Failed = true; // the file does not parse: it is not rewritten
            locktune::DiagEntry First{Rel, 0, "does not parse"};
            if (FirstDiag < R.Report.Diagnostics.size())
                First = R.Report.Diagnostics[FirstDiag];
            R.Report.FilesFailed.push_back({Rel, First});
            return;
        }
        R.Report.FilesAnalysed.push_back(Rel);
        locktune::Extractor X(Ctx, R.Opts, Skipped, LastInclude);
        size_t FirstSection = R.Report.Sections.size();
        std::optional<std::string> Text = X.run(R.Report);
        if (Rotated)
            noteRotations(Rel, FirstSection);
        noteUndone(Rel, FirstSection);
        if (!Text)
            return;
        // What would be written must compile; a rewrite that does not is a bug of the tool,
        // reported, and the file is left to the other passes as it is.
        const CompilerInvocation &Inv = Rotated ? *Rotated->Base : CI.getInvocation();
        std::vector<std::string> Errors = checkRewritten(Inv, Path, *Text, false);
        if (Errors.empty() && !checkOtherCommands(Path, Rel, *Text))
            return;
        if (!Errors.empty()) {
            for (const std::string &E : Errors) {
                llvm::errs() << "locktune-extract: " << Rel << ": internal error: the rewritten "
                             << "text does not compile (line " << E << "); not rewritten\n";
                R.Report.Diagnostics.push_back(
                    {Rel, 0,
                     "internal error: the rewritten text does not compile (line " + E + ")"});
            }
            R.Failed = true;
            return;
        }
        if (R.OutDir.empty())
            return;
        if (Rel == Path) {
            llvm::errs() << "locktune-extract: " << Path << ":0: error: not under the source root "
                         << R.Opts.SourceRoot << "\n";
            R.Report.Diagnostics.push_back({Path, 0, "not under the source root"});
            R.Failed = true;
            return;
        }
        llvm::SmallString<256> Out(R.OutDir);
        llvm::sys::path::append(Out, Rel);
        llvm::sys::fs::create_directories(llvm::sys::path::parent_path(Out));
        std::error_code EC;
        llvm::raw_fd_ostream OS(Out, EC);
        if (EC) {
            llvm::errs() << "locktune-extract: " << Out << ":0: error: " << EC.message() << "\n";
            R.Failed = true;
            return;
        }
        OS << *Text;
        R.Report.FilesRewritten.push_back(Rel);
    }

private:
    // Analyses T.Text in place of the main file (the file's own invocation, the text remapped
    // at its path), by a Consumer of its own.  A rotation whose section is not extracted after
    // all is undone (the loop stays as written), and the text analysed again; false when no
    // rotation is left, or the text did not parse: the caller analyses the file as written.
    bool analyseRotated(const std::string &Path, const std::string &Rel, RotatedText &T)
    {
        while (true) {
            Snapshot Before(R);
            auto Inv = std::make_shared<CompilerInvocation>(CI.getInvocation());
            PreprocessorOptions &PPO = Inv->getPreprocessorOpts();
            PPO.addRemappedFile(Path, llvm::MemoryBuffer::getMemBufferCopy(T.Text, Path).release());
            PPO.RetainRemappedFileBuffers = false;
            CompilerInstance Nested;
            Nested.setInvocation(Inv);
            ErrorList Errors;
            Nested.createDiagnostics(&Errors, /*ShouldOwnClient=*/false);
            RotatedAction A(R, T);
            T.Parsed = false;
            Nested.ExecuteAction(A);
            if (!T.Parsed) {
                Before.restore(R);
                T.Error = Errors.Errors.empty() ? "?" : Errors.Errors.front();
                return false;
            }
            std::vector<locktune::Rotation> Kept;
            for (const locktune::Rotation &Rot : T.Rotations) {
                std::optional<std::string> Why = keptWhy(Rel, Before.Sections, Rot.Lines.back());
                if (!Why)
                    Kept.push_back(Rot);
                else
                    Undone.push_back({Rot.Before, "with the loop at line " +
                                                      std::to_string(Rot.LoopLine) +
                                                      " rotated, it would still be kept: " + *Why});
            }
            if (Kept.size() == T.Rotations.size())
                return true;
            Before.restore(R);
            if (Kept.empty())
                return false;
            T.Rotations = std::move(Kept);
            T.Text = locktune::applyRotations(T.Original, T.Rotations);
        }
    }

    // What the report held before a nested analysis, to undo it.
    struct Snapshot {
        size_t Sections, Sites, Diagnostics, Rewritten, Analysed, FailedFiles;
        bool Failed;
        explicit Snapshot(const Run &R)
            : Sections(R.Report.Sections.size()), Sites(R.Report.Sites.size()),
              Diagnostics(R.Report.Diagnostics.size()), Rewritten(R.Report.FilesRewritten.size()),
              Analysed(R.Report.FilesAnalysed.size()), FailedFiles(R.Report.FilesFailed.size()),
              Failed(R.Failed)
        {
        }
        void restore(Run &R) const
        {
            for (size_t I = Rewritten; I < R.Report.FilesRewritten.size(); ++I) {
                llvm::SmallString<256> Out(R.OutDir);
                llvm::sys::path::append(Out, R.Report.FilesRewritten[I]);
                llvm::sys::fs::remove(Out);
            }
            R.Report.Sections.resize(Sections);
            R.Report.Sites.resize(Sites);
            R.Report.Diagnostics.resize(Diagnostics);
            R.Report.FilesRewritten.resize(Rewritten);
            R.Report.FilesAnalysed.resize(Analysed);
            R.Report.FilesFailed.resize(FailedFiles);
            R.Failed = Failed;
        }
    };

    // Why the section of file Rel opened at Line, among the report's sections from First on,
    // was kept (nothing: it was extracted).
    std::optional<std::string> keptWhy(const std::string &Rel, size_t First, unsigned Line) const
    {
        for (size_t I = First; I < R.Report.Sections.size(); ++I) {
            const locktune::SectionEntry &E = R.Report.Sections[I];
            if (E.File == Rel && E.Kind == "section" && E.Line == Line)
                return E.Extracted ? std::nullopt : std::optional<std::string>(E.Reason);
        }
        return std::string("no section opens there");
    }

    // The kept sections from First on whose loop was rotated in vain say what else keeps them.
    void noteUndone(const std::string &Rel, size_t First)
    {
        for (size_t I = First; I < R.Report.Sections.size(); ++I) {
            locktune::SectionEntry &E = R.Report.Sections[I];
            for (const auto &[Lines, Why] : Undone)
                if (E.File == Rel && E.Kind == "section" && !E.Extracted &&
                    std::count(Lines.begin(), Lines.end(), E.Line))
                    E.Reason += "; " + Why;
        }
    }

    // The sections from FirstSection on that the rotations opened say so.
    void noteRotations(const std::string &Rel, size_t FirstSection)
    {
        for (size_t I = FirstSection; I < R.Report.Sections.size(); ++I) {
            locktune::SectionEntry &E = R.Report.Sections[I];
            for (const locktune::Rotation &Rot : Rotated->Rotations)
                if (E.File == Rel && E.Kind == "section" &&
                    std::count(Rot.Lines.begin(), Rot.Lines.end(), E.Line))
                    E.Rotated = locktune::describe(Rot);
        }
    }

    // The rewritten text against the file's other commands; false (reported, the file not
    // rewritten) when one of them does not compile it.
    bool checkOtherCommands(const std::string &Path, const std::string &Rel,
                            const std::string &Text)
    {
        if (!R.Db)
            return true;
        std::vector<CompileCommand> All = R.Db->allCommands(Path);
        for (size_t I = 1; I < All.size(); ++I) {
            std::vector<std::string> Args = toolArguments(All[I]);
            std::vector<const char *> Argv;
            for (const std::string &A : Args)
                Argv.push_back(A.c_str());
            IntrusiveRefCntPtr<DiagnosticsEngine> Diags = CompilerInstance::createDiagnostics(
                new DiagnosticOptions, new IgnoringDiagConsumer);
            std::unique_ptr<CompilerInvocation> Inv = createInvocationFromCommandLine(Argv, Diags);
            std::vector<std::string> Errors;
            if (!Inv)
                Errors.push_back("0: its command could not be read");
            else
                Errors = checkRewritten(*Inv, Path, Text, true);
            if (Errors.empty())
                continue;
            std::string Msg = "not extracted: the rewritten file does not compile with its "
                              "command #" +
                              std::to_string(I + 1) + " of " + std::to_string(All.size()) +
                              " (line " + Errors.front() + ")";
            llvm::errs() << "locktune-extract: " << Rel << ":0: " << Msg << "\n";
            R.Report.Diagnostics.push_back({Rel, 0, Msg});
            R.Failed = true;
            return false;
        }
        return true;
    }

    // The nested analysis of a rotated text: a Consumer with that text's record.
    class RotatedAction : public ASTFrontendAction {
    public:
        RotatedAction(Run &R, RotatedText &T) : R(R), T(T) {}
        std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI, StringRef) override
        {
            CI.getPreprocessor().addPPCallbacks(
                std::make_unique<SkippedRanges>(CI.getSourceManager(), Skipped, LastInclude));
            return std::make_unique<Consumer>(R, CI, Skipped, LastInclude, &T);
        }

    private:
        Run &R;
        RotatedText &T;
        std::vector<locktune::Span> Skipped;
        std::optional<unsigned> LastInclude;
    };

    Run &R;
    CompilerInstance &CI;
    std::vector<locktune::Span> &Skipped;
    std::optional<unsigned> &LastInclude;
    RotatedText *Rotated; // set: this consumer analyses a rotated text
    size_t FirstDiag;     // the first diagnostic of this translation unit
    // Rotations undone (their section kept all the same): the lines of the loop's lock
    // calls as written, and what keeps the section.
    std::vector<std::pair<std::vector<unsigned>, std::string>> Undone;
};

class Action : public ASTFrontendAction {
public:
    explicit Action(Run &R) : R(R) {}
    std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI, StringRef) override
    {
        CI.getPreprocessor().addPPCallbacks(
            std::make_unique<SkippedRanges>(CI.getSourceManager(), Skipped, LastInclude));
        return std::make_unique<Consumer>(R, CI, Skipped, LastInclude);
    }

private:
    Run &R;
    std::vector<locktune::Span> Skipped;
    std::optional<unsigned> LastInclude;
};

class Factory : public FrontendActionFactory {
public:
    explicit Factory(Run &R) : R(R) {}
    std::unique_ptr<FrontendAction> create() override
    {
        return std::make_unique<Action>(R);
    }

private:
    Run &R;
};

// --callee-facts FILE: {"on_caller": {NAME: WHY}, "wait": {NAME: WHY}, "resolved": ["*NAME"]}.
std::optional<std::string> readCalleeFacts(const std::string &Path, locktune::CalleeFacts &Out)
{
    auto Buf = llvm::MemoryBuffer::getFile(Path);
    if (!Buf)
        return Buf.getError().message();
    llvm::Expected<llvm::json::Value> V = llvm::json::parse((*Buf)->getBuffer());
    if (!V)
        return "not JSON: " + llvm::toString(V.takeError());
    const llvm::json::Object *O = V->getAsObject();
    if (!O)
        return std::string("expected an object");
    for (auto [Key, Map] : {std::pair{"on_caller", &Out.OnCaller}, std::pair{"wait", &Out.Wait}}) {
        const llvm::json::Value *Part = O->get(Key);
        if (!Part)
            continue;
        const llvm::json::Object *Names = Part->getAsObject();
        if (!Names)
            return std::string("\"") + Key + "\" is not an object";
        for (const auto &KV : *Names) {
            llvm::Optional<llvm::StringRef> Why = KV.second.getAsString();
            if (!Why)
                return std::string("\"") + Key + "\"." + KV.first.str() + " is not a string";
            (*Map)[KV.first.str()] = Why->str();
        }
    }
    if (const llvm::json::Array *Resolved = O->getArray("resolved"))
        for (const llvm::json::Value &N : *Resolved)
            if (llvm::Optional<llvm::StringRef> S = N.getAsString())
                Out.Resolved.insert(S->str());
    return std::nullopt;
}

} // namespace

int main(int argc, const char **argv)
{
    auto Parser = CommonOptionsParser::create(
        argc, argv, Category, llvm::cl::OneOrMore,
        "Extracts critical sections into functions run by lt_execute.\n\n"
        "  locktune-extract [options] FILE... -- CFLAGS\n"
        "  locktune-extract [options] -p BUILD_DIR FILE...\n");
    if (!Parser) {
        llvm::errs() << "locktune-extract: error: " << llvm::toString(Parser.takeError()) << "\n";
        return 2;
    }
    std::vector<std::string> Files;
    std::set<std::string> Seen;
    for (const std::string &F : Parser->getSourcePathList())
        if (Seen.insert(absolute(F)).second)
            Files.push_back(absolute(F));

    BuildCommands Db(Parser->getCompilations());
    ClangTool Tool(Db, Files);
    Tool.appendArgumentsAdjuster(getInsertArgumentAdjuster(
        "-resource-dir=" LOCKTUNE_CLANG_RESOURCE_DIR, ArgumentInsertPosition::BEGIN));
    // The program's warnings (and -Werror) are not ours to report.
    Tool.appendArgumentsAdjuster(getInsertArgumentAdjuster(
        CommandLineArguments{"-w", "-Wno-error", "-Qunused-arguments", "-fno-caret-diagnostics"},
        ArgumentInsertPosition::END));

    if (List)
        return locktune::listLockCalls(Tool);
    if (ListFns)
        return locktune::listFunctions(Tool, SourceRoot.empty() ? commonParent(Files)
                                                                : absolute(SourceRoot));

    Run R;
    R.Db = &Db;
    for (const std::string &W : LockWrappers) {
        std::string Name;
        locktune::WrapperSpec Spec;
        if (std::optional<std::string> Err = locktune::parseWrapperSpec(W, Name, Spec)) {
            llvm::errs() << "locktune-extract: error: " << *Err << "\n";
            return 2;
        }
        R.Opts.Wrappers[Name] = Spec;
    }
    if (!CalleeFactsFile.empty()) {
        if (std::optional<std::string> Err = readCalleeFacts(CalleeFactsFile, R.Opts.External)) {
            llvm::errs() << "locktune-extract: " << CalleeFactsFile << ":0: error: " << *Err
                         << "\n";
            return 2;
        }
    }
    R.Opts.SourceRoot = SourceRoot.empty() ? commonParent(Files) : absolute(SourceRoot);
    R.OutDir = OutDir.empty() ? "" : absolute(OutDir);
    Diagnostics Diags(R.Report, R.Opts.SourceRoot);
    Tool.setDiagnosticConsumer(&Diags);
    Tool.setPrintErrorMessage(false);
    Factory F(R);
    int Status = Tool.run(&F);

    std::string Json = llvm::formatv("{0:2}", R.Report.toJSON()).str() + "\n";
    if (ReportFile.empty()) {
        llvm::outs() << Json;
    } else {
        std::error_code EC;
        llvm::raw_fd_ostream OS(ReportFile, EC);
        if (EC) {
            llvm::errs() << "locktune-extract: " << ReportFile << ":0: error: " << EC.message()
                         << "\n";
            return 1;
        }
        OS << Json;
    }
    return (Status != 0 || R.Failed || !R.Report.Diagnostics.empty()) ? 1 : 0;
}
