// Where an autoregressive batch's rows come from (DESIGN.md section 2): row r of the
// batch of 0-based optimizer step s is the window of T + 1 tokens starting at
//   start = philox_word(seed, kBatchWindow, stream = s, word r) % (n - T)
// of the resident corpus of n tokens: inputs corpus[start, start + T), targets
// corpus[start + 1, start + T + 1). Validation uses fixed windows: window k starts at k * T,
// for k < min(eval_windows, (n_val - 1) / T). Written once for the device batch kernel,
// the host-batch baseline and the twin (reference/), which must agree token for token.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/common/hd.h"
#include "kernels/common/philox.h"

namespace noeira {

NOEIRA_HD int64_t batch_window_start(uint64_t seed, uint32_t step, uint32_t row, int64_t n_tokens,
                                     int64_t context) {
  const uint32_t w = philox_word(seed, RngPurpose::kBatchWindow, step, row);
  return static_cast<int64_t>(w % static_cast<uint64_t>(n_tokens - context));
}

// Row `row` of step `step`'s batch (Ops::batch_windows): inputs_row[t] = corpus[start + t],
// targets_row[t] = corpus[start + t + 1] for t < context. Host only (the CUDA kernel copies
// per element with batch_window_start).
inline void copy_batch_window(const int32_t* corpus, int64_t n_tokens, uint64_t seed,
                              uint32_t step, uint32_t row, int64_t context, int32_t* inputs_row,
                              int32_t* targets_row) {
  const int32_t* w = corpus + batch_window_start(seed, step, row, n_tokens, context);
  const size_t bytes = static_cast<size_t>(context) * sizeof(int32_t);
  std::memcpy(inputs_row, w, bytes);
  std::memcpy(targets_row, w + 1, bytes);
}

// The host-batch baseline (DEVICE_BATCH=false): fills inputs (B, T) and targets (B, T) of
// 0-based optimizer step `step` from the corpus on the host, as Ops::batch_windows does on
// the device: rows first_row .. first_row + B - 1 of the step's global batch. n_tokens > T.
inline void fill_batch_windows(const int32_t* corpus, int64_t n_tokens, uint64_t seed,
                               uint32_t step, int64_t B, int64_t T, int32_t* inputs,
                               int32_t* targets, int64_t first_row = 0) {
  for (int64_t r = 0; r < B; ++r)
    copy_batch_window(corpus, n_tokens, seed, step, static_cast<uint32_t>(first_row + r), T,
                      inputs + r * T, targets + r * T);
}

// How many fixed validation windows of `context` tokens (+1 for the last target) a split
// of n_val tokens holds, at most `cap` (0 = no cap).
NOEIRA_HD int64_t eval_window_count(int64_t n_val, int64_t context, int64_t cap) {
  const int64_t fit = n_val > context ? (n_val - 1) / context : 0;
  return cap > 0 && cap < fit ? cap : fit;
}

}  // namespace noeira
