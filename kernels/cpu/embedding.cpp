// CpuOps' token + position embedding (contracts: kernels/op_list.inc). Loops over rows
// (tokens, positions) that OpenMP spreads, each result computed by one thread in a fixed
// order, so 1 and N threads agree bit for bit. The CUDA backend and the twin compare
// against these orders:
//   embedding_forward   y = float(wte[id] + wpe[t]) rounded once into y's dtype.
//   embedding_backward  per token v: its rows in row order, in chunks of kEmbChunkRows,
//                       each summed from 0.0f in fp32, the chunk sums added in order and
//                       the total added to dwte[v] once (kernels/common/embedding_sum.h;
//                       the GPU's order). Per position t: s = 0.0f; s += dy[b*T + t] for
//                       b = 0, 1, ...; dwpe[t] += s. The rows are grouped per token by a
//                       stable counting sort in the workspace; ids outside [0, V) skipped.
#include <cstring>

#include "kernels/common/bf16.h"
#include "kernels/common/embedding_sum.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

template <class T>
void embedding_forward_impl(int threads, const int32_t* ids, const float* wte, const float* wpe,
                            T* y, int64_t rows, int64_t T_, int64_t C) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const float* e = wte + static_cast<int64_t>(ids[i]) * C;
    const float* p = wpe + (i % T_) * C;
    T* yr = y + i * C;
    for (int64_t c = 0; c < C; ++c) store_f32(yr[c], e[c] + p[c]);
  }
}

// Workspace: offsets (V + 1, int64), then the rows sorted by token (rows, int64). The
// chunk sums need none: one thread adds a token's chunks on its stack.
size_t embedding_ws_bytes(int64_t rows, int64_t V) {
  return static_cast<size_t>(V + 1 + rows) * sizeof(int64_t);
}

template <class T>
void embedding_backward_impl(int threads, const int32_t* ids, const T* dy, float* dwte,
                             float* dwpe, int64_t rows, int64_t T_, int64_t C, int64_t V,
                             void* workspace) {
  int64_t* offset = static_cast<int64_t*>(workspace);
  int64_t* order = offset + V + 1;
  // Stable counting sort of the rows by token: each token's rows stay in row order.
  std::memset(offset, 0, static_cast<size_t>(V + 1) * sizeof(int64_t));
  for (int64_t i = 0; i < rows; ++i)
    if (ids[i] >= 0 && ids[i] < V) ++offset[ids[i] + 1];
  for (int64_t v = 0; v < V; ++v) offset[v + 1] += offset[v];
  // offset[v] is now v's first slot; fill with a cursor that ends at offset[v + 1].
  for (int64_t i = 0; i < rows; ++i)
    if (ids[i] >= 0 && ids[i] < V) order[offset[ids[i]]++] = i;
  // The cursors moved each offset[v] to v's end = (v + 1)'s start: shift back.
  for (int64_t v = V; v > 0; --v) offset[v] = offset[v - 1];
  offset[0] = 0;

  // Columns in tiles on the stack, so a chunk's rows are added row by row (contiguous,
  // vectorised) while each column keeps the chunk order of embedding_sum.h.
  constexpr int64_t kTile = 256;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16)
  for (int64_t v = 0; v < V; ++v) {
    const int64_t b = offset[v], e = offset[v + 1];
    if (b == e) continue;
    float* d = dwte + v * C;
    for (int64_t c0 = 0; c0 < C; c0 += kTile) {
      const int64_t w = C - c0 < kTile ? C - c0 : kTile;
      float total[kTile], s[kTile];
      for (int64_t k0 = b; k0 < e; k0 += kEmbChunkRows) {
        const int64_t k1 = e - k0 < kEmbChunkRows ? e : k0 + kEmbChunkRows;
        for (int64_t j = 0; j < w; ++j) s[j] = 0.0f;
        for (int64_t k = k0; k < k1; ++k) {
          const T* row = dy + order[k] * C + c0;
          for (int64_t j = 0; j < w; ++j) s[j] += load_f32(row[j]);
        }
        for (int64_t j = 0; j < w; ++j) total[j] = k0 == b ? s[j] : total[j] + s[j];
      }
      for (int64_t j = 0; j < w; ++j) d[c0 + j] += total[j];
    }
  }
  if (dwpe == nullptr) return;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t t = 0; t < T_; ++t) {
    float* d = dwpe + t * C;
    for (int64_t c = 0; c < C; ++c) {
      float s = 0.0f;
      for (int64_t i = t; i < rows; i += T_) s += load_f32(dy[i * C + c]);
      d[c] += s;
    }
  }
}

}  // namespace

void CpuOps::embedding_forward(const int32_t* ids, const float* wte, const float* wpe, View y,
                               int64_t rows, int64_t T, int64_t C) {
  const char* op = "embedding_forward";
  expect_elems(op, rows * C, {y});
  dispatch_float(op, {y}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    embedding_forward_impl(threads_, ids, wte, wpe, y.as<S>(), rows, T, C);
  });
}

size_t CpuOps::embedding_workspace_bytes(int64_t rows, int64_t V, int64_t /*C*/) const {
  return embedding_ws_bytes(rows, V);
}

void CpuOps::embedding_backward(const int32_t* ids, ConstView dy, float* dwte, float* dwpe,
                                int64_t rows, int64_t T, int64_t C, int64_t V,
                                void* workspace) {
  const char* op = "embedding_backward";
  expect_elems(op, rows * C, {dy});
  dispatch_float(op, {dy}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    embedding_backward_impl(threads_, ids, dy.as<S>(), dwte, dwpe, rows, T, C, V, workspace);
  });
}

}  // namespace noeira
