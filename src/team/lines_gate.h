// The host's side of a small piece moved as lines (kernels/ll_line.h) by the staged kernel
// (kernels/staged.h): the gate of the piece's host collective.  It opens once every input line
// carries the piece's flag; the payload is then unpacked into the slot, where the collective
// reads it, and the lines are zeroed.  At the piece's end, however it ended, the output is
// packed from the slot into the output lines with the piece's flag, and then the piece's number
// goes into the done word (forward only), which the kernel reads beside its line: a piece whose
// lines a later one overwrote (pieces ended unrun once the team stopped) still ends its kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/ll_line.h"
#include "team/coll_request.h"

namespace cohort {

struct LinesPiece {
  kernels::LlLine *in_lines = nullptr;  // the kernel writes ll_lines(in_bytes) of them
  char *in_slot = nullptr;              // where the collective reads its input
  size_t in_bytes = 0;
  kernels::LlLine *out_lines = nullptr;  // the kernel takes ll_lines(out_bytes) of them
  const char *out_slot = nullptr;        // where the collective left its output
  size_t out_bytes = 0;
  uint32_t *done = nullptr;
  uint32_t piece = 0;  // never 0 (the flag of a line that carries nothing)
};

// Both are what the kernel does on its side, in host code (the gate and the tests use them).
// Writes line i of `bytes` at `src` with `flag`, each half in one 8-byte store.
void put_line(kernels::LlLine *line, const void *src, size_t bytes, size_t i, uint32_t flag);
// True, with line i's payload put into `dst` (the part inside `bytes`), once both its halves
// carry `flag`.
bool take_line(const kernels::LlLine *line, uint32_t flag, size_t i, void *dst, size_t bytes);

std::shared_ptr<RequestGate> lines_gate(const LinesPiece &piece);

}  // namespace cohort
