// The fixed order of the embedding backward's token sums (dwte), written once so the CPU
// loop (kernels/cpu/embedding.cpp), the CUDA kernels (kernels/cuda/embedding.cu) and the
// tests agree on it (DESIGN.md rule 5).
//
// Order. Token v's rows, in row order, are cut into chunks of K = kEmbChunkRows rows (the
// last may be shorter). Each chunk is summed in row order in fp32 from 0.0f; the chunk
// sums are added in chunk order (total = s0; total += s1; ...); dwte[v] += total, once. A
// token with at most K rows is a plain row-order sum. The chunks depend on the ids alone.
//
// The GPU's decomposition, over the rows sorted by token (a stable sort, so each token's
// rows stay in row order; key = the token, V for an id outside [0, V): sorted last and
// skipped). Window j = sorted positions [jK, jK + K).
//   Pass 1: block j sums the chunks that start in window j (disjoint and at most K rows
//   long: at most 2K rows in all). A token's only chunk goes straight into dwte; a chunk
//   of a longer token into its partial slot.
//   Pass 2: block j adds the slots of the longer token whose run starts in window j (at
//   most one: a first one runs past the window) in chunk order, and the total into dwte.
// Slots: chunk k of a run starting at b begins at s = b + kK; its slot is 2 floor(s / K),
// plus 1 when k = 0 and b % K != 0. Slot 2j is the one run covering position jK (a later
// chunk's run starts at or before jK); slot 2j + 1 the one longer run starting strictly
// inside window j. So 2 ceil(rows / K) slots of C floats. rows <= INT_MAX (int32 keys).
#pragma once
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/hd.h"

namespace noeira {

inline constexpr int64_t kEmbChunkRows = 64;  // K: rows per chunk of a token's sum
inline constexpr int64_t kEmbCols = 256;      // columns per GPU block (threads)
inline constexpr int64_t kEmbMaxColTiles = 65535;  // gridDim.y's limit

NOEIRA_HD int64_t emb_windows(int64_t rows) { return (rows + kEmbChunkRows - 1) / kEmbChunkRows; }
NOEIRA_HD int64_t emb_partial_slots(int64_t rows) { return 2 * emb_windows(rows); }
NOEIRA_HD int64_t emb_col_tiles(int64_t C) {
  const int64_t t = (C + kEmbCols - 1) / kEmbCols;
  return t < kEmbMaxColTiles ? t : kEmbMaxColTiles;
}
NOEIRA_HD int64_t emb_chunks(int64_t run_rows) {
  return (run_rows + kEmbChunkRows - 1) / kEmbChunkRows;
}
NOEIRA_HD int64_t emb_chunk_slot(int64_t run_begin, int64_t k) {
  const int64_t s = run_begin + k * kEmbChunkRows;
  return 2 * (s / kEmbChunkRows) + (k == 0 && run_begin % kEmbChunkRows != 0 ? 1 : 0);
}

// keys sorted. The first position of the run holding p.
NOEIRA_HD int64_t emb_run_begin(const int32_t* keys, int64_t p) {
  const int32_t v = keys[p];
  int64_t lo = -1, hi = p;  // keys[hi] == v; lo < 0 or keys[lo] != v
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] == v) hi = mid;
    else lo = mid;
  }
  return hi;
}

// keys sorted. The end of the run holding p, or `bound` (> p) when it reaches that far.
NOEIRA_HD int64_t emb_run_end(const int32_t* keys, int64_t p, int64_t bound) {
  const int32_t v = keys[p];
  int64_t lo = p, hi = bound;  // keys[lo] == v; hi == bound or keys[hi] != v
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] == v) lo = mid;
    else hi = mid;
  }
  return hi;
}

struct EmbChunk {
  int32_t token = 0;
  int64_t begin = 0, end = 0;  // sorted positions
  int64_t run_begin = 0;       // the token's first sorted position
  int64_t index = 0;           // k: the chunk's place in its token's run
  bool only = false;           // the token's only chunk: its sum goes straight into dwte
  NOEIRA_HD int64_t slot() const { return emb_chunk_slot(run_begin, index); }
};

// The chunks that start in window j, in position order: for (EmbChunk c; scan.next(c);).
// Run starts are found from the keys alone: a binary search for the window's first
// position, then a change of key.
struct EmbWindowScan {
  const int32_t* keys;
  int64_t rows, V, p, end, run_begin;

  NOEIRA_HD EmbWindowScan(const int32_t* k, int64_t rows_, int64_t V_, int64_t window)
      : keys(k), rows(rows_), V(V_), p(window * kEmbChunkRows),
        end(p + kEmbChunkRows < rows_ ? p + kEmbChunkRows : rows_),
        run_begin(p < rows_ ? emb_run_begin(k, p) : 0) {}

  NOEIRA_HD bool next(EmbChunk& c) {
    for (; p < end; ++p) {
      const int32_t v = keys[p];
      if (p > 0 && keys[p - 1] != v) run_begin = p;
      if (v >= V) return false;  // bad ids: the sorted tail
      if ((p - run_begin) % kEmbChunkRows != 0) continue;
      c.token = v;
      c.begin = p;
      c.run_begin = run_begin;
      c.index = (p - run_begin) / kEmbChunkRows;
      c.end = emb_run_end(keys, p, p + kEmbChunkRows < rows ? p + kEmbChunkRows : rows);
      c.only = c.index == 0 && (p + kEmbChunkRows >= rows || keys[p + kEmbChunkRows] != v);
      ++p;
      return true;
    }
    return false;
  }
};

// Pass 1 for window j over columns c0, c0 + dc, ... < C: one CUDA thread's work (the host
// emulation runs it for every block and thread). order[q] = the row at sorted position q;
// dy (rows, C); dwte (V, C); partials (emb_partial_slots(rows), C).
template <class T>
NOEIRA_HD void emb_chunk_sums(const int32_t* keys, const int32_t* order, const T* dy,
                              float* dwte, float* partials, int64_t rows, int64_t C, int64_t V,
                              int64_t window, int64_t c0, int64_t dc) {
  EmbWindowScan scan(keys, rows, V, window);
  for (EmbChunk ch; scan.next(ch);) {
    float* out = ch.only ? dwte + ch.token * C : partials + ch.slot() * C;
    for (int64_t c = c0; c < C; c += dc) {
      float s = 0.0f;
#if defined(__CUDA_ARCH__)
#pragma unroll 4
#endif
      for (int64_t q = ch.begin; q < ch.end; ++q)
        s += load_f32(dy[static_cast<int64_t>(order[q]) * C + c]);
      if (ch.only) out[c] += s;
      else out[c] = s;
    }
  }
}

// Pass 2 for window j over columns c0, c0 + dc, ... < C (as emb_chunk_sums).
NOEIRA_HD void emb_chunk_totals(const int32_t* keys, const float* partials, float* dwte,
                                int64_t rows, int64_t C, int64_t V, int64_t window, int64_t c0,
                                int64_t dc) {
  EmbWindowScan scan(keys, rows, V, window);
  for (EmbChunk ch; scan.next(ch);) {
    if (ch.index != 0 || ch.only) continue;  // not the start of a longer run
    const int64_t chunks = emb_chunks(emb_run_end(keys, ch.begin, rows) - ch.begin);
    for (int64_t c = c0; c < C; c += dc) {
      float total = partials[emb_chunk_slot(ch.begin, 0) * C + c];
      for (int64_t k = 1; k < chunks; ++k) total += partials[emb_chunk_slot(ch.begin, k) * C + c];
      dwte[ch.token * C + c] += total;
    }
    return;  // at most one per window
  }
}

// The host's rendering of the order, straight from the ids (tests compare both backends
// with it bit for bit): dwte (V, C) += token sums of dy (rows, C); ids outside [0, V) skipped.
template <class T>
void embedding_token_sums_in_order(const int32_t* ids, const T* dy, float* dwte, int64_t rows,
                                   int64_t C, int64_t V) {
  for (int64_t v = 0; v < V; ++v)
    for (int64_t c = 0; c < C; ++c) {
      float total = 0.0f, s = 0.0f;
      int64_t n = 0;  // rows of v so far
      for (int64_t i = 0; i < rows; ++i) {
        if (ids[i] != v) continue;
        if (n % kEmbChunkRows == 0) s = 0.0f;
        s += load_f32(dy[i * C + c]);
        if (++n % kEmbChunkRows == 0) total = n == kEmbChunkRows ? s : total + s;
      }
      if (n == 0) continue;
      if (n % kEmbChunkRows != 0) total = n < kEmbChunkRows ? s : total + s;
      dwte[v * C + c] += total;
    }
}

}  // namespace noeira
