#include "FunctionFacts.h"

#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Lex/Lexer.h"

using namespace clang;

namespace locktune {

std::optional<unsigned> rewritableOffset(const SourceText &Src, SourceLocation Loc)
{
    const SourceManager &SM = Src.sm();
    if (Loc.isInvalid())
        return std::nullopt;
    if (Loc.isMacroID()) {
        if (!SM.isMacroArgExpansion(Loc))
            return std::nullopt;
        Loc = SM.getSpellingLoc(Loc);
        if (Loc.isMacroID())
            return std::nullopt;
    }
    if (SM.getFileID(Loc) != SM.getMainFileID())
        return std::nullopt;
    return SM.getFileOffset(Loc);
}

namespace {

class Collector : public RecursiveASTVisitor<Collector> {
public:
    Collector(const ParentMap &PM, const SourceText &Src, FunctionFacts &Out)
        : PM(PM), Src(Src), Out(Out)
    {
    }

    bool TraverseUnaryExprOrTypeTraitExpr(UnaryExprOrTypeTraitExpr *E)
    {
        // sizeof of a variable-length array evaluates its operand; everything else does not.
        bool Evaluated =
            E->isArgumentType() ? false : E->getArgumentExpr()->getType()->isVariableArrayType();
        if (!Evaluated)
            ++Unevaluated;
        bool R = RecursiveASTVisitor::TraverseUnaryExprOrTypeTraitExpr(E);
        if (!Evaluated)
            --Unevaluated;
        return R;
    }
    bool TraverseTypeOfExprTypeLoc(TypeOfExprTypeLoc TL)
    {
        ++Unevaluated;
        bool R = RecursiveASTVisitor::TraverseTypeOfExprTypeLoc(TL);
        --Unevaluated;
        return R;
    }

    bool VisitVarDecl(VarDecl *V)
    {
        Out.LocalNames.insert(V->getNameAsString());
        Out.AllNames.insert(V->getNameAsString());
        return true;
    }
    bool VisitDeclStmt(DeclStmt *D)
    {
        Out.Decls.push_back(D);
        return true;
    }
    bool VisitGotoStmt(GotoStmt *G)
    {
        Out.Gotos.push_back(G);
        return true;
    }
    bool VisitIndirectGotoStmt(IndirectGotoStmt *)
    {
        Out.ComputedGoto = true;
        return true;
    }
    bool VisitAddrLabelExpr(AddrLabelExpr *)
    {
        Out.ComputedGoto = true;
        return true;
    }
    bool VisitLabelStmt(LabelStmt *L)
    {
        Out.Labels.push_back(L);
        return true;
    }
    bool VisitSwitchStmt(SwitchStmt *S)
    {
        for (const SwitchCase *C = S->getSwitchCaseList(); C; C = C->getNextSwitchCase())
            Out.SwitchOf[C] = S;
        return true;
    }
    bool VisitPredefinedExpr(PredefinedExpr *E)
    {
        Out.FuncNames.push_back(E);
        return true;
    }
    bool VisitCallExpr(CallExpr *C)
    {
        Out.Calls.push_back(C);
        return true;
    }
    bool VisitDeclRefExpr(DeclRefExpr *E)
    {
        Out.AllNames.insert(E->getDecl()->getNameAsString());
        const auto *V = dyn_cast<VarDecl>(E->getDecl());
        if (!V)
            return true;
        VarRef R;
        R.Ref = E;
        R.Var = V;
        R.At = Src.offset(E->getBeginLoc()).value_or(0);
        R.Unevaluated = Unevaluated > 0;
        R.Spelled = rewritableOffset(Src, E->getLocation());
        // What the reference does: climb through parentheses and implicit conversions.
        const Stmt *Child = E;
        const Stmt *P = PM.getParent(E);
        bool Bracketed = false;
        while (P && (isa<ParenExpr>(P) || isa<ImplicitCastExpr>(P))) {
            Bracketed |= isa<ParenExpr>(P);
            Child = P;
            P = PM.getParent(P);
        }
        if (P) {
            if (const auto *U = dyn_cast<UnaryOperator>(P)) {
                if (U->getOpcode() == UO_AddrOf)
                    R.AddrTaken = true;
                if (U->isIncrementDecrementOp())
                    R.Write = R.Assigned = true;
                if (U->isPostfix() && !Bracketed)
                    R.Postfix = true;
            } else if (const auto *B = dyn_cast<BinaryOperator>(P)) {
                if (B->isAssignmentOp() && B->getLHS() == Child) {
                    R.Write = R.Assigned = true;
                    R.PureWrite = B->getOpcode() == BO_Assign;
                }
            } else if (const auto *M = dyn_cast<MemberExpr>(P)) {
                if (M->getBase() == Child) {
                    if (!M->isArrow()) {
                        R.DotBase = true;
                        R.DotAt = rewritableOffset(Src, M->getOperatorLoc());
                        // &v.f and v.f = x touch v itself.
                        const Stmt *Q =
                            PM.getParentIgnoreParenImpCasts(const_cast<MemberExpr *>(M));
                        if (const auto *U = dyn_cast_or_null<UnaryOperator>(Q))
                            R.AddrTaken |= U->getOpcode() == UO_AddrOf;
                        R.Write = true; // conservatively: a member may be written
                    } else if (!Bracketed) {
                        R.Postfix = true;
                    }
                }
            } else if (const auto *A = dyn_cast<ArraySubscriptExpr>(P)) {
                if (A->getBase() == Child && !Bracketed)
                    R.Postfix = true;
                if (A->getBase() == Child && V->getType()->isArrayType()) {
                    const Stmt *Q =
                        PM.getParentIgnoreParenImpCasts(const_cast<ArraySubscriptExpr *>(A));
                    if (const auto *U = dyn_cast_or_null<UnaryOperator>(Q))
                        R.AddrTaken |= U->getOpcode() == UO_AddrOf;
                    R.Write = true;
                }
            } else if (const auto *C = dyn_cast<CallExpr>(P)) {
                if (C->getCallee() == Child && !Bracketed)
                    R.Postfix = true;
            }
        }
        if (R.AddrTaken && !R.Unevaluated)
            Out.AddrTaken.insert(V);
        Out.Refs.push_back(R);
        return true;
    }

private:
    const ParentMap &PM;
    const SourceText &Src;
    FunctionFacts &Out;
    int Unevaluated = 0;
};

} // namespace

FunctionFacts collectFacts(const FunctionDecl *Fn, const ParentMap &PM, const SourceText &Src)
{
    FunctionFacts F;
    for (const ParmVarDecl *P : Fn->parameters())
        F.LocalNames.insert(P->getNameAsString());
    for (const ParmVarDecl *P : Fn->parameters())
        F.AllNames.insert(P->getNameAsString());
    Collector C(PM, Src, F);
    C.TraverseStmt(Fn->getBody());
    return F;
}

void noteExcludedCode(FunctionFacts &F, const FunctionDecl *Fn, const SourceText &Src,
                      const std::vector<Span> &Skipped)
{
    std::optional<Span> Body =
        Fn->getBody() ? Src.span(Fn->getBody()->getSourceRange()) : std::nullopt;
    if (!Body)
        return;
    for (Span Sk : Skipped) {
        if (!(Body->Begin < Sk.End && Sk.Begin < Body->End))
            continue;
        std::string Text = Src.text(Sk).str();
        LangOptions LO = Src.langOpts();
        Lexer L(SourceLocation(), LO, Text.data(), Text.data(), Text.data() + Text.size());
        L.SetCommentRetentionState(false);
        IdentifierTable Keywords(LO);
        FunctionFacts::Excluded E{Sk, {}, {}, {}};
        std::vector<Token> Toks;
        // Preprocessor lines (`#ifdef X`, `#endif`) are not code.
        bool Directive = false;
        for (Token Tok; L.LexFromRawLexer(Tok), !Tok.is(tok::eof);) {
            if (Tok.isAtStartOfLine())
                Directive = Tok.is(tok::hash);
            if (!Directive)
                Toks.push_back(Tok);
        }
        // Blocks opened as the body of a loop (L) or a switch (S) of the excluded code itself,
        // so that a break or continue in them stays there.
        std::vector<char> Blocks;
        char Pending = 0; // a loop or switch header seen, its body not yet opened
        int Parens = 0;
        auto inOwn = [&](bool Continue) {
            for (char B : Blocks)
                if (B == 'L' || (B == 'S' && !Continue))
                    return true;
            return Pending == 'L' || (Pending == 'S' && !Continue);
        };
        for (size_t I = 0; I < Toks.size(); ++I) {
            if (Toks[I].is(tok::l_paren))
                ++Parens;
            else if (Toks[I].is(tok::r_paren))
                --Parens;
            else if (Toks[I].is(tok::l_brace))
                Blocks.push_back(Pending ? Pending : 'B'), Pending = 0;
            else if (Toks[I].is(tok::r_brace) && !Blocks.empty())
                Blocks.pop_back();
            else if (Toks[I].is(tok::semi) && Parens == 0)
                Pending = 0;
            if (!Toks[I].is(tok::raw_identifier))
                continue;
            std::string Id = Toks[I].getRawIdentifier().str();
            E.Names.push_back(Id);
            if (Id == "while" || Id == "for" || Id == "do")
                Pending = 'L';
            else if (Id == "switch")
                Pending = 'S';
            else if (Id == "return" || Id == "goto" || Id == "__func__" ||
                     ((Id == "break" || Id == "continue") && !inOwn(Id == "continue")))
                E.Leaves.push_back(Id);
            bool Member = I > 0 && Toks[I - 1].isOneOf(tok::period, tok::arrow);
            bool Called = I + 1 < Toks.size() && Toks[I + 1].is(tok::l_paren);
            if (!Member && !Called && !Keywords.get(Id).isKeyword(LO))
                E.Plain.push_back(Id);
        }
        F.ExcludedCode.push_back(std::move(E));
    }
}

} // namespace locktune
