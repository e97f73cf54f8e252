// CpuOps' LayerNorm (contracts: kernels/op_list.inc): rows that OpenMP spreads, each
// computed by one thread, with kernels/common/layernorm.h's per-element math; a row's two
// double sums in 8 lanes (kernels/cpu/lane_sums.h). dgamma and dbeta: per column, double
// sums over fixed 32-row chunks in row order, the chunks' sums added in chunk order, then
// to the fp32 gradient once; so 1 and N threads agree bit for bit.
#include <algorithm>

#include "kernels/common/bf16.h"
#include "kernels/common/layernorm.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/lane_sums.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

template <class T>
void layernorm_forward_impl(int threads, const T* x, const float* gamma, const float* beta, T* y,
                            float* mean, float* rstd, int64_t N, int64_t C, float eps) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < N; ++r) {
    const T* xr = x + r * C;
    const LanePair sums = lane_sums(1, C, [xr](int64_t, int64_t c) {
      const double v = load_f32(xr[c]);
      return LanePair{v, v * v};
    });
    const LayerNormStats st = layernorm_stats(sums.a, sums.b, C, eps);
    mean[r] = st.mean;
    rstd[r] = st.rstd;
    T* yr = y + r * C;
    for (int64_t c = 0; c < C; ++c)
      store_f32(yr[c], layernorm_apply(load_f32(xr[c]), st.mean, st.rstd, gamma[c],
                                       beta != nullptr ? beta[c] : 0.0f));
  }
}

// Rows per chunk of the parameter gradients' partial sums: fixed, so their order is a
// function of N alone.
inline constexpr int64_t kLnRowChunk = 32;
inline constexpr int64_t kLnColBlock = 64;  // columns per block of the chunks' final sum

int64_t ln_row_chunks(int64_t N) { return (N + kLnRowChunk - 1) / kLnRowChunk; }

// One pass over dy and x: each chunk of rows, on one thread, writes its rows' dx and adds
// their dgamma and dbeta terms in row order into the chunk's double partials (the
// workspace, 2C per chunk); the partials are then added in chunk order, per column. (Two
// passes, the parameter gradients reading dy and x again, cost vit-tiny's 9 LayerNorms
// about a third more memory traffic.)
template <class T>
void layernorm_backward_impl(int threads, const T* dy, const T* x, const float* gamma,
                             const float* mean, const float* rstd, T* dx, const T* dres,
                             float* dgamma, float* dbeta, int64_t N, int64_t C,
                             double* partials) {
  const bool params = dgamma != nullptr || dbeta != nullptr;
  const int64_t chunks = ln_row_chunks(N);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t k = 0; k < chunks; ++k) {
    double* __restrict pg = partials + k * 2 * C;  // sum(dy * xhat), then sum(dy)
    double* __restrict pb = pg + C;
    if (params)
      for (int64_t c = 0; c < 2 * C; ++c) pg[c] = 0.0;
    const int64_t r1 = std::min(N, (k + 1) * kLnRowChunk);
    for (int64_t r = k * kLnRowChunk; r < r1; ++r) {
      const T* __restrict dyr = dy + r * C;
      const T* __restrict xr = x + r * C;
      const float mu = mean[r], rs = rstd[r];
      if (dx != nullptr) {
        const LanePair sums = lane_sums(1, C, [dyr, xr, gamma, mu, rs](int64_t, int64_t c) {
          const float g = load_f32(dyr[c]) * gamma[c];
          const float xhat = layernorm_xhat(load_f32(xr[c]), mu, rs);
          return LanePair{static_cast<double>(g),
                          static_cast<double>(g) * static_cast<double>(xhat)};
        });
        const LayerNormBackStats s = layernorm_back_stats(sums.a, sums.b, C);
        // dx is distinct from every input (fp32 dx could alias mean and rstd for all the
        // compiler knew, which kept this loop scalar); the row's scalars are read once.
        T* __restrict dxr = dx + r * C;
        const auto dx_of = [dyr, xr, gamma, mu, rs, s](int64_t c) {
          const float g = load_f32(dyr[c]) * gamma[c];
          return layernorm_dx(g, layernorm_xhat(load_f32(xr[c]), mu, rs), rs, s);
        };
        if (dres == nullptr) {
          for (int64_t c = 0; c < C; ++c) store_f32(dxr[c], dx_of(c));
        } else {
          const T* __restrict rr = dres + r * C;
          for (int64_t c = 0; c < C; ++c)
            store_f32(dxr[c], layernorm_dx_plus<T>(dx_of(c), load_f32(rr[c])));
        }
      }
      if (params)
        for (int64_t c = 0; c < C; ++c) {
          const double d = load_f32(dyr[c]);
          pg[c] += d * static_cast<double>(layernorm_xhat(load_f32(xr[c]), mu, rs));
          pb[c] += d;
        }
    }
  }
  if (!params) return;
  const int64_t blocks = (C + kLnColBlock - 1) / kLnColBlock;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kLnColBlock;
    const int64_t nc = C - c0 < kLnColBlock ? C - c0 : kLnColBlock;
    double sg[kLnColBlock] = {}, sb[kLnColBlock] = {};
    for (int64_t k = 0; k < chunks; ++k) {
      const double* pg = partials + k * 2 * C + c0;
      const double* pb = pg + C;
      for (int64_t c = 0; c < nc; ++c) {
        sg[c] += pg[c];
        sb[c] += pb[c];
      }
    }
    for (int64_t c = 0; c < nc; ++c) {
      if (dgamma != nullptr) dgamma[c0 + c] += static_cast<float>(sg[c]);
      if (dbeta != nullptr) dbeta[c0 + c] += static_cast<float>(sb[c]);
    }
  }
}

}  // namespace

void CpuOps::layernorm_forward(ConstView x, const float* gamma, const float* beta, View y,
                               float* mean, float* rstd, int64_t N, int64_t C, float eps) {
  const char* op = "layernorm_forward";
  expect_elems(op, N * C, {x, y});
  dispatch_float(op, {x, y}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    layernorm_forward_impl(threads_, x.as<S>(), gamma, beta, y.as<S>(), mean, rstd, N, C, eps);
  });
}

size_t CpuOps::layernorm_workspace_bytes(int64_t N, int64_t C) const {
  return static_cast<size_t>(ln_row_chunks(N) * 2 * C) * sizeof(double);
}

void CpuOps::layernorm_backward(ConstView dy, ConstView x, const float* gamma,
                                const float* mean, const float* rstd, View dx, ConstView dres,
                                float* dgamma, float* dbeta, int64_t N, int64_t C,
                                void* workspace) {
  const char* op = "layernorm_backward";
  expect_elems(op, N * C, {dy, x, dx, dres});
  if (!dres.empty() && dx.empty())
    cpu_op_failed(op, make_error("a residual gradient (dres) without dx to add it into"));
  if (workspace == nullptr && (dgamma != nullptr || dbeta != nullptr) && N > 0 && C > 0)
    cpu_op_failed(op, make_error("no workspace for the parameter gradients' partial sums: "
                                 "pass layernorm_workspace_bytes(N, C) bytes"));
  dispatch_float(op, {dy, x, dx, dres}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    layernorm_backward_impl(threads_, dy.as<S>(), x.as<S>(), gamma, mean, rstd, dx.as<S>(),
                            dres.as<S>(), dgamma, dbeta, N, C, static_cast<double*>(workspace));
  });
}

}  // namespace noeira
