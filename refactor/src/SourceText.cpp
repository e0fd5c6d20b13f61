#include "SourceText.h"

#include "clang/AST/Stmt.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Lex/Lexer.h"

using namespace clang;

namespace locktune {

SourceText::SourceText(const SourceManager &SM, const LangOptions &LO)
    : SM(SM), LO(LO), Main(SM.getMainFileID()), Buffer(SM.getBufferData(Main))
{
}

std::optional<unsigned> SourceText::offset(SourceLocation Loc) const
{
    if (Loc.isInvalid())
        return std::nullopt;
    Loc = SM.getExpansionLoc(Loc);
    if (SM.getFileID(Loc) != Main)
        return std::nullopt;
    return SM.getFileOffset(Loc);
}

std::optional<Span> SourceText::span(SourceRange R) const
{
    CharSourceRange C = Lexer::makeFileCharRange(CharSourceRange::getTokenRange(R), SM, LO);
    if (C.isInvalid())
        return std::nullopt;
    if (SM.getFileID(C.getBegin()) != Main || SM.getFileID(C.getEnd()) != Main)
        return std::nullopt;
    unsigned B = SM.getFileOffset(C.getBegin()), E = SM.getFileOffset(C.getEnd());
    if (E < B)
        return std::nullopt;
    return Span{B, E};
}

// Does the statement's text end with a ';' that is not part of its source range?
static bool endsWithSemicolon(const Stmt *S)
{
    while (S) {
        if (const auto *L = dyn_cast<LabelStmt>(S))
            S = L->getSubStmt();
        else if (const auto *C = dyn_cast<SwitchCase>(S))
            S = C->getSubStmt();
        else if (const auto *A = dyn_cast<AttributedStmt>(S))
            S = A->getSubStmt();
        else if (const auto *I = dyn_cast<IfStmt>(S))
            S = I->getElse() ? I->getElse() : I->getThen();
        else if (const auto *W = dyn_cast<WhileStmt>(S))
            S = W->getBody();
        else if (const auto *F = dyn_cast<ForStmt>(S))
            S = F->getBody();
        else if (const auto *Sw = dyn_cast<SwitchStmt>(S))
            S = Sw->getBody();
        else
            break;
    }
    if (!S || isa<CompoundStmt>(S) || isa<NullStmt>(S) || isa<DeclStmt>(S))
        return false;
    return isa<Expr>(S) || isa<ReturnStmt>(S) || isa<BreakStmt>(S) || isa<ContinueStmt>(S) ||
           isa<GotoStmt>(S) || isa<IndirectGotoStmt>(S) || isa<DoStmt>(S) || isa<AsmStmt>(S);
}

std::optional<Span> SourceText::stmtSpan(const Stmt *S) const
{
    std::optional<Span> Sp = span(S->getSourceRange());
    if (!Sp)
        return std::nullopt;
    if (isa<DeclStmt>(S)) {
        // A DeclStmt's range ends at its ';' already; make sure it is included.
        if (Sp->End < Buffer.size() && Sp->End > 0 && Buffer[Sp->End - 1] != ';') {
            size_t Semi = Buffer.find(';', Sp->End);
            if (Semi != StringRef::npos && Buffer.slice(Sp->End, Semi).trim().empty())
                Sp->End = unsigned(Semi + 1);
        }
        return Sp;
    }
    if (!endsWithSemicolon(S))
        return Sp;
    // The next token after the statement's last one, skipping comments.
    Token Tok;
    unsigned Off = Sp->End;
    while (Off < Buffer.size()) {
        if (Lexer::getRawToken(SM.getComposedLoc(Main, Off), Tok, SM, LO, /*IgnoreWS=*/true))
            break;
        if (Tok.is(tok::comment)) {
            Off = SM.getFileOffset(Tok.getEndLoc());
            continue;
        }
        if (Tok.is(tok::semi))
            Sp->End = SM.getFileOffset(Tok.getLocation()) + 1;
        break;
    }
    return Sp;
}

std::optional<std::string> SourceText::written(SourceRange R) const
{
    if (std::optional<Span> S = span(R))
        return text(*S).str();
    return std::nullopt;
}

unsigned SourceText::line(unsigned Off) const
{
    return SM.getLineNumber(Main, Off);
}

unsigned SourceText::lineStart(unsigned Off) const
{
    size_t NL = Buffer.rfind('\n', Off); // the last newline before Off
    if (NL == StringRef::npos)
        return 0;
    return unsigned(NL + 1);
}

std::string SourceText::indentOf(unsigned Off) const
{
    unsigned B = lineStart(Off), E = B;
    while (E < Buffer.size() && (Buffer[E] == ' ' || Buffer[E] == '\t'))
        ++E;
    return Buffer.slice(B, E).str();
}

bool SourceText::startsLine(unsigned Off) const
{
    return Buffer.slice(lineStart(Off), Off).trim().empty();
}

unsigned SourceText::insertionPointAbove(unsigned DeclBegin) const
{
    unsigned At = lineStart(DeclBegin);
    // Walk up over the comment lines directly above.
    while (At > 0) {
        unsigned PrevStart = lineStart(At - 1);
        StringRef Prev = Buffer.slice(PrevStart, At).trim();
        if (Prev.empty())
            break;
        if (Prev.startswith("//")) {
            At = PrevStart;
            continue;
        }
        if (Prev.endswith("*/")) {
            size_t Open = Buffer.take_front(At).rfind("/*");
            if (Open == StringRef::npos)
                break;
            unsigned OpenLine = lineStart(unsigned(Open));
            if (!Buffer.slice(OpenLine, unsigned(Open)).trim().empty())
                break; // the comment closes a line of code: not attached to us
            At = OpenLine;
            continue;
        }
        break;
    }
    return At;
}

Span SourceText::wholeLines(Span S) const
{
    unsigned B = lineStart(S.Begin);
    if (!Buffer.slice(B, S.Begin).trim().empty())
        return S;
    size_t NL = Buffer.find('\n', S.End);
    unsigned E = NL == StringRef::npos ? unsigned(Buffer.size()) : unsigned(NL + 1);
    if (!Buffer.slice(S.End, E).trim().empty())
        return S;
    return Span{B, E};
}

std::string reindent(StringRef Text, StringRef From, StringRef To)
{
    if (From == To)
        return Text.str();
    // A backslash-newline could continue a string literal or a macro definition: the bytes
    // after it are not indentation.
    if (Text.contains("\\\n"))
        return Text.str();
    std::string Out;
    Out.reserve(Text.size() + 64);
    bool AtLineStart = true;
    while (!Text.empty()) {
        size_t NL = Text.find('\n');
        StringRef Line = NL == StringRef::npos ? Text : Text.take_front(NL + 1);
        Text = Text.drop_front(Line.size());
        if (AtLineStart && Line.startswith(From) && !Line.trim().empty()) {
            Out += To.str();
            Out += Line.drop_front(From.size()).str();
        } else {
            Out += Line.str();
        }
        AtLineStart = true;
    }
    return Out;
}

StringRef trimBlankLines(StringRef Text)
{
    // Leading blank lines.
    while (true) {
        size_t NL = Text.find('\n');
        if (NL == StringRef::npos || !Text.take_front(NL).trim().empty())
            break;
        Text = Text.drop_front(NL + 1);
    }
    // Trailing blanks and blank lines.
    return Text.rtrim();
}

} // namespace locktune
