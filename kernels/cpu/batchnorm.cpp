// CpuOps' BatchNorm2d (contracts: kernels/op_list.inc; math: kernels/common/norm.h). x is
// (B, C, S); a channel's values sit in B runs of S. Training sums each channel in double
// in kLanes partials (value s of each run into lane s % kLanes, runs in b order, the lanes
// added in lane order at the end), one channel per iteration of the parallel loop, so the
// bits do not depend on the thread count. The fused ops (batchnorm_forward_train,
// batchnorm_backward) and the split ones of synchronised BatchNorm (batchnorm_stats ->
// a sum over ranks -> batchnorm_forward_from_stats; batchnorm_backward_stats ->
// batchnorm_backward_from_stats) run the same per-channel functions below, so a split
// pass over one rank gives the fused pass's bits. No workspace.
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/common/norm.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Two sums over channel c's values, term(at) giving element at's pair, in kLanes double
// partials. One serial chain of double adds per sum was the cost of BatchNorm on the CPU
// (a quarter of a resnet20 step, at 7 GB/s); independent lanes vectorise. The order is a
// function of the shape alone.
constexpr int kLanes = 8;

template <class Term>
ChannelSums lane_sums(const NormShape& s, int64_t c, const Term& term) {
  const int64_t C = s.channels, S = s.spatial;
  double u[kLanes] = {}, v[kLanes] = {};
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t at = (b * C + c) * S;
    int64_t i = 0;
    for (; i + kLanes <= S; i += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const ChannelSums t = term(at + i + l);
        u[l] += t.a;
        v[l] += t.b;
      }
    for (; i < S; ++i) {
      const ChannelSums t = term(at + i);
      u[i % kLanes] += t.a;
      v[i % kLanes] += t.b;
    }
  }
  ChannelSums r{0.0, 0.0};
  for (int l = 0; l < kLanes; ++l) {
    r.a += u[l];
    r.b += v[l];
  }
  return r;
}

// Channel c's sum and sum of squares of x, in double.
template <class T>
ChannelSums channel_sums(const NormShape& s, const T* x, int64_t c) {
  return lane_sums(s, c, [x](int64_t at) {
    const double v = load_f32(x[at]);
    return ChannelSums{v, v * v};
  });
}

// Channel c of the training forward from its sums over n values: save the statistics,
// update the running ones, write y.
template <class T>
void channel_forward(const NormShape& s, const T* x, int64_t c, ChannelSums sums, int64_t n,
                     const float* gamma, const float* beta, const BatchNormHyper& h, T* y,
                     float* save_mean, float* save_invstd, float* running_mean,
                     float* running_var) {
  const int64_t C = s.channels, S = s.spatial;
  const ChannelStats st = channel_stats(sums.a, sums.b, n, h.eps);
  save_mean[c] = st.mean;
  save_invstd[c] = st.invstd;
  update_running(running_mean[c], running_var[c], sums.a, sums.b, n, h);
  for (int64_t b = 0; b < s.batch; ++b) {
    const T* xc = x + (b * C + c) * S;
    T* yc = y + (b * C + c) * S;
    for (int64_t i = 0; i < S; ++i)
      store_f32(yc[i], batchnorm_apply(load_f32(xc[i]), st.mean, st.invstd, gamma[c], beta[c]));
  }
}

// Channel c's sums of dy and dy * xhat, in double, in the forward's order.
template <class T>
ChannelSums channel_grad_sums(const NormShape& s, const T* dy, const T* x, int64_t c,
                              float mean, float invstd) {
  return lane_sums(s, c, [dy, x, mean, invstd](int64_t at) {
    const float g = load_f32(dy[at]);
    return ChannelSums{g, static_cast<double>(g) * batchnorm_xhat(load_f32(x[at]), mean, invstd)};
  });
}

// Channel c's dx from the gradient sums over n values.
template <class T>
void channel_dx(const NormShape& s, const T* dy, const T* x, int64_t c, float mean,
                float invstd, float gamma, ChannelSums grad, int64_t n, T* dx) {
  const int64_t C = s.channels, S = s.spatial;
  const GradMeans m = grad_means(grad.a, grad.b, n);
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t at = (b * C + c) * S;
    for (int64_t i = 0; i < S; ++i)
      store_f32(dx[at + i], batchnorm_dx(load_f32(dy[at + i]), load_f32(x[at + i]), mean, invstd,
                                         gamma, m.dy, m.dy_xhat));
  }
}

// The split ops' count covers at least this rank's values (a programming error otherwise).
void check_count(const char* op, const NormShape& s, int64_t count) {
  if (s.elems() != 0 && count < s.per_channel())
    cpu_op_failed(op, Error{"count " + std::to_string(count) + " is below this rank's " +
                            std::to_string(s.per_channel()) + " values per channel"});
}

// stats (C, 2) <-> ChannelSums.
ChannelSums sums_at(const double* stats, int64_t c) { return {stats[2 * c], stats[2 * c + 1]}; }
void put_sums(double* stats, int64_t c, ChannelSums v) {
  stats[2 * c] = v.a;
  stats[2 * c + 1] = v.b;
}

template <class T>
void bn_train_impl(int threads, const NormShape& s, const T* x, const float* gamma,
                   const float* beta, const BatchNormHyper& h, T* y, float* save_mean,
                   float* save_invstd, float* running_mean, float* running_var) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c)
    channel_forward(s, x, c, channel_sums(s, x, c), s.per_channel(), gamma, beta, h, y,
                    save_mean, save_invstd, running_mean, running_var);
}

template <class T>
void bn_stats_impl(int threads, const NormShape& s, const T* x, double* stats) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c) put_sums(stats, c, channel_sums(s, x, c));
}

template <class T>
void bn_from_stats_impl(int threads, const NormShape& s, const T* x, const double* stats,
                        int64_t count, const float* gamma, const float* beta,
                        const BatchNormHyper& h, T* y, float* save_mean, float* save_invstd,
                        float* running_mean, float* running_var) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c)
    channel_forward(s, x, c, sums_at(stats, c), count, gamma, beta, h, y, save_mean,
                    save_invstd, running_mean, running_var);
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
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c) {
    const ChannelSums g = channel_grad_sums(s, dy, x, c, save_mean[c], save_invstd[c]);
    dgamma[c] += static_cast<float>(g.b);
    dbeta[c] += static_cast<float>(g.a);
    if (dx)
      channel_dx(s, dy, x, c, save_mean[c], save_invstd[c], gamma[c], g, s.per_channel(), dx);
  }
}

template <class T>
void bn_backward_stats_impl(int threads, const NormShape& s, const T* dy, const T* x,
                            const float* save_mean, const float* save_invstd, double* stats) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c)
    put_sums(stats, c, channel_grad_sums(s, dy, x, c, save_mean[c], save_invstd[c]));
}

template <class T>
void bn_backward_from_stats_impl(int threads, const NormShape& s, const T* dy, const T* x,
                                 const float* gamma, const float* save_mean,
                                 const float* save_invstd, const double* local,
                                 const double* total, int64_t count, T* dx, float* dgamma,
                                 float* dbeta) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c) {
    const ChannelSums own = sums_at(local, c);
    dgamma[c] += static_cast<float>(own.b);
    dbeta[c] += static_cast<float>(own.a);
    if (dx)
      channel_dx(s, dy, x, c, save_mean[c], save_invstd[c], gamma[c], sums_at(total, c), count,
                 dx);
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

void CpuOps::batchnorm_stats(const NormShape& s, ConstView x, double* stats, void* workspace) {
  (void)workspace;
  const char* op = "batchnorm_stats";
  expect_elems(op, s.elems(), {x});
  dispatch_float(op, {x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_stats_impl(threads_, s, x.as<T>(), stats);
  });
}

void CpuOps::batchnorm_forward_from_stats(const NormShape& s, ConstView x, const double* stats,
                                          int64_t count, const float* gamma, const float* beta,
                                          const BatchNormHyper& h, View y, float* save_mean,
                                          float* save_invstd, float* running_mean,
                                          float* running_var, void* workspace) {
  (void)workspace;
  const char* op = "batchnorm_forward_from_stats";
  expect_elems(op, s.elems(), {x, y});
  check_count(op, s, count);
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_from_stats_impl(threads_, s, x.as<T>(), stats, count, gamma, beta, h, y.as<T>(),
                       save_mean, save_invstd, running_mean, running_var);
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

void CpuOps::batchnorm_backward_stats(const NormShape& s, ConstView dy, ConstView x,
                                      const float* save_mean, const float* save_invstd,
                                      double* stats, void* workspace) {
  (void)workspace;
  const char* op = "batchnorm_backward_stats";
  expect_elems(op, s.elems(), {dy, x});
  dispatch_float(op, {dy, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_backward_stats_impl(threads_, s, dy.as<T>(), x.as<T>(), save_mean, save_invstd, stats);
  });
}

void CpuOps::batchnorm_backward_from_stats(const NormShape& s, ConstView dy, ConstView x,
                                           const float* gamma, const float* save_mean,
                                           const float* save_invstd, const double* local,
                                           const double* total, int64_t count, View dx,
                                           float* dgamma, float* dbeta, void* workspace) {
  (void)workspace;
  const char* op = "batchnorm_backward_from_stats";
  expect_elems(op, s.elems(), {dy, x, dx});
  check_count(op, s, count);
  dispatch_float(op, {dy, x, dx}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_backward_from_stats_impl(threads_, s, dy.as<T>(), x.as<T>(), gamma, save_mean,
                                save_invstd, local, total, count, dx.as<T>(), dgamma, dbeta);
  });
}

}  // namespace noeira
