#include "Edits.h"

#include <algorithm>

namespace locktune {

void EditContext::replace(Span Range, std::function<std::string()> Text)
{
    Edits.push_back(Edit{Range, std::move(Text), unsigned(Edits.size()), Src.editOwner()});
}

void EditContext::replace(Span Range, std::string Text)
{
    replace(Range, [T = std::move(Text)] { return T; });
}

void EditContext::insert(unsigned Offset, std::function<std::string()> Text)
{
    replace(Span{Offset, Offset}, std::move(Text));
}

std::string EditContext::render(Span Range) const
{
    std::vector<const Edit *> Inside;
    for (const Edit &E : Edits)
        if (Range.Begin <= E.Range.Begin && E.Range.End <= Range.End)
            Inside.push_back(&E);
    // Outermost first: by start, then longest, then insertion order.
    std::stable_sort(Inside.begin(), Inside.end(), [](const Edit *A, const Edit *B) {
        if (A->Range.Begin != B->Range.Begin)
            return A->Range.Begin < B->Range.Begin;
        if (A->Range.End != B->Range.End)
            return A->Range.End > B->Range.End;
        return A->Seq < B->Seq;
    });
    std::string Out;
    unsigned Pos = Range.Begin;
    const Edit *Last = nullptr; // the edit that replaced the bytes up to Pos
    for (const Edit *E : Inside) {
        // Inside (or overlapping) a range already replaced: part of that replacement.
        if (E->Range.Begin < Pos) {
            if (E->Range.End > Pos) // straddles the end of what was replaced
                Src.noteEditConflict(E->Owner, Last ? Last->Owner : nullptr);
            continue;
        }
        Last = E;
        Out += Src.text(Span{Pos, E->Range.Begin}).str();
        Out += E->Text();
        Pos = E->Range.End;
    }
    Out += Src.text(Span{Pos, Range.End}).str();
    return Out;
}

} // namespace locktune
