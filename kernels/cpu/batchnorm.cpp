// CpuOps' BatchNorm2d (contracts: kernels/op_list.inc; math: kernels/common/norm.h). x is
// (B, C, S); a channel's values sit in B runs of S. Training sums each channel in double
// in lane partials in an order fixed by the shape (bf16 in fp32 spans first:
// batchnorm_sums.h); a thread takes a chunk of whole channels, so the bits do not depend
// on the thread count. The fused ops (batchnorm_forward_train, batchnorm_backward) and the
// split ones of synchronised BatchNorm (batchnorm_stats -> a sum over ranks ->
// batchnorm_forward_from_stats; batchnorm_backward_stats -> batchnorm_backward_from_stats)
// run the same per-channel functions below, so a split pass over one rank gives the fused
// pass's bits. The forwards apply their epilogue (kernels/ops.h BatchNormEpilogue: a
// residual, an activation) as they write y. No workspace. fp32 training outputs (y, dx)
// of kStreamBytes or more are written with streaming stores (streaming_store.h): x, read
// twice, cannot stay in a core's cache between the passes, and neither can y or dx before
// the next op reads them.
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/batchnorm_epilogue_check.h"
#include "kernels/common/bf16.h"
#include "kernels/common/norm.h"
#include "kernels/cpu/batchnorm_bf16.h"
#include "kernels/cpu/batchnorm_sums.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/streaming_store.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

using namespace cpu_batchnorm;

// Each channel's sum and sum of squares of x, in double (bf16: in fp32 spans first).
template <class T>
void channel_sums(const NormShape& s, const T* x, Chunk ch, ChannelSums* out) {
  if constexpr (std::is_same_v<T, float>) {
    chunk_sums(
        s, ch,
        [x](int64_t, int64_t at) {
          const double v = x[at];
          return ChannelSums{v, v * v};
        },
        out);
  } else if (bf16_loops_take(s.spatial)) {  // the same sums in AVX-512 registers
    Bf16Lanes lanes[kChunk];
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t c = ch.c0; c < ch.c1; ++c)
        bf16_run_sums(x + (b * s.channels + c) * s.spatial, s.spatial, lanes[c - ch.c0]);
    for (int64_t c = ch.c0; c < ch.c1; ++c) out[c - ch.c0] = lanes[c - ch.c0].total();
  } else {
    chunk_sums(
        s, ch,
        [x](int64_t, int64_t at) {
          const float v = load_f32(x[at]);
          return FloatSums{v, v * v};  // exact (8-bit significands) in x's normal range
        },
        out);
  }
}

// A forward's epilogue with its residual and activation as compile-time constants, so the
// element loops carry no per-element branch and vectorise.
template <bool kResidual, Act kAct>
struct Epilogue {
  static constexpr bool kHasResidual = kResidual;
  static constexpr Act kActivation = kAct;
  const void* residual;
  template <class T>
  float operator()(float y, const T*, int64_t at) const {
    const float r = kResidual ? load_f32(static_cast<const T*>(residual)[at]) : 0.0f;
    return batchnorm_epilogue<T>(y, kResidual, r, kAct);
  }
};

// Calls f with the Epilogue for epi.
template <class F>
void with_epilogue(const BatchNormEpilogue& epi, const F& f) {
  const auto act = [&](auto has_residual) {
    constexpr bool kRes = decltype(has_residual)::value;
    switch (epi.act) {
      case Act::kReLU: return f(Epilogue<kRes, Act::kReLU>{epi.residual.data});
      case Act::kGELU: return f(Epilogue<kRes, Act::kGELU>{epi.residual.data});
      default: return f(Epilogue<kRes, Act::kNone>{epi.residual.data});
    }
  };
  if (epi.residual.empty()) act(std::false_type{});
  else act(std::true_type{});
}

// Whether an fp32 output of the shape is streamed (streaming_store.h). Not bf16's: staging
// its outputs cost more than the stores' reads of their lines (resnet20 at one thread, its
// normalisation with the sums in fp32 spans: 32.3, 33.0 -> 36.5, 36.7 ms per step).
template <class T>
bool streams_output(const NormShape& s) {
  return std::is_same_v<T, float> && streams(static_cast<size_t>(s.elems()) * sizeof(T));
}

// The training forward of the chunk's channels from their sums over n values each: save
// the statistics, update the running ones, write y (after the epilogue).
template <class T, class Epi>
void chunk_forward(const NormShape& s, const T* x, Chunk ch, const ChannelSums* sums, int64_t n,
                   const float* gamma, const float* beta, const BatchNormHyper& h, T* y,
                   const Epi& epi, float* save_mean, float* save_invstd, float* running_mean,
                   float* running_var) {
  const int64_t C = s.channels, S = s.spatial;
  for (int64_t c = ch.c0; c < ch.c1; ++c) {
    const ChannelSums& sc = sums[c - ch.c0];
    const ChannelStats st = channel_stats(sc.a, sc.b, n, h.eps);
    save_mean[c] = st.mean;
    save_invstd[c] = st.invstd;
    update_running(running_mean[c], running_var[c], sc.a, sc.b, n, h);
  }
  if constexpr (std::is_same_v<T, bf16_t> && Epi::kActivation != Act::kGELU) {
    if (bf16_loops_take(S)) {  // the same values in AVX-512 registers
      const T* residual = Epi::kHasResidual ? static_cast<const T*>(epi.residual) : nullptr;
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t c = ch.c0; c < ch.c1; ++c) {
          const int64_t at = (b * C + c) * S;
          bf16_run_forward(x + at, residual ? residual + at : nullptr,
                           Epi::kActivation == Act::kReLU, S,
                           Bf16Norm{save_mean[c], save_invstd[c], gamma[c], beta[c]}, y + at);
        }
      return;
    }
  }
  const bool stream = streams_output<T>(s);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t c = ch.c0; c < ch.c1; ++c) {
      const int64_t at = (b * C + c) * S;
      const float mean = save_mean[c], invstd = save_invstd[c], g = gamma[c], be = beta[c];
      write_staged(y + at, S, stream, [&](int64_t i0, int64_t n, T* __restrict yc) {
        const T* __restrict xc = x + at + i0;
        for (int64_t i = 0; i < n; ++i)
          store_f32(yc[i],
                    epi(batchnorm_apply(load_f32(xc[i]), mean, invstd, g, be), x, at + i0 + i));
      });
    }
  if (stream) stream_fence();
}

// The gradient the backward works on at element i, given x's value there: dy itself, or
// (kRelu, batchnorm_relu_backward) dy behind the forward's ReLU, ReLU's gradient taken as
// it is read: act_backward's dy * act_grad, with the factor from x (norm.h
// batchnorm_relu_grad). The factor is 0 or 1, so the product is exact and equals what
// act_backward would have stored.
struct ReluParams {
  const float* gamma;
  const float* beta;
};
template <bool kRelu, class T>
inline float grad_at(const T* __restrict dy, int64_t i, float x, float mean, float invstd,
                     float gamma, float beta) {
  const float d = load_f32(dy[i]);
  if constexpr (kRelu) return d * batchnorm_relu_grad<T>(x, mean, invstd, gamma, beta);
  else return d;
}

// A gradient term (dy, dy * xhat): in double for fp32 storage, in fp32 for bf16 (chunk_sums).
template <class T>
inline auto grad_pair(float g, float xhat) {
  if constexpr (std::is_same_v<T, float>) return ChannelSums{g, static_cast<double>(g) * xhat};
  else return FloatSums{g, g * xhat};
}

// Each channel's sums of dy and dy * xhat, in double (bf16: in fp32 spans first), in the
// forward's order. kRelu: the masked gradient of each block staged first (chunk_sums).
template <bool kRelu, class T>
void channel_grad_sums(const NormShape& s, const T* dy, const T* x, Chunk ch,
                       const float* mean, const float* invstd, ReluParams relu,
                       ChannelSums* out) {
  if constexpr (std::is_same_v<T, bf16_t>) {
    if (bf16_loops_take(s.spatial)) {  // the same sums in AVX-512 registers
      Bf16Lanes lanes[kChunk];
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t c = ch.c0; c < ch.c1; ++c) {
          const int64_t at = (b * s.channels + c) * s.spatial;
          const Bf16Norm n{mean[c], invstd[c], kRelu ? relu.gamma[c] : 0.0f,
                           kRelu ? relu.beta[c] : 0.0f};
          bf16_run_grad_sums(dy + at, x + at, kRelu, s.spatial, n, lanes[c - ch.c0]);
        }
      for (int64_t c = ch.c0; c < ch.c1; ++c) out[c - ch.c0] = lanes[c - ch.c0].total();
      return;
    }
  }
  if constexpr (!kRelu) {
    chunk_sums(
        s, ch,
        [dy, x, mean, invstd](int64_t c, int64_t at) {
          return grad_pair<T>(load_f32(dy[at]),
                              batchnorm_xhat(load_f32(x[at]), mean[c], invstd[c]));
        },
        out);
  } else {
    float staged[kStage];
    int64_t first = 0;  // the staged block's first element
    chunk_sums(
        s, ch,
        [&staged, &first, x, mean, invstd](int64_t c, int64_t at) {
          return grad_pair<T>(staged[at - first],
                              batchnorm_xhat(load_f32(x[at]), mean[c], invstd[c]));
        },
        out,
        [&staged, &first, dy, x, mean, invstd, relu](int64_t c, int64_t at, int64_t n) {
          first = at;
          const T* __restrict d = dy + at;
          const T* __restrict xc = x + at;
          float* __restrict g = staged;
          const float mu = mean[c], is = invstd[c], ga = relu.gamma[c], be = relu.beta[c];
          for (int64_t k = 0; k < n; ++k)
            g[k] = grad_at<true>(d, k, load_f32(xc[k]), mu, is, ga, be);
        });
  }
}

// The chunk's dx from each channel's gradient sums over n values.
template <bool kRelu, class T>
void chunk_dx(const NormShape& s, const T* dy, const T* x, Chunk ch, const float* mean,
              const float* invstd, const float* gamma, ReluParams relu,
              const ChannelSums* grad, int64_t n, T* dx) {
  const int64_t C = s.channels, S = s.spatial;
  GradMeans m[kChunk];
  for (int64_t c = ch.c0; c < ch.c1; ++c)
    m[c - ch.c0] = grad_means(grad[c - ch.c0].a, grad[c - ch.c0].b, n);
  if constexpr (std::is_same_v<T, bf16_t>) {
    if (bf16_loops_take(S)) {  // the same values in AVX-512 registers
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t c = ch.c0; c < ch.c1; ++c) {
          const int64_t at = (b * C + c) * S;
          const Bf16Norm k{mean[c], invstd[c], kRelu ? relu.gamma[c] : 0.0f,
                           kRelu ? relu.beta[c] : 0.0f};
          bf16_run_dx(dy + at, x + at, kRelu, S, k, gamma[c] * invstd[c], m[c - ch.c0],
                      dx + at);
        }
      return;
    }
  }
  const bool stream = streams_output<T>(s);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t c = ch.c0; c < ch.c1; ++c) {
      const int64_t at = (b * C + c) * S;
      const float mu = mean[c], is = invstd[c], g = gamma[c];
      const float rg = kRelu ? relu.gamma[c] : 0.0f, rb = kRelu ? relu.beta[c] : 0.0f;
      const float mdy = m[c - ch.c0].dy, mdx = m[c - ch.c0].dy_xhat;
      write_staged(dx + at, S, stream, [&](int64_t i0, int64_t n, T* __restrict out) {
        const T* __restrict d = dy + at + i0;
        const T* __restrict xc = x + at + i0;
        for (int64_t i = 0; i < n; ++i) {
          const float xv = load_f32(xc[i]);
          store_f32(out[i], batchnorm_dx(grad_at<kRelu>(d, i, xv, mu, is, rg, rb), xv, mu, is,
                                         g, mdy, mdx));
        }
      });
    }
  if (stream) stream_fence();
}

// The split ops' count covers at least this rank's values (a programming error otherwise).
void check_count(const char* op, const NormShape& s, int64_t count) {
  if (s.elems() != 0 && count < s.per_channel())
    cpu_op_failed(op, Error{"count " + std::to_string(count) + " is below this rank's " +
                            std::to_string(s.per_channel()) + " values per channel"});
}

// The epilogue's residual is x's shape and dtype (a programming error otherwise).
void check_epilogue(const char* op, const NormShape& s, ConstView x, const BatchNormEpilogue& epi) {
  if (std::string p = batchnorm_epilogue_problem(s, x, epi); !p.empty())
    cpu_op_failed(op, Error{std::move(p)});
}

// stats (C, 2) <-> ChannelSums.
ChannelSums sums_at(const double* stats, int64_t c) { return {stats[2 * c], stats[2 * c + 1]}; }
void put_sums(double* stats, int64_t c, ChannelSums v) {
  stats[2 * c] = v.a;
  stats[2 * c + 1] = v.b;
}

template <class T>
void bn_train_impl(int threads, const NormShape& s, const T* x, const float* gamma,
                   const float* beta, const BatchNormHyper& h, T* y,
                   const BatchNormEpilogue& epilogue, float* save_mean, float* save_invstd,
                   float* running_mean, float* running_var) {
  with_epilogue(epilogue, [&](const auto& epi) {
    for_chunks(threads, s.channels, [&](Chunk ch) {
      ChannelSums sums[kChunk];
      channel_sums(s, x, ch, sums);
      chunk_forward(s, x, ch, sums, s.per_channel(), gamma, beta, h, y, epi, save_mean,
                    save_invstd, running_mean, running_var);
    });
  });
}

template <class T>
void bn_stats_impl(int threads, const NormShape& s, const T* x, double* stats) {
  for_chunks(threads, s.channels, [&](Chunk ch) {
    ChannelSums sums[kChunk];
    channel_sums(s, x, ch, sums);
    for (int64_t c = ch.c0; c < ch.c1; ++c) put_sums(stats, c, sums[c - ch.c0]);
  });
}

template <class T>
void bn_from_stats_impl(int threads, const NormShape& s, const T* x, const double* stats,
                        int64_t count, const float* gamma, const float* beta,
                        const BatchNormHyper& h, T* y, const BatchNormEpilogue& epilogue,
                        float* save_mean, float* save_invstd, float* running_mean,
                        float* running_var) {
  with_epilogue(epilogue, [&](const auto& epi) {
    for_chunks(threads, s.channels, [&](Chunk ch) {
      ChannelSums sums[kChunk];
      for (int64_t c = ch.c0; c < ch.c1; ++c) sums[c - ch.c0] = sums_at(stats, c);
      chunk_forward(s, x, ch, sums, count, gamma, beta, h, y, epi, save_mean, save_invstd,
                    running_mean, running_var);
    });
  });
}

template <class T>
void bn_eval_impl(int threads, const NormShape& s, const T* x, const float* gamma,
                  const float* beta, const float* running_mean, const float* running_var,
                  const BatchNormHyper& h, T* y, const BatchNormEpilogue& epilogue) {
  const int64_t C = s.channels, S = s.spatial;
  with_epilogue(epilogue, [&](const auto& epi) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t bc = 0; bc < s.batch * C; ++bc) {  // one (b, c) run of S values
      const int64_t c = bc % C;
      for (int64_t i = 0; i < S; ++i)
        store_f32(y[bc * S + i],
                  epi(batchnorm_eval(load_f32(x[bc * S + i]), running_mean[c], running_var[c],
                                     h.eps, gamma[c], beta[c]),
                      x, bc * S + i));
    }
  });
}

template <bool kRelu, class T>
void bn_backward_impl(int threads, const NormShape& s, const T* dy, const T* x,
                      const float* gamma, const float* save_mean, const float* save_invstd,
                      ReluParams relu, T* dx, float* dgamma, float* dbeta) {
  for_chunks(threads, s.channels, [&](Chunk ch) {
    ChannelSums g[kChunk];
    channel_grad_sums<kRelu>(s, dy, x, ch, save_mean, save_invstd, relu, g);
    for (int64_t c = ch.c0; c < ch.c1; ++c) {
      dgamma[c] += static_cast<float>(g[c - ch.c0].b);
      dbeta[c] += static_cast<float>(g[c - ch.c0].a);
    }
    if (dx)
      chunk_dx<kRelu>(s, dy, x, ch, save_mean, save_invstd, gamma, relu, g, s.per_channel(),
                      dx);
  });
}

template <class T>
void bn_backward_stats_impl(int threads, const NormShape& s, const T* dy, const T* x,
                            const float* save_mean, const float* save_invstd, double* stats) {
  for_chunks(threads, s.channels, [&](Chunk ch) {
    ChannelSums g[kChunk];
    channel_grad_sums<false>(s, dy, x, ch, save_mean, save_invstd, ReluParams{}, g);
    for (int64_t c = ch.c0; c < ch.c1; ++c) put_sums(stats, c, g[c - ch.c0]);
  });
}

template <class T>
void bn_backward_from_stats_impl(int threads, const NormShape& s, const T* dy, const T* x,
                                 const float* gamma, const float* save_mean,
                                 const float* save_invstd, const double* local,
                                 const double* total, int64_t count, T* dx, float* dgamma,
                                 float* dbeta) {
  for_chunks(threads, s.channels, [&](Chunk ch) {
    ChannelSums g[kChunk];
    for (int64_t c = ch.c0; c < ch.c1; ++c) {
      const ChannelSums own = sums_at(local, c);
      dgamma[c] += static_cast<float>(own.b);
      dbeta[c] += static_cast<float>(own.a);
      g[c - ch.c0] = sums_at(total, c);
    }
    if (dx)
      chunk_dx<false>(s, dy, x, ch, save_mean, save_invstd, gamma, ReluParams{}, g, count, dx);
  });
}

}  // namespace

// The channel sums run in the loops' own registers: no scratch.
size_t CpuOps::batchnorm_workspace_bytes(const NormShape&) const { return 0; }

void CpuOps::batchnorm_forward_train(const NormShape& s, ConstView x, const float* gamma,
                                     const float* beta, const BatchNormHyper& h, View y,
                                     const BatchNormEpilogue& epi, float* save_mean,
                                     float* save_invstd, float* running_mean,
                                     float* running_var, void* workspace) {
  (void)workspace;  // batchnorm_workspace_bytes is 0 here
  const char* op = "batchnorm_forward_train";
  expect_elems(op, s.elems(), {x, y});
  check_epilogue(op, s, x, epi);
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_train_impl(threads_, s, x.as<T>(), gamma, beta, h, y.as<T>(), epi, save_mean,
                  save_invstd, running_mean, running_var);
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
                                          const BatchNormHyper& h, View y,
                                          const BatchNormEpilogue& epi, float* save_mean,
                                          float* save_invstd, float* running_mean,
                                          float* running_var, void* workspace) {
  (void)workspace;
  const char* op = "batchnorm_forward_from_stats";
  expect_elems(op, s.elems(), {x, y});
  check_count(op, s, count);
  check_epilogue(op, s, x, epi);
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_from_stats_impl(threads_, s, x.as<T>(), stats, count, gamma, beta, h, y.as<T>(), epi,
                       save_mean, save_invstd, running_mean, running_var);
  });
}

void CpuOps::batchnorm_forward_eval(const NormShape& s, ConstView x, const float* gamma,
                                    const float* beta, const float* running_mean,
                                    const float* running_var, const BatchNormHyper& h, View y,
                                    const BatchNormEpilogue& epi) {
  const char* op = "batchnorm_forward_eval";
  expect_elems(op, s.elems(), {x, y});
  check_epilogue(op, s, x, epi);
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_eval_impl(threads_, s, x.as<T>(), gamma, beta, running_mean, running_var, h, y.as<T>(),
                 epi);
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
    bn_backward_impl<false>(threads_, s, dy.as<T>(), x.as<T>(), gamma, save_mean, save_invstd,
                            ReluParams{}, dx.as<T>(), dgamma, dbeta);
  });
}

// relu_post is not read: its sign comes from x (the contract allows it; see grad_at).
void CpuOps::batchnorm_relu_backward(const NormShape& s, ConstView dy, ConstView relu_post,
                                     ConstView x, const float* gamma, const float* beta,
                                     const float* save_mean, const float* save_invstd, View dx,
                                     float* dgamma, float* dbeta, void* workspace) {
  (void)workspace;
  const char* op = "batchnorm_relu_backward";
  expect_elems(op, s.elems(), {dy, relu_post, x, dx});
  // Required by the contract (CUDA reads it), though not read here.
  if (s.elems() != 0 && relu_post.empty())
    cpu_op_failed(op, Error{"needs relu_post, the forward's ReLU output"});
  dispatch_float(op, {dy, relu_post, x, dx}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_backward_impl<true>(threads_, s, dy.as<T>(), x.as<T>(), gamma, save_mean, save_invstd,
                           ReluParams{gamma, beta}, dx.as<T>(), dgamma, dbeta);
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
