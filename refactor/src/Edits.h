// Edits: replacements of main-file byte ranges, grouped by the code they belong to.
//
// An extracted critical section's text is the original text of its body with that section's
// own edits applied (its early exits, its variables passed by pointer, the sections nested in
// it), and the same bytes may also appear, with other edits, in the code around it (the code
// after an early unlock is replayed at the call site).  So edits live in contexts: the file
// has one, each extracted section has one, and rendering a range in a context applies that
// context's edits inside the range, outermost first (an edit inside a replaced range is part
// of what replaced it).  Replacement text is computed when it is rendered, so that a call
// site can embed text rendered in another context.
#ifndef LOCKTUNE_EXTRACT_EDITS_H
#define LOCKTUNE_EXTRACT_EDITS_H

#include "SourceText.h"

#include <functional>
#include <string>
#include <vector>

namespace locktune {

struct Edit {
    Span Range;                        // bytes replaced (empty: an insertion)
    std::function<std::string()> Text; // the replacement
    unsigned Seq = 0;                  // insertion order, to keep insertions at one offset stable
    const void *Owner = nullptr;       // the section that made it (SourceText::setEditOwner)
};

class EditContext {
public:
    explicit EditContext(const SourceText &Src) : Src(Src) {}

    void replace(Span Range, std::function<std::string()> Text);
    void replace(Span Range, std::string Text);
    void insert(unsigned Offset, std::function<std::string()> Text);
    bool empty() const
    {
        return Edits.empty();
    }

    // The bytes of Range with the edits that lie inside it applied.  Two edits that overlap
    // without one containing the other are a bug: the first is applied and the SourceText
    // records the conflict and the owners of both edits (their sections are then kept).
    std::string render(Span Range) const;

private:
    const SourceText &Src;
    std::vector<Edit> Edits;
};

} // namespace locktune

#endif
