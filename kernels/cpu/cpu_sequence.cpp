// CpuOps' sequence ops (contracts: kernels/ops.h, "Sequences"): embedding, LayerNorm and
// global-norm gradient clipping. Loops over rows (or tokens, positions, segments) that
// OpenMP spreads, each result computed by one thread in a fixed order, so 1 and N threads
// agree bit for bit. The per-element math is kernels/common/layernorm.h's and clip.h's.
//
// Orders (the CUDA backend and the twin compare against these):
//   embedding_forward   y = float(wte[id] + wpe[t]) rounded once into y's dtype.
//   embedding_backward  per token v: s = 0.0f; s += dy row, for v's rows in row order
//                       (fp32); dwte[v] += s. Per position t: s = 0.0f; s += dy[b*T + t]
//                       for b = 0, 1, ...; dwpe[t] += s. The rows are grouped per token by
//                       a stable counting sort in the workspace.
//   layernorm_*         kernels/common/layernorm.h; dgamma/dbeta: per column, double sums
//                       over the rows in row order, added to the fp32 gradient once.
//   clip_grad_norm      kernels/common/clip.h; each segment's squares in double in
//                       element order, segment norms combined in segment order.
#include <cstring>

#include "kernels/common/clip.h"
#include "kernels/common/layernorm.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// ---- Embedding ----

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

// Workspace: offsets (V + 1, int64), then the rows sorted by token (rows, int64).
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
  for (int64_t i = 0; i < rows; ++i) ++offset[ids[i] + 1];
  for (int64_t v = 0; v < V; ++v) offset[v + 1] += offset[v];
  // offset[v] is now v's first slot; fill with a cursor that ends at offset[v + 1].
  for (int64_t i = 0; i < rows; ++i) order[offset[ids[i]]++] = i;
  // The cursors moved each offset[v] to v's end = (v + 1)'s start: shift back.
  for (int64_t v = V; v > 0; --v) offset[v] = offset[v - 1];
  offset[0] = 0;

#pragma omp parallel for num_threads(threads) schedule(dynamic, 16)
  for (int64_t v = 0; v < V; ++v) {
    const int64_t b = offset[v], e = offset[v + 1];
    if (b == e) continue;
    float* d = dwte + v * C;
    for (int64_t c = 0; c < C; ++c) {
      float s = 0.0f;
      for (int64_t k = b; k < e; ++k) s += load_f32(dy[order[k] * C + c]);
      d[c] += s;
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

// ---- LayerNorm ----

template <class T>
void layernorm_forward_impl(int threads, const T* x, const float* gamma, const float* beta, T* y,
                            float* mean, float* rstd, int64_t N, int64_t C, float eps) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < N; ++r) {
    const T* xr = x + r * C;
    double sum = 0.0, sumsq = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      const double v = load_f32(xr[c]);
      sum += v;
      sumsq += v * v;
    }
    const LayerNormStats st = layernorm_stats(sum, sumsq, C, eps);
    mean[r] = st.mean;
    rstd[r] = st.rstd;
    T* yr = y + r * C;
    for (int64_t c = 0; c < C; ++c)
      store_f32(yr[c], layernorm_apply(load_f32(xr[c]), st.mean, st.rstd, gamma[c],
                                       beta != nullptr ? beta[c] : 0.0f));
  }
}

inline constexpr int64_t kLnColBlock = 64;  // columns per block of the parameter gradients

template <class T>
void layernorm_backward_impl(int threads, const T* dy, const T* x, const float* gamma,
                             const float* mean, const float* rstd, T* dx, float* dgamma,
                             float* dbeta, int64_t N, int64_t C) {
  if (dx != nullptr) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < N; ++r) {
      const T* dyr = dy + r * C;
      const T* xr = x + r * C;
      double sum_g = 0.0, sum_g_xhat = 0.0;
      for (int64_t c = 0; c < C; ++c) {
        const float g = load_f32(dyr[c]) * gamma[c];
        const float xhat = layernorm_xhat(load_f32(xr[c]), mean[r], rstd[r]);
        sum_g += static_cast<double>(g);
        sum_g_xhat += static_cast<double>(g) * static_cast<double>(xhat);
      }
      const LayerNormBackStats s = layernorm_back_stats(sum_g, sum_g_xhat, C);
      T* dxr = dx + r * C;
      for (int64_t c = 0; c < C; ++c) {
        const float g = load_f32(dyr[c]) * gamma[c];
        const float xhat = layernorm_xhat(load_f32(xr[c]), mean[r], rstd[r]);
        store_f32(dxr[c], layernorm_dx(g, xhat, rstd[r], s));
      }
    }
  }
  if (dgamma == nullptr && dbeta == nullptr) return;
  const int64_t blocks = (C + kLnColBlock - 1) / kLnColBlock;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kLnColBlock;
    const int64_t nc = C - c0 < kLnColBlock ? C - c0 : kLnColBlock;
    double sg[kLnColBlock] = {}, sb[kLnColBlock] = {};
    for (int64_t r = 0; r < N; ++r) {
      const T* dyr = dy + r * C + c0;
      const T* xr = x + r * C + c0;
      for (int64_t c = 0; c < nc; ++c) {
        const double d = load_f32(dyr[c]);
        sg[c] += d * static_cast<double>(layernorm_xhat(load_f32(xr[c]), mean[r], rstd[r]));
        sb[c] += d;
      }
    }
    for (int64_t c = 0; c < nc; ++c) {
      if (dgamma != nullptr) dgamma[c0 + c] += static_cast<float>(sg[c]);
      if (dbeta != nullptr) dbeta[c0 + c] += static_cast<float>(sb[c]);
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

size_t CpuOps::embedding_workspace_bytes(int64_t rows, int64_t V) const {
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

void CpuOps::layernorm_forward(ConstView x, const float* gamma, const float* beta, View y,
                               float* mean, float* rstd, int64_t N, int64_t C, float eps) {
  const char* op = "layernorm_forward";
  expect_elems(op, N * C, {x, y});
  dispatch_float(op, {x, y}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    layernorm_forward_impl(threads_, x.as<S>(), gamma, beta, y.as<S>(), mean, rstd, N, C, eps);
  });
}

void CpuOps::layernorm_backward(ConstView dy, ConstView x, const float* gamma,
                                const float* mean, const float* rstd, View dx, float* dgamma,
                                float* dbeta, int64_t N, int64_t C, void* /*workspace*/) {
  const char* op = "layernorm_backward";
  expect_elems(op, N * C, {dy, x, dx});
  dispatch_float(op, {dy, x, dx}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    layernorm_backward_impl(threads_, dy.as<S>(), x.as<S>(), gamma, mean, rstd, dx.as<S>(),
                            dgamma, dbeta, N, C);
  });
}

// ---- Gradient clipping ----

size_t CpuOps::clip_workspace_bytes(int64_t n_segments) const {
  return static_cast<size_t>(n_segments) * sizeof(float);
}

void CpuOps::clip_grad_norm(float* g, const int64_t* segments, int64_t n_segments,
                            float max_norm, float* norm, void* workspace) {
  float* seg_norm = static_cast<float*>(workspace);
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
  for (int64_t p = 0; p < n_segments; ++p) {
    double sq = 0.0;
    for (int64_t i = segments[p]; i < segments[p + 1]; ++i)
      sq += static_cast<double>(g[i]) * static_cast<double>(g[i]);
    seg_norm[p] = clip_segment_norm(sq);
  }
  double total_sq = 0.0;
  for (int64_t p = 0; p < n_segments; ++p) total_sq += clip_norm_square(seg_norm[p]);
  const float total = clip_total_norm(total_sq);
  *norm = total;
  const float coef = clip_coefficient(total, max_norm);
  const int64_t n = n_segments > 0 ? segments[n_segments] - segments[0] : 0;
  float* g0 = g + (n_segments > 0 ? segments[0] : 0);
#pragma omp parallel for simd num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < n; ++i) g0[i] *= coef;
}

}  // namespace noeira
