// LoopRotation: a background thread's loop that lets its lock go for an instant, rotated so
// that each turn's critical section closes a block, in the order the program already runs.
//
// Three shapes.  Two are an endless loop (`while (1)`, `for (;;)`) right after the lock call:
//
//   window at the end (E)              window at the top (T)
//
//   lock(&m);                          lock(&m);
//   for (;;) {                         for (;;) {
//       B                                  unlock(&m);
//       unlock(&m);                        W
//       W                                  lock(&m);
//       lock(&m);                          B
//   }                                  }
//
// become
//
//   for (;;) { lock(&m);               lock(&m); unlock(&m);
//       B                              for (;;) {
//       unlock(&m);                        W
//       W                                  lock(&m);
//   }                                      B
//                                      pthread_mutex_unlock(&m); }
//
// And a loop with a test, the lock released at the top of each turn and right after the loop
// (memcached's LRU maintainer):
//
//   lock(&m);                          int g; lock(&m);
//   P                                  P
//   while (c) {                        g = (c) != 0; unlock(&m); while (g) {
//       unlock(&m);
//       W                                  W
//       lock(&m);                          lock(&m);
//       B                                  B
//   }                                  g = (c) != 0; unlock(&m); }
//   unlock(&m);
//
// (W: the test, then the unlock that follows it on either outcome, end each turn.)
//
// The calls run in exactly the order they ran: E's lock before the loop is the first turn's
// first call, and its lock at the end of a turn is the next turn's first (the two must be
// written alike, since either text now stands for both); T's unlock at the top of a turn is
// the previous turn's last call (the first one's: right after the lock before the loop).
// No continue of the loop may skip part of a turn, no label may let a goto enter one half-way,
// and the lock is taken and released nowhere else in the loop: B and W run with and without
// the lock exactly as before; what moves to the end of a turn names nothing a declaration of
// the turn itself would capture there.  In E and T a break, return or goto out of the loop leaves
// it holding the lock or not exactly as before (the moved calls sit at the turn's two ends); in W
// a break or goto would skip the unlock now at the turn's end, and blocks the rotation.  The edits
// keep every line where it was, so that every line number the report, the lock sites and a profile
// use stays the same.
#ifndef LOCKTUNE_EXTRACT_LOOPROTATION_H
#define LOCKTUNE_EXTRACT_LOOPROTATION_H

#include "Section.h"

#include <string>
#include <vector>

namespace locktune {

struct Rotation {
    char Shape = 'E';             // 'E', 'T' or 'W', as above
    unsigned LoopLine = 0;        // the loop's first line
    std::vector<unsigned> Lines;  // the lines of the lock calls that open sections after it
    std::vector<unsigned> Before; // ... and before it: the loop's two lock calls as written
    std::string Lock;             // the lock as written
    // The edits, in offsets of the main file: (span, replacement).
    std::vector<std::pair<Span, std::string>> Edits;
};

// The rotations of function F's loops (F.Ops, F.OpOrder and F.PM set).
std::vector<Rotation> findRotations(const FunctionContext &F);

// What the rotation did, for the report.
std::string describe(const Rotation &R);

// Text with the rotations' edits applied (they must not overlap); a line left blank by a
// deletion keeps its newline and loses its indentation.
std::string applyRotations(llvm::StringRef Text, const std::vector<Rotation> &Rs);

} // namespace locktune

#endif
