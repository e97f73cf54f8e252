// CpuOps' BatchNorm2d (contracts: kernels/op_list.inc; math: kernels/common/norm.h). x is
// (B, C, S); a channel's values sit in B runs of S. Training sums each channel in double
// in the order b, then s, one channel per iteration of the parallel loop, so the bits do
// not depend on the thread count. No workspace.
#include "kernels/common/bf16.h"
#include "kernels/common/norm.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

template <class T>
void bn_train_impl(int threads, const NormShape& s, const T* x, const float* gamma,
                   const float* beta, const BatchNormHyper& h, T* y, float* save_mean,
                   float* save_invstd, float* running_mean, float* running_var) {
  const int64_t C = s.channels, S = s.spatial, n = s.per_channel();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    double sum = 0.0, sumsq = 0.0;
    for (int64_t b = 0; b < s.batch; ++b) {
      const T* xc = x + (b * C + c) * S;
      for (int64_t i = 0; i < S; ++i) {
        const double v = load_f32(xc[i]);
        sum += v;
        sumsq += v * v;
      }
    }
    const ChannelStats st = channel_stats(sum, sumsq, n, h.eps);
    save_mean[c] = st.mean;
    save_invstd[c] = st.invstd;
    update_running(running_mean[c], running_var[c], sum, sumsq, n, h);
    for (int64_t b = 0; b < s.batch; ++b) {
      const T* xc = x + (b * C + c) * S;
      T* yc = y + (b * C + c) * S;
      for (int64_t i = 0; i < S; ++i)
        store_f32(yc[i], batchnorm_apply(load_f32(xc[i]), st.mean, st.invstd, gamma[c], beta[c]));
    }
  }
}

template <class T>
void bn_eval_impl(int threads, const NormShape& s, const T* x, const float* gamma,
                  const float* beta, const float* running_mean, const float* running_var,
                  const BatchNormHyper& h, T* y) {
  const int64_t C = s.channels, S = s.spatial;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bc = 0; bc < s.batch * C; ++bc) {  // one (b, c) run of S values
    const int64_t c = bc % C;
    for (int64_t i = 0; i < S; ++i)
      store_f32(y[bc * S + i], batchnorm_eval(load_f32(x[bc * S + i]), running_mean[c],
                                              running_var[c], h.eps, gamma[c], beta[c]));
  }
}

template <class T>
void bn_backward_impl(int threads, const NormShape& s, const T* dy, const T* x,
                      const float* gamma, const float* save_mean, const float* save_invstd,
                      T* dx, float* dgamma, float* dbeta) {
  const int64_t C = s.channels, S = s.spatial, n = s.per_channel();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    const float mean = save_mean[c], invstd = save_invstd[c];
    double sum_dy = 0.0, sum_dy_xhat = 0.0;  // the forward's order: b, then s
    for (int64_t b = 0; b < s.batch; ++b) {
      const int64_t at = (b * C + c) * S;
      for (int64_t i = 0; i < S; ++i) {
        const float g = load_f32(dy[at + i]);
        const float xhat = (load_f32(x[at + i]) - mean) * invstd;
        sum_dy += g;
        sum_dy_xhat += static_cast<double>(g) * xhat;
      }
    }
    dgamma[c] += static_cast<float>(sum_dy_xhat);
    dbeta[c] += static_cast<float>(sum_dy);
    if (!dx) continue;
    const float mean_dy = static_cast<float>(sum_dy / static_cast<double>(n));
    const float mean_dy_xhat = static_cast<float>(sum_dy_xhat / static_cast<double>(n));
    for (int64_t b = 0; b < s.batch; ++b) {
      const int64_t at = (b * C + c) * S;
      for (int64_t i = 0; i < S; ++i)
        store_f32(dx[at + i], batchnorm_dx(load_f32(dy[at + i]), load_f32(x[at + i]), mean,
                                           invstd, gamma[c], mean_dy, mean_dy_xhat));
    }
  }
}

}  // namespace

// The channel sums run in the loops' own registers: no scratch.
size_t CpuOps::batchnorm_workspace_bytes(const NormShape&) const { return 0; }

void CpuOps::batchnorm_forward_train(const NormShape& s, ConstView x, const float* gamma,
                                     const float* beta, const BatchNormHyper& h, View y,
                                     float* save_mean, float* save_invstd, float* running_mean,
                                     float* running_var, void* workspace) {
  (void)workspace;  // batchnorm_workspace_bytes is 0 here
  const char* op = "batchnorm_forward_train";
  expect_elems(op, s.elems(), {x, y});
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_train_impl(threads_, s, x.as<T>(), gamma, beta, h, y.as<T>(), save_mean, save_invstd,
                  running_mean, running_var);
  });
}

void CpuOps::batchnorm_forward_eval(const NormShape& s, ConstView x, const float* gamma,
                                    const float* beta, const float* running_mean,
                                    const float* running_var, const BatchNormHyper& h, View y) {
  const char* op = "batchnorm_forward_eval";
  expect_elems(op, s.elems(), {x, y});
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_eval_impl(threads_, s, x.as<T>(), gamma, beta, running_mean, running_var, h, y.as<T>());
  });
}

void CpuOps::batchnorm_backward(const NormShape& s, ConstView dy, ConstView x,
                                const float* gamma, const float* save_mean,
                                const float* save_invstd, View dx, float* dgamma, float* dbeta,
                                void* workspace) {
  (void)workspace;
  const char* op = "batchnorm_backward";
  expect_elems(op, s.elems(), {dy, x, dx});
  dispatch_float(op, {dy, x, dx}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_backward_impl(threads_, s, dy.as<T>(), x.as<T>(), gamma, save_mean, save_invstd,
                     dx.as<T>(), dgamma, dbeta);
  });
}

}  // namespace noeira
