// The fixed summation order of the GPU's column sums (CudaOps::bias_grad), written once so
// the CUDA kernels, the backend's planning and the tests agree on it (DESIGN.md rule 5).
//
// The M rows are cut into `chunks` consecutive chunks of `rows_per_chunk` rows (the last
// may be shorter). In a chunk, lane l (0 <= l < kColumnSumLanes) sums rows begin + l,
// begin + l + kColumnSumLanes, ... in ascending order; the lane sums are folded pairwise
// (lane l += lane l + h, for h = kColumnSumLanes / 2, ..., 1): that is the chunk's
// partial. The partials are added in chunk order (p0 + p1 + ...) and the total is added
// to db. The order depends on M only, never on scheduling, so every run (eager or
// captured) repeats it bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/hd.h"

namespace noeira {

inline constexpr int kColumnSumLanes = 8;                // row lanes per column in a chunk
inline constexpr int64_t kColumnSumMaxChunks = 64;       // row chunks at most
inline constexpr int64_t kColumnSumMinChunkRows = 128;   // a smaller chunk is not worth a pass
inline constexpr int64_t kColumnSumPassCols = 8192;      // columns per pass over the partials

// Scratch the chunked sum needs: one fp32 partial per (chunk, column) of a pass. Fixed,
// whatever the shapes, so it is planned once (Ops::reduction_workspace_bytes).
inline constexpr size_t kColumnSumWorkspaceBytes =
    static_cast<size_t>(kColumnSumMaxChunks * kColumnSumPassCols) * sizeof(float);

struct ColumnSumPlan {
  int64_t chunks = 1;          // >= 1; 1 = one pass straight into db
  int64_t rows_per_chunk = 0;  // every chunk but the last has exactly this many rows

  NOEIRA_HD int64_t begin(int64_t c) const { return c * rows_per_chunk; }
  NOEIRA_HD int64_t end(int64_t c, int64_t M) const {
    const int64_t e = (c + 1) * rows_per_chunk;
    return e < M ? e : M;
  }
};

// Chunks for M rows: one per whole kColumnSumMinChunkRows rows, at least 1, at most
// max_chunks (1 when no partial buffer is available), and no empty chunk.
NOEIRA_HD ColumnSumPlan column_sum_plan(int64_t M, int64_t max_chunks) {
  ColumnSumPlan p;
  if (M <= 0) return p;  // one (empty) chunk: db += 0
  int64_t chunks = M / kColumnSumMinChunkRows;
  if (chunks > max_chunks) chunks = max_chunks;
  if (chunks < 1) chunks = 1;
  p.rows_per_chunk = (M + chunks - 1) / chunks;
  p.chunks = (M + p.rows_per_chunk - 1) / p.rows_per_chunk;  // rounding may leave fewer
  return p;
}

// The host's rendering of the order above (tests compare the GPU with it bit for bit):
// db(N) += column sums of dy(M, N), T fp32 or bf16.
template <class T>
void column_sums_in_gpu_order(const T* dy, float* db, int64_t M, int64_t N,
                              const ColumnSumPlan& plan) {
  for (int64_t j = 0; j < N; ++j) {
    float total = 0.0f;
    for (int64_t c = 0; c < plan.chunks; ++c) {
      float lane[kColumnSumLanes];
      for (int l = 0; l < kColumnSumLanes; ++l) {
        lane[l] = 0.0f;
        for (int64_t i = plan.begin(c) + l; i < plan.end(c, M); i += kColumnSumLanes)
          lane[l] += load_f32(dy[i * N + j]);
      }
      for (int h = kColumnSumLanes / 2; h > 0; h /= 2)
        for (int l = 0; l < h; ++l) lane[l] += lane[l + h];
      total = c == 0 ? lane[0] : total + lane[0];
    }
    db[j] += total;
  }
}

}  // namespace noeira
