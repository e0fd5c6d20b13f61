#include "Emitter.h"

#include "SectionFinder.h"
#include "VarBinding.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/PrettyPrinter.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>
#include <map>

using namespace clang;

namespace locktune {

std::string cString(StringRef Text)
{
    std::string Out = "\"";
    for (char C : Text) {
        if (C == '"' || C == '\\')
            Out += '\\';
        Out += C;
    }
    return Out + "\"";
}

namespace {

// Puts a comment left on the lock's (or unlock's) line on a line of its own, so that the
// text starts with a whole line at Indent.
std::string leadOnOwnLine(const std::string &Text, const std::string &Indent)
{
    size_t NL = Text.find('\n');
    StringRef First = StringRef(Text).take_front(NL == std::string::npos ? Text.size() : NL);
    if (First.trim().empty())
        return Text;
    std::string Rest = NL == std::string::npos ? "" : Text.substr(NL);
    return Indent + First.trim().str() + Rest;
}

// A block comment, its words wrapped at 100 columns.
std::string comment(const std::string &Text)
{
    std::string Out, Line = "/*";
    for (StringRef Rest = Text; !Rest.empty();) {
        auto [W, Tail] = Rest.split(' ');
        Rest = Tail;
        if (W.empty())
            continue;
        if (Line.size() + 1 + W.size() > 97 && Line != "/*" && Line != " *") {
            Out += Line + "\n";
            Line = " *";
        }
        Line += " " + W.str();
    }
    return Out + Line + " */\n";
}

std::string joinLines(const std::vector<std::string> &Lines, const std::string &Indent)
{
    std::string Out;
    for (const std::string &L : Lines)
        Out += Indent + L + "\n";
    return Out;
}

// Prints an expression with the variables a parent section holds by pointer dereferenced.
class AccessorPrinter : public PrinterHelper {
public:
    explicit AccessorPrinter(const Section *Parent) : Parent(Parent) {}
    bool handledStmt(Stmt *E, raw_ostream &OS) override
    {
        const auto *D = dyn_cast<DeclRefExpr>(E);
        if (!D || !Parent)
            return false;
        const auto *V = dyn_cast<VarDecl>(D->getDecl());
        const Binding *B = V ? Parent->binding(V) : nullptr;
        if (!B || B->Mode != BindMode::Pointer)
            return false;
        OS << "(*" << V->getName() << ")";
        return true;
    }

private:
    const Section *Parent;
};

std::string valueOf(const Section &S, const VarDecl *V)
{
    const Binding *B = S.Parent ? S.Parent->binding(V) : nullptr;
    if (B && B->Mode == BindMode::Pointer)
        return "*" + V->getNameAsString();
    return V->getNameAsString();
}

std::string addressOf(const Section &S, const VarDecl *V)
{
    const Binding *B = S.Parent ? S.Parent->binding(V) : nullptr;
    if (B && B->Mode == BindMode::Pointer)
        return V->getNameAsString();
    return "&" + V->getNameAsString();
}

std::string field(const Section &S, bool Callee, bool In, const std::string &Name)
{
    std::string Base = Callee ? S.CtxParam + "->" : S.CtxVar + ".";
    if (S.Union)
        Base += In ? "in." : "out.";
    return Base + Name;
}

bool hasIn(const Section &S)
{
    if (S.CarryErrno || !S.VaStarts.empty())
        return true;
    for (const Binding &B : S.Bindings)
        if (B.In || B.Mode == BindMode::Pointer)
            return true;
    return false;
}

bool hasOut(const Section &S)
{
    if (S.CarryErrno)
        return true;
    for (const Binding &B : S.Bindings)
        if (!B.OutAt.empty())
            return true;
    for (const Hoisted &H : S.Hoists)
        if (!H.OutAt.empty())
            return true;
    return false;
}

std::string flagNames(unsigned Flags)
{
    std::string Out;
    if (Flags & OnCaller)
        Out += "LT_EXEC_ON_CALLER";
    if (Flags & MayWait)
        Out += std::string(Out.empty() ? "" : " | ") + "LT_EXEC_MAY_WAIT";
    return Out;
}

} // namespace

std::string Emitter::declare(QualType T, const std::string &Name) const
{
    std::string Out;
    llvm::raw_string_ostream OS(Out);
    PrintingPolicy P(Ctx.getLangOpts());
    P.SuppressTagKeyword = false;
    P.IncludeTagDefinition = false;
    T.print(OS, P, Name);
    return OS.str();
}

EditContext &Emitter::contextOf(Section *Owner) const
{
    return Owner ? *Owner->Edits : FileEdits;
}

void Emitter::name(FunctionContext &F, Section &S)
{
    auto free = [&](const std::string &N) {
        if (UsedNames.count(N) || F.Facts.AllNames.count(N))
            return false;
        return Ctx.getTranslationUnitDecl()->lookup(DeclarationName(&Ctx.Idents.get(N))).empty();
    };
    auto unique = [&](std::string Want, bool Global) {
        std::string N = Want;
        for (unsigned I = 2; !free(N); ++I)
            N = Want + "_" + std::to_string(I);
        if (Global)
            UsedNames.insert(N);
        return N;
    };
    S.FnName = unique(F.Fn->getNameAsString() + "__cs" + std::to_string(S.Number), true);
    S.CtxType = unique(S.FnName + "_ctx", true);
    S.CtxVar = unique("lt_cs" + std::to_string(S.Number), false);
    S.ExitVar = unique("lt_exit" + std::to_string(S.Number), false);
    if (S.Trylock) {
        S.ResVar = unique("lt_res" + std::to_string(S.Number), false);
        S.ExitVar = "(intptr_t)" + S.ResVar;
    }
    if (!S.VaStarts.empty())
        S.VaVar = unique("lt_va" + std::to_string(S.Number), false);
    S.CtxParam = unique("lt_ctx", false);
    S.ArgParam = unique("lt_arg", false);
    bool In = hasIn(S), Out = hasOut(S);
    S.HasCtx = In || Out;
    S.Union = In && Out;
}

std::string Emitter::contextType(const Section &S) const
{
    std::vector<std::string> In, Out;
    for (const Binding &B : S.Bindings) {
        if (B.Mode == BindMode::Pointer)
            In.push_back(declare(Ctx.getPointerType(B.Var->getType()), B.Field) + ";");
        else if (B.In)
            In.push_back(declare(B.Var->getType().getUnqualifiedType(), B.Field) + ";");
        if (!B.OutAt.empty())
            Out.push_back(declare(B.Var->getType().getUnqualifiedType(), B.Field) + ";");
    }
    for (const Hoisted &H : S.Hoists)
        if (!H.OutAt.empty())
            Out.push_back(declare(H.Var->getType().getUnqualifiedType(), H.Field) + ";");
    if (S.CarryErrno) {
        In.push_back("int lt_errno;");
        Out.push_back("int lt_errno;");
    }
    if (!S.VaStarts.empty())
        In.push_back("va_list *lt_va;");
    std::string T;
    if (S.Union) {
        T = "union " + S.CtxType + " {\n" + Unit + "struct {\n";
        T += joinLines(In, Unit + Unit);
        T += Unit + "} in;\n" + Unit + "struct {\n";
        T += joinLines(Out, Unit + Unit);
        T += Unit + "} out;\n};\n";
    } else {
        T = "struct " + S.CtxType + " {\n" + joinLines(In.empty() ? Out : In, Unit) + "};\n";
    }
    return T;
}

std::string Emitter::copyOut(const Section &S, unsigned Code, const std::string &Indent) const
{
    std::vector<std::string> Lines;
    for (const Binding &B : S.Bindings)
        if (B.OutAt.count(Code))
            Lines.push_back(field(S, true, false, B.Field) + " = " + B.Var->getNameAsString() +
                            ";");
    for (const Hoisted &H : S.Hoists)
        if (H.OutAt.count(Code))
            Lines.push_back(field(S, true, false, H.Field) + " = " + H.Var->getNameAsString() +
                            ";");
    if (S.CarryErrno)
        Lines.push_back(field(S, true, false, "lt_errno") + " = errno;");
    return joinLines(Lines, Indent);
}

std::string Emitter::lockExpr(FunctionContext &F, const Section &S) const
{
    // The text of each piece: a wrapper's literal text, or a caller's argument in its slot.
    std::vector<std::pair<std::string, const Expr *>> Parts;
    for (const LockPiece &P : S.Lock.Exec) {
        Parts.emplace_back(P.Literal, nullptr);
        if (!P.Arg)
            continue;
        std::string T;
        if (std::optional<Span> Sp = Src.span(P.Arg->getSourceRange())) {
            T = contextOf(S.Parent).render(*Sp);
        } else {
            llvm::raw_string_ostream OS(T);
            AccessorPrinter AP(S.Parent);
            P.Arg->printPretty(OS, &AP, PrintingPolicy(Ctx.getLangOpts()));
            OS.flush();
        }
        Parts.emplace_back(std::move(T), P.Arg);
    }
    // A wrapper's parameter stands for the caller's argument: an argument looser than a
    // postfix expression, in a slot with text around it that does not already parenthesise
    // it, is parenthesised (`&q->m` with `&q` for q is `&(&q)->m`, not `&&q->m`).
    std::string Out;
    for (size_t I = 0; I < Parts.size(); ++I) {
        const Expr *A = Parts[I].second ? Parts[I].second->IgnoreImpCasts() : nullptr;
        if (!A || isa<DeclRefExpr>(A) || isa<ParenExpr>(A) || isa<MemberExpr>(A) ||
            isa<ArraySubscriptExpr>(A) || isa<CallExpr>(A) || isa<IntegerLiteral>(A)) {
            Out += Parts[I].first;
            continue;
        }
        std::string After;
        for (size_t J = I + 1; J < Parts.size(); ++J)
            After += Parts[J].first;
        StringRef Before = StringRef(Out).rtrim(), Next = StringRef(After).ltrim();
        bool Alone = Before.empty() && Next.empty();
        bool Wrapped = Before.endswith("(") && Next.startswith(")");
        bool Paren = !Alone && !Wrapped;
        Out += (Paren ? "(" : "") + Parts[I].first + (Paren ? ")" : "");
    }
    (void)F;
    return Out;
}

std::string Emitter::function(FunctionContext &F, Section &S) const
{
    unsigned LockLine = Src.line(Src.offset(S.Lock.Call->getBeginLoc()).value_or(S.Whole.Begin));
    unsigned EndLine = S.EndLines.empty() ? Src.line(S.Whole.End) : S.EndLines.back();
    std::string Lines = std::to_string(LockLine);
    if (EndLine != LockLine)
        Lines += "-" + std::to_string(EndLine);
    std::string Out =
        comment("Critical section of " + F.Fn->getNameAsString() + "() on " + S.Lock.Written +
                " (" + FileName + ":" + Lines + "), extracted by locktune-extract.");
    if (S.HasCtx)
        Out += contextType(S) + "\n";
    Out += "static void *" + S.FnName + "(void *" + S.ArgParam + ")\n{\n";
    std::vector<std::string> Pro;
    if (S.HasCtx)
        Pro.push_back(std::string(S.Union ? "union " : "struct ") + S.CtxType + " *" + S.CtxParam +
                      " = " + S.ArgParam + ";");
    else
        Pro.push_back("(void)" + S.ArgParam + ";");
    for (const Binding &B : S.Bindings) {
        std::string N = B.Var->getNameAsString();
        switch (B.Mode) {
        case BindMode::Value:
            if (B.In)
                Pro.push_back(declare(B.Var->getType(), N) + " = " + field(S, true, true, B.Field) +
                              ";");
            else
                Pro.push_back(declare(B.Var->getType(), N) + ";");
            break;
        case BindMode::Pointer:
            Pro.push_back(declare(Ctx.getPointerType(B.Var->getType()), N) + " = " +
                          field(S, true, true, B.Field) + ";");
            break;
        case BindMode::Local:
            Pro.push_back(declare(B.Var->getType(), N) + ";");
            break;
        case BindMode::Moved:
            if (const DeclStmt *D = declStmtOf(F, B.Var)) {
                std::optional<Span> Sp = Src.stmtSpan(D);
                if (D->isSingleDecl() && Sp)
                    Pro.push_back(Src.text(*Sp).trim().str());
                else
                    Pro.push_back(declare(B.Var->getType(), N) + ";");
            }
            break;
        }
    }
    if (S.CarryErrno)
        Pro.push_back("errno = " + field(S, true, true, "lt_errno") + ";");
    Out += joinLines(Pro, Unit);

    std::string LockIndent = S.ForLock ? S.BodyIndent : S.Indent;
    std::string Body;
    if (S.InMacro) {
        for (StringRef Rest = S.MacroText; !Rest.empty();) {
            auto [Line, Tail] = Rest.split('\n');
            Rest = Tail;
            Body += Unit + Line.str() + "\n";
        }
    } else {
        Body = S.Edits->render(S.Body);
        Body = leadOnOwnLine(Body, LockIndent);
        Body = reindent(Body, LockIndent, Unit);
    }
    StringRef Trimmed = trimBlankLines(Body);
    if (!Trimmed.empty())
        Out += "\n" + Trimmed.str() + "\n";
    for (const LabelStmt *L : S.EndLabels)
        Out += reindent(Src.indentOf(*Src.offset(L->getBeginLoc())), LockIndent, Unit) +
               std::string(L->getName()) + ":\n";
    Out += copyOut(S, 0, Unit);
    Out += Unit + "return NULL;\n}\n\n";
    return Out;
}

std::vector<std::string> Emitter::contextDecl(const Section &S, const std::string &I) const
{
    std::vector<std::string> L;
    if (S.HasCtx) {
        std::vector<std::string> Init;
        for (const Binding &B : S.Bindings) {
            if (B.Mode == BindMode::Pointer)
                Init.push_back("." + B.Field + " = " + addressOf(S, B.Var));
            else if (B.In)
                Init.push_back("." + B.Field + " = " + valueOf(S, B.Var));
        }
        if (S.CarryErrno)
            Init.push_back(".lt_errno = errno");
        if (!S.VaStarts.empty())
            Init.push_back(".lt_va = &" + S.VaVar);
        std::string Decl = std::string(S.Union ? "union " : "struct ") + S.CtxType + " " + S.CtxVar;
        if (!Init.empty()) {
            std::string Open = S.Union ? "{.in = {" : "{", Close = S.Union ? "}}" : "}";
            std::string OneLine = Decl + " = " + Open;
            for (size_t K = 0; K < Init.size(); ++K)
                OneLine += (K ? ", " : "") + Init[K];
            OneLine += Close + ";";
            if (I.size() + OneLine.size() <= 100) {
                L.push_back(OneLine);
            } else {
                L.push_back(Decl + " = " + Open);
                for (const std::string &X : Init)
                    L.push_back(Unit + X + ",");
                L.push_back(Close + ";");
            }
        } else {
            L.push_back(Decl + ";");
        }
    }
    return L;
}

// What follows the section at its call site: the declarations of variables it hoisted (for
// a trylock, whose context is set up before its if), the early-exit dispatch and the
// copy-back.
std::vector<std::string> Emitter::tailLines(FunctionContext &F, Section &S,
                                            const std::string &I) const
{
    std::vector<std::string> L;
    (void)F;
    if (S.Trylock)
        for (const Hoisted &H : S.Hoists)
            if (H.AfterSection)
                L.push_back(
                    declare(H.Var->getType().getUnqualifiedType(), H.Var->getNameAsString()) + ";");
    auto copyBack = [&](unsigned Code, std::vector<std::string> &Out) {
        for (const Hoisted &H : S.Hoists)
            if (!H.AfterSection && H.Tails.count(Code)) {
                std::string D =
                    declare(H.Var->getType().getUnqualifiedType(), H.Var->getNameAsString());
                Out.push_back(H.OutAt.count(Code)
                                  ? D + " = " + field(S, false, false, H.Field) + ";"
                                  : D + ";");
            }
        for (const Binding &B : S.Bindings)
            if (B.OutAt.count(Code))
                Out.push_back(valueOf(S, B.Var) + " = " + field(S, false, false, B.Field) + ";");
        for (const Hoisted &H : S.Hoists)
            if (H.AfterSection && H.OutAt.count(Code))
                Out.push_back(H.Var->getNameAsString() + " = " + field(S, false, false, H.Field) +
                              ";");
        if (S.CarryErrno)
            Out.push_back("errno = " + field(S, false, false, "lt_errno") + ";");
    };
    // Early exits that leave first (they never come back), then those whose code falls
    // through to the code after the section, chained so that the normal copy-back runs
    // only after the normal end.
    auto branch = [&](const Tail &T) {
        std::vector<std::string> Inner;
        copyBack(T.Code, Inner);
        for (const std::string &X : Inner)
            L.push_back(Unit + X);
        std::string TailIndent = Src.indentOf(T.Replace.Begin);
        std::string Text = contextOf(S.Parent).render(T.Code_);
        Text = leadOnOwnLine(Text, TailIndent);
        Text = reindent(Text, TailIndent, I + Unit);
        // The first line carries I + Unit already; the lines are joined with I below.
        std::string Lines = trimBlankLines(Text).str();
        if (StringRef(Lines).startswith(I))
            Lines = Lines.substr(I.size());
        L.push_back(Lines);
    };
    for (const Tail &T : S.Tails)
        if (!T.FallsThrough) {
            L.push_back("if (" + S.ExitVar + " == " + std::to_string(T.Code) + ") {");
            branch(T);
            L.push_back("}");
        }
    std::vector<std::string> After;
    copyBack(0, After);
    bool Chain = false;
    for (const Tail &T : S.Tails)
        if (T.FallsThrough) {
            L.push_back(std::string(Chain ? "} else if (" : "if (") + S.ExitVar +
                        " == " + std::to_string(T.Code) + ") {");
            branch(T);
            Chain = true;
        }
    if (Chain) {
        if (!After.empty()) {
            L.push_back("} else {");
            for (const std::string &X : After)
                L.push_back(Unit + X);
        }
        L.push_back("}");
    } else {
        L.insert(L.end(), After.begin(), After.end());
    }

    return L;
}

std::string Emitter::callSite(FunctionContext &F, Section &S) const
{
    std::string I = S.Indent;
    std::vector<std::string> L;
    if (S.Trylock) {
        // The context is set up before the if (trylockSetup); here: what follows success.
        L = tailLines(F, S, I);
        std::string Out;
        for (const std::string &X : L)
            Out += "\n" + I + X;
        return Out;
    }
    // A label must be followed by a statement, not a declaration: the call site goes in a
    // block of its own, or (when it declares what the code after it uses) after a ';'.
    const Stmt *P = F.PM->getParent(S.LockStmt);
    bool Labelled = P && (isa<LabelStmt>(P) || isa<SwitchCase>(P));
    bool Hoists = false;
    for (const Hoisted &H : S.Hoists)
        Hoists |= H.AfterSection;
    bool Block = (Labelled && !Hoists) || (S.InMacro && S.MacroJoin);
    if (Labelled && Hoists)
        L.push_back(";");
    auto macroLines = [&](const std::string &Text) {
        for (StringRef Rest = Text; !Rest.empty();) {
            auto [Line, Tail] = Rest.split('\n');
            Rest = Tail;
            L.push_back(Line.str());
        }
    };
    if (S.InMacro)
        macroLines(S.MacroBefore);
    for (const Hoisted &H : S.Hoists)
        if (H.AfterSection)
            L.push_back(declare(H.Var->getType().getUnqualifiedType(), H.Var->getNameAsString()) +
                        ";");
    // The section's va_start calls copy this list (sectionVaStarts).
    if (!S.VaStarts.empty()) {
        const ParmVarDecl *Last = F.Fn->getParamDecl(F.Fn->getNumParams() - 1);
        L.push_back("va_list " + S.VaVar + ";");
        L.push_back("va_start(" + S.VaVar + ", " + Last->getNameAsString() + ");");
    }
    std::vector<std::string> Ctx_ = contextDecl(S, I);
    L.insert(L.end(), Ctx_.begin(), Ctx_.end());
    std::string Call = std::string(S.Flags ? "lt_execute_ex(" : "lt_execute(") + lockExpr(F, S) +
                       ", " + S.FnName + ", " + (S.HasCtx ? "&" + S.CtxVar : "NULL") +
                       (S.Flags ? ", " + flagNames(S.Flags) : "") + ")";
    if (S.Tails.empty())
        L.push_back(Call + ";");
    else
        L.push_back("intptr_t " + S.ExitVar + " = (intptr_t)" + Call + ";");
    if (!S.VaStarts.empty())
        L.push_back("va_end(" + S.VaVar + ");");

    std::vector<std::string> Rest = tailLines(F, S, I);
    L.insert(L.end(), Rest.begin(), Rest.end());
    if (S.InMacro)
        macroLines(S.MacroAfter);

    std::string Out;
    if (Block) {
        Out = S.MacroJoin ? " {" : "{";
        for (const std::string &X : L)
            Out += "\n" + I + Unit + reindent(X, I, I + Unit);
        Out += "\n" + I + "}";
    } else {
        for (size_t K = 0; K < L.size(); ++K)
            Out += (K ? "\n" + I : "") + L[K];
    }
    // A guarded section (Section::Guard): the call in place of the lock's #if group, then the
    // code as it was for the other configuration; the unlock's #endif closes both.
    if (!S.Guard.empty())
        Out += "\n#else\n" + Src.text(S.Body).str();
    return Out;
}

void Emitter::emit(FunctionContext &F, std::vector<Section *> &Extracted)
{
    if (Extracted.empty())
        return;
    // One indentation level, as this function writes it.
    if (const auto *Body = dyn_cast<CompoundStmt>(F.Fn->getBody()); Body && !Body->body_empty())
        if (std::optional<unsigned> Off = Src.offset(Body->body_front()->getBeginLoc())) {
            std::string Inner = Src.indentOf(*Off), Outer = Src.indentOf(*F.FnBegin);
            if (Inner.size() > Outer.size() && StringRef(Inner).startswith(Outer))
                Unit = Inner.substr(Outer.size());
        }
    for (Section *S : Extracted) {
        name(F, *S);
        S->Edits = std::make_unique<EditContext>(Src);
    }
    for (Section *S : Extracted) {
        Src.setEditOwner(S);
        EditContext &Own = *S->Edits;
        // Variables held by pointer: v -> *v, v.f -> v->f.
        for (const Binding &B : S->Bindings) {
            if (B.Mode != BindMode::Pointer)
                continue;
            std::string N = B.Var->getNameAsString();
            for (const VarRef &R : F.Facts.Refs) {
                if (R.Var != B.Var || !S->Body.contains(R.At))
                    continue;
                if (R.DotBase && R.DotAt)
                    Own.replace(Span{*R.DotAt, *R.DotAt + 1}, "->");
                else if (R.Spelled)
                    Own.replace(Span{*R.Spelled, *R.Spelled + unsigned(N.size())},
                                R.DotBase || R.Postfix ? "(*" + N + ")" : "*" + N);
            }
        }
        // va_start(ap, last) -> va_copy(ap, *lt_ctx->lt_va): the caller started that list.
        for (const CallExpr *C : S->VaStarts)
            if (std::optional<Span> Sp = Src.span(C->getSourceRange())) {
                const auto *D = cast<DeclRefExpr>(C->getArg(0)->IgnoreParenImpCasts());
                std::string List = D->getDecl()->getNameAsString();
                Own.replace(*Sp, "va_copy(" + List + ", *" + field(*S, true, true, "lt_va") + ")");
            }
        // __func__ keeps naming the original function.
        for (const PredefinedExpr *E : F.Facts.FuncNames) {
            std::optional<unsigned> Off = rewritableOffset(Src, E->getLocation());
            if (!Off || !S->Body.contains(*Off) || E->getLocation().isMacroID())
                continue;
            std::string Tok = PredefinedExpr::getIdentKindName(E->getIdentKind()).str();
            if (Src.buffer().substr(*Off, Tok.size()) != Tok)
                continue;
            Own.replace(Span{*Off, *Off + unsigned(Tok.size())},
                        cString(E->getFunctionName()->getString()));
        }
        // Early exits: copy out, then say which exit it was.
        for (const Tail &T : S->Tails) {
            std::string In = Src.indentOf(T.Replace.Begin);
            Section *SP = S;
            unsigned Code = T.Code;
            Own.replace(T.Replace, [this, SP, Code, In] {
                std::string C = copyOut(*SP, Code, In);
                return StringRef(C).ltrim().str() + (C.empty() ? "" : In) + "return (void *)" +
                       std::to_string(Code) + ";";
            });
        }
        // A break or continue that leaves a for-statement lock macro's loop ends the section
        // there: copy out, then return as at its end.
        for (const Stmt *J : S->LoopExits) {
            std::optional<Span> Sp = statementSpan(F, J);
            if (!Sp)
                continue;
            std::string In = Src.indentOf(Sp->Begin);
            bool InBlock = isa_and_nonnull<CompoundStmt>(F.PM->getParent(J));
            // Not a statement of a block (`if (x) break;`): the copy-out and the return go in
            // braces opened on the line of the statement that holds it.
            unsigned From = Sp->Begin;
            StringRef Before = Src.buffer().take_front(From);
            size_t Prev = Before.find_last_not_of(" \t\r\n");
            if (!InBlock && Prev != StringRef::npos)
                From = unsigned(Prev + 1);
            std::string Outer = Src.indentOf(From);
            Section *SP = S;
            Own.replace(Span{From, Sp->End}, [this, SP, In, Outer, InBlock, From, Sp] {
                std::string Lead = Src.text(Span{From, Sp->Begin}).str();
                std::string C = copyOut(*SP, 0, InBlock ? In : Outer + Unit);
                if (C.empty())
                    return Lead + "return NULL;";
                if (InBlock)
                    return StringRef(C).ltrim().str() + In + "return NULL;";
                return " {\n" + C + Outer + Unit + "return NULL;\n" + Outer + "}";
            });
        }
        // Unlocks that end the section inside a branch: the runtime releases the lock now.
        for (const NormalEnd &E : S->Ends) {
            if (E.Final)
                continue;
            std::optional<Span> Sp = statementSpan(F, E.UnlockStmt);
            if (!Sp)
                continue;
            const Stmt *P = F.PM->getParent(E.UnlockStmt);
            if (P && (isa<LabelStmt>(P) || isa<SwitchCase>(P)))
                Own.replace(*Sp, ";");
            else if (P && isa<CompoundStmt>(P))
                Own.replace(Src.wholeLines(*Sp), "");
            else
                Own.replace(*Sp, "{\n" + Src.indentOf(Sp->Begin) + "}");
        }
    }
    // Declarations that move into extracted functions leave their old place: per declaration
    // statement, the declarators that go (one declaration may give several to several
    // sections: `Edge *enew, *e_am;`).
    std::map<const DeclStmt *, std::vector<std::pair<const VarDecl *, Section *>>> Leaving;
    std::vector<const DeclStmt *> LeavingOrder;
    for (Section *S : Extracted) {
        Src.setEditOwner(S);
        Section *SP = S;
        FunctionContext *FP = &F;
        contextOf(S->Parent).replace(S->Whole, [this, FP, SP] { return callSite(*FP, *SP); });
        if (S->Trylock) {
            // The context before the if; lt_execute_trylock in place of the trylock.
            std::optional<unsigned> IfAt = Src.offset(S->TryIf->getBeginLoc());
            std::string IfIndent = Src.indentOf(*IfAt);
            contextOf(S->Parent).insert(*IfAt, [this, SP, IfIndent] {
                std::vector<std::string> L = contextDecl(*SP, IfIndent);
                L.push_back("void *" + SP->ResVar + ";");
                std::string Out;
                for (const std::string &X : L)
                    Out += X + "\n" + IfIndent;
                return Out;
            });
            contextOf(S->Parent).replace(S->TryCall, [this, FP, SP] {
                return "lt_execute_trylock(" + lockExpr(*FP, *SP) + ", " + SP->FnName + ", " +
                       (SP->HasCtx ? "&" + SP->CtxVar : std::string("NULL")) + ", &" + SP->ResVar +
                       ")";
            });
        }
        for (const Binding &B : S->Bindings) {
            if (B.Mode != BindMode::Moved)
                continue;
            const DeclStmt *D = declStmtOf(F, B.Var);
            if (!D)
                continue;
            if (!Leaving.count(D))
                LeavingOrder.push_back(D);
            Leaving[D].push_back({B.Var, S});
        }
    }
    for (const DeclStmt *D : LeavingOrder) {
        std::optional<Span> Sp = Src.stmtSpan(D);
        if (!Sp)
            continue;
        const auto &Gone = Leaving[D];
        Section *Owner = nullptr; // the extracted section whose code holds the declaration
        for (Section *E : Extracted)
            if (E->inHeld(Sp->Begin) && (!Owner || Owner->Body.contains(E->Body)))
                Owner = E;
        std::vector<const VarDecl *> Vars;
        for (const auto &G : Gone)
            Vars.push_back(G.first);
        Src.setEditOwner(Gone.front().second);
        if (std::optional<std::vector<Span>> Cuts = declaratorCuts(F, D, Vars)) {
            for (Span C : *Cuts)
                contextOf(Owner).replace(
                    C.Begin == Sp->Begin && C.End == Sp->End ? Src.wholeLines(C) : C, "");
            continue;
        }
        // Cut one declarator at a time (edits that overlap keep their sections).
        for (const auto &[V, S] : Gone) {
            Src.setEditOwner(S);
            if (std::optional<Span> Cut = declaratorSpan(F, D, V))
                contextOf(Owner).replace(*Cut, "");
        }
    }
    Src.setEditOwner(nullptr);
    // The functions, inner sections first (their functions are called by the outer ones).
    std::vector<Section *> Order;
    std::function<void(Section *)> Post = [&](Section *S) {
        for (Section *C : S->Children)
            if (C->Extract)
                Post(C);
        Order.push_back(S);
    };
    for (Section *S : Extracted)
        if (!S->Parent)
            Post(S);
    FunctionContext *FP = &F;
    FileEdits.insert(Src.insertionPointAbove(*F.FnBegin), [this, FP, Order] {
        std::string Out;
        for (Section *S : Order) {
            // Called only where its guarded section's #if holds (its own, or an enclosing
            // section's): defined there only, or the other configuration warns it is unused.
            std::string Fn = function(*FP, *S);
            for (Section *G = S; G; G = G->Parent)
                if (!G->Guard.empty())
                    Fn = G->Guard + "\n" + StringRef(Fn).rtrim().str() + "\n#endif\n\n";
            Out += Fn;
        }
        return Out;
    });
}

} // namespace locktune
