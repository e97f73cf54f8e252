// Where an autoregressive batch's rows come from (DESIGN.md section 2): row r of the
// batch of 0-based optimizer step s is the window of T + 1 tokens starting at
//   start = philox_word(seed, kBatchWindow, stream = s, word r) % (n - T)
// of the resident corpus of n tokens: inputs corpus[start, start + T), targets
// corpus[start + 1, start + T + 1). Validation uses fixed windows: window k starts at k * T,
// for k < min(eval_windows, (n_val - 1) / T). Written once for the device batch kernel,
// the host-batch baseline and the twin (reference/), which must agree token for token.
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"
#include "kernels/common/philox.h"

namespace noeira {

NOEIRA_HD int64_t batch_window_start(uint64_t seed, uint32_t step, uint32_t row, int64_t n_tokens,
                                     int64_t context) {
  const uint32_t w = philox_word(seed, RngPurpose::kBatchWindow, step, row);
  return static_cast<int64_t>(w % static_cast<uint64_t>(n_tokens - context));
}

// How many fixed validation windows of `context` tokens (+1 for the last target) a split
// of n_val tokens holds, at most `cap` (0 = no cap).
NOEIRA_HD int64_t eval_window_count(int64_t n_val, int64_t context, int64_t cap) {
  const int64_t fit = n_val > context ? (n_val - 1) / context : 0;
  return cap > 0 && cap < fit ? cap : fit;
}

}  // namespace noeira
