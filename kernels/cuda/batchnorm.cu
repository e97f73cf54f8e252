// CudaOps' BatchNorm2d (contracts: kernels/op_list.inc; math: kernels/common/norm.h) over
// x (B, C, S), fp32 or bf16 storage, fp32 math, channel sums in double. Each pass is three
// kernels: the per-channel partial sums (channel_sum.cuh), one thread per channel adding
// its partials in chunk order and doing the channel's math, and one thread per element
// applying it (batchnorm_apply.cuh). The workspace (batchnorm_workspace_bytes) carries the
// channel partials (channel_partials_bytes), then two floats per channel (the forward's
// mean and invstd; the backward's mean of dy and of dy * xhat); no atomics, so the order
// is fixed by the shape and every run repeats bit for bit.
//
// Synchronised BatchNorm splits each pass where the channel totals are known: the *_stats
// ops stop after the partials, adding them in chunk order into (C, 2) doubles; the
// *_from_stats ops start from such totals (summed over ranks in between) with the same
// per-channel math (forward_channel, backward_channel) and apply kernels, so a split pass
// over one rank gives the fused pass's bits.
#include <string>

#include "kernels/batchnorm_epilogue_check.h"
#include "kernels/common/norm.h"
#include "kernels/cuda/batchnorm_apply.cuh"
#include "kernels/cuda/channel_sum.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

std::string norm_problem(const NormShape& s) {
  if (s.batch < 0 || s.channels < 0 || s.spatial < 0)
    return "invalid batchnorm shape " + std::to_string(s.batch) + "x" +
           std::to_string(s.channels) + "x" + std::to_string(s.spatial);
  return {};
}

// BatchNorm's workspace holds doubles: an Error text unless it is there and 16-byte aligned.
std::string workspace_problem(const NormShape& s, const void* workspace) {
  if (s.elems() == 0) return {};
  if (!workspace)
    return "no workspace; plan batchnorm_workspace_bytes(shape) bytes and pass them";
  if (reinterpret_cast<uintptr_t>(workspace) % 16 != 0)
    return "the workspace must be 16-byte aligned (the memory plan aligns to 256)";
  return {};
}

// The split ops' count: the values a channel's summed statistics cover, at least this
// rank's own.
std::string count_problem(const NormShape& s, int64_t count) {
  if (s.elems() != 0 && count < s.per_channel())
    return "count " + std::to_string(count) + " is below this rank's " +
           std::to_string(s.per_channel()) + " values per channel";
  return {};
}

}  // namespace

namespace cuda {

namespace {

// (x, x^2) of element i.
template <class T>
struct SumSquares {
  const T* x;
  __device__ double2 operator()(int64_t i, int64_t) const {
    const double v = load_f32(x[i]);
    return make_double2(v, v * v);
  }
};

// (dy, dy * xhat) of element i, xhat = (x - mean) * invstd in fp32 (as batchnorm_dx). With
// relu_post (batchnorm_relu_backward), dy behind the forward's ReLU: bn_relu_grad's product.
template <class T>
struct GradSums {
  const T* dy;
  const T* x;
  const float* mean;
  const float* invstd;
  const T* relu_post = nullptr;
  __device__ double2 operator()(int64_t i, int64_t c) const {
    const float g = bn_relu_grad(dy, relu_post, i);
    const float xhat = batchnorm_xhat(load_f32(x[i]), mean[c], invstd[c]);
    return make_double2(g, static_cast<double>(g) * static_cast<double>(xhat));
  }
};

// Channel c of the forward from its sums over n values: mean and invstd into stats (and
// save_*), running statistics updated.
__device__ void forward_channel(double2 s, int64_t c, int64_t n, const BatchNormHyper& h,
                                float2* stats, float* save_mean, float* save_invstd,
                                float* running_mean, float* running_var) {
  const ChannelStats st = channel_stats(s.x, s.y, n, h.eps);
  stats[c] = make_float2(st.mean, st.invstd);
  if (save_mean) save_mean[c] = st.mean;
  if (save_invstd) save_invstd[c] = st.invstd;
  if (running_mean && running_var) update_running(running_mean[c], running_var[c], s.x, s.y, n, h);
}

// Channel c of the backward: the means of dy and dy * xhat over n values (from total) into
// stats; dgamma += sum(dy * xhat) and dbeta += sum(dy) from own (this rank's sums).
__device__ void backward_channel(double2 own, double2 total, int64_t c, int64_t n,
                                 float2* stats, float* dgamma, float* dbeta) {
  const GradMeans m = grad_means(total.x, total.y, n);
  stats[c] = make_float2(m.dy, m.dy_xhat);
  if (dgamma) dgamma[c] += static_cast<float>(own.y);
  if (dbeta) dbeta[c] += static_cast<float>(own.x);
}

// (C, 2) doubles <-> double2 (the split ops' sums need only 8-byte alignment).
__device__ double2 sums_at(const double* v, int64_t c) {
  return make_double2(v[2 * c], v[2 * c + 1]);
}

__global__ void bn_forward_finish_kernel(const double2* partials, int64_t chunks, int64_t C,
                                         int64_t n, BatchNormHyper h, float2* stats,
                                         float* save_mean, float* save_invstd,
                                         float* running_mean, float* running_var) {
  for (int64_t c = global_thread(); c < C; c += grid_stride())
    forward_channel(channel_total(partials, c, chunks), c, n, h, stats, save_mean, save_invstd,
                    running_mean, running_var);
}

__global__ void bn_forward_from_sums_kernel(const double* sums, int64_t C, int64_t n,
                                            BatchNormHyper h, float2* stats, float* save_mean,
                                            float* save_invstd, float* running_mean,
                                            float* running_var) {
  for (int64_t c = global_thread(); c < C; c += grid_stride())
    forward_channel(sums_at(sums, c), c, n, h, stats, save_mean, save_invstd, running_mean,
                    running_var);
}

__global__ void bn_backward_finish_kernel(const double2* partials, int64_t chunks, int64_t C,
                                          int64_t n, float2* stats, float* dgamma,
                                          float* dbeta) {
  for (int64_t c = global_thread(); c < C; c += grid_stride()) {
    const double2 s = channel_total(partials, c, chunks);
    backward_channel(s, s, c, n, stats, dgamma, dbeta);
  }
}

__global__ void bn_backward_from_sums_kernel(const double* own, const double* total, int64_t C,
                                             int64_t n, float2* stats, float* dgamma,
                                             float* dbeta) {
  for (int64_t c = global_thread(); c < C; c += grid_stride())
    backward_channel(sums_at(own, c), sums_at(total, c), c, n, stats, dgamma, dbeta);
}

// The split ops' end: each channel's partials added in chunk order into sums (C, 2).
__global__ void bn_channel_sums_kernel(const double2* partials, int64_t chunks, int64_t C,
                                       double* sums) {
  for (int64_t c = global_thread(); c < C; c += grid_stride()) {
    const double2 s = channel_total(partials, c, chunks);
    sums[2 * c] = s.x;
    sums[2 * c + 1] = s.y;
  }
}

// The epilogue's residual as T (null when there is none).
template <class T>
const T* residual_of(const BatchNormEpilogue& epi) {
  return epi.residual.empty() ? nullptr : epi.residual.as<T>();
}

// The workspace's two parts.
struct BnWorkspace {
  double2* partials;
  float2* stats;  // (C)
};

BnWorkspace bn_workspace(const NormShape& s, void* workspace) {
  char* base = static_cast<char*>(workspace);
  return {reinterpret_cast<double2*>(base),
          reinterpret_cast<float2*>(base + channel_partials_bytes(s.channels, s.per_channel()))};
}

size_t batchnorm_workspace_bytes(const NormShape& s) {
  if (s.channels <= 0) return 0;
  const size_t stats = static_cast<size_t>(s.channels) * sizeof(float2);
  return channel_partials_bytes(s.channels, s.per_channel()) + (stats + 255u) / 256u * 256u;
}

cudaError_t launch_batchnorm_forward_train(cudaStream_t stream, const NormShape& s, ConstView x,
                                           const float* gamma, const float* beta,
                                           const BatchNormHyper& h, View y,
                                           const BatchNormEpilogue& epi, float* save_mean,
                                           float* save_invstd, float* running_mean,
                                           float* running_var, void* workspace) {
  const char* op = "batchnorm_forward_train";
  const int64_t n = s.elems();
  expect_elems(op, n, {x, y});
  if (n == 0) return cudaSuccess;
  const BnWorkspace ws = bn_workspace(s, workspace);
  const int64_t chunks = channel_sum_plan(s.per_channel()).chunks;
  return dispatch_float(op, {x, y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    launch_channel_partials(stream, SumSquares<T>{x.as<T>()}, s.batch, s.channels, s.spatial,
                            ws.partials);
    bn_forward_finish_kernel<<<grid_for(s.channels), kBlock, 0, stream>>>(
        ws.partials, chunks, s.channels, s.per_channel(), h, ws.stats, save_mean, save_invstd,
        running_mean, running_var);
    bn_apply_train(stream, s, x.as<T>(), ws.stats, gamma, beta, residual_of<T>(epi), epi.act,
                   y.as<T>());
    return cudaGetLastError();
  });
}

cudaError_t launch_batchnorm_stats(cudaStream_t stream, const NormShape& s, ConstView x,
                                   double* sums, void* workspace) {
  const char* op = "batchnorm_stats";
  expect_elems(op, s.elems(), {x});
  // No rows here: zero sums (the contract overwrites; the other ranks' rows still count).
  if (s.elems() == 0)
    return s.channels > 0 ? cudaMemsetAsync(sums, 0, 2 * sizeof(double) * static_cast<size_t>(s.channels), stream)
                          : cudaSuccess;
  const BnWorkspace ws = bn_workspace(s, workspace);
  const int64_t chunks = channel_sum_plan(s.per_channel()).chunks;
  return dispatch_float(op, {x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    launch_channel_partials(stream, SumSquares<T>{x.as<T>()}, s.batch, s.channels, s.spatial,
                            ws.partials);
    bn_channel_sums_kernel<<<grid_for(s.channels), kBlock, 0, stream>>>(ws.partials, chunks,
                                                                        s.channels, sums);
    return cudaGetLastError();
  });
}

cudaError_t launch_batchnorm_forward_from_stats(cudaStream_t stream, const NormShape& s,
                                                ConstView x, const double* sums, int64_t count,
                                                const float* gamma, const float* beta,
                                                const BatchNormHyper& h, View y,
                                                const BatchNormEpilogue& epi, float* save_mean,
                                                float* save_invstd, float* running_mean,
                                                float* running_var, void* workspace) {
  const char* op = "batchnorm_forward_from_stats";
  const int64_t n = s.elems();
  expect_elems(op, n, {x, y});
  if (s.channels <= 0) return cudaSuccess;
  const BnWorkspace ws = bn_workspace(s, workspace);
  // The statistics come from every rank's rows: saved and the running ones updated even
  // where this rank has none (as on the CPU).
  bn_forward_from_sums_kernel<<<grid_for(s.channels), kBlock, 0, stream>>>(
      sums, s.channels, count, h, ws.stats, save_mean, save_invstd, running_mean, running_var);
  if (n == 0) return cudaGetLastError();
  return dispatch_float(op, {x, y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_apply_train(stream, s, x.as<T>(), ws.stats, gamma, beta, residual_of<T>(epi), epi.act,
                   y.as<T>());
    return cudaGetLastError();
  });
}

cudaError_t launch_batchnorm_forward_eval(cudaStream_t stream, const NormShape& s, ConstView x,
                                          const float* gamma, const float* beta,
                                          const float* running_mean, const float* running_var,
                                          const BatchNormHyper& h, View y,
                                          const BatchNormEpilogue& epi) {
  const char* op = "batchnorm_forward_eval";
  const int64_t n = s.elems();
  expect_elems(op, n, {x, y});
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {x, y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_apply_eval(stream, s, x.as<T>(), gamma, beta, running_mean, running_var, h.eps,
                  residual_of<T>(epi), epi.act, y.as<T>());
    return cudaGetLastError();
  });
}

// batchnorm_backward, and batchnorm_relu_backward where relu_post is not empty (ReLU's
// gradient taken as dy is read, in both passes).
cudaError_t launch_batchnorm_backward(cudaStream_t stream, const char* op, const NormShape& s,
                                      ConstView dy, ConstView relu_post, ConstView x,
                                      const float* gamma, const float* save_mean,
                                      const float* save_invstd, View dx, float* dgamma,
                                      float* dbeta, void* workspace) {
  const int64_t n = s.elems();
  expect_elems(op, n, {dy, relu_post, x, dx});
  if (n == 0) return cudaSuccess;
  const BnWorkspace ws = bn_workspace(s, workspace);
  const int64_t chunks = channel_sum_plan(s.per_channel()).chunks;
  return dispatch_float(op, {dy, relu_post, x, dx}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    const T* post = relu_post.empty() ? nullptr : relu_post.as<T>();
    launch_channel_partials(stream,
                            GradSums<T>{dy.as<T>(), x.as<T>(), save_mean, save_invstd, post},
                            s.batch, s.channels, s.spatial, ws.partials);
    bn_backward_finish_kernel<<<grid_for(s.channels), kBlock, 0, stream>>>(
        ws.partials, chunks, s.channels, s.per_channel(), ws.stats, dgamma, dbeta);
    if (!dx.empty())
      bn_apply_backward(stream, s, dy.as<T>(), post, x.as<T>(), gamma, save_mean, save_invstd,
                        ws.stats, dx.as<T>());
    return cudaGetLastError();
  });
}

cudaError_t launch_batchnorm_backward_stats(cudaStream_t stream, const NormShape& s,
                                            ConstView dy, ConstView x, const float* save_mean,
                                            const float* save_invstd, double* sums,
                                            void* workspace) {
  const char* op = "batchnorm_backward_stats";
  expect_elems(op, s.elems(), {dy, x});
  if (s.elems() == 0)
    return s.channels > 0 ? cudaMemsetAsync(sums, 0, 2 * sizeof(double) * static_cast<size_t>(s.channels), stream)
                          : cudaSuccess;
  const BnWorkspace ws = bn_workspace(s, workspace);
  const int64_t chunks = channel_sum_plan(s.per_channel()).chunks;
  return dispatch_float(op, {dy, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    launch_channel_partials(stream, GradSums<T>{dy.as<T>(), x.as<T>(), save_mean, save_invstd},
                            s.batch, s.channels, s.spatial, ws.partials);
    bn_channel_sums_kernel<<<grid_for(s.channels), kBlock, 0, stream>>>(ws.partials, chunks,
                                                                        s.channels, sums);
    return cudaGetLastError();
  });
}

cudaError_t launch_batchnorm_backward_from_stats(cudaStream_t stream, const NormShape& s,
                                                 ConstView dy, ConstView x, const float* gamma,
                                                 const float* save_mean,
                                                 const float* save_invstd, const double* local,
                                                 const double* total, int64_t count, View dx,
                                                 float* dgamma, float* dbeta, void* workspace) {
  const char* op = "batchnorm_backward_from_stats";
  const int64_t n = s.elems();
  expect_elems(op, n, {dy, x, dx});
  if (n == 0) return cudaSuccess;
  const BnWorkspace ws = bn_workspace(s, workspace);
  return dispatch_float(op, {dy, x, dx}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bn_backward_from_sums_kernel<<<grid_for(s.channels), kBlock, 0, stream>>>(
        local, total, s.channels, count, ws.stats, dgamma, dbeta);
    if (!dx.empty())
      bn_apply_backward(stream, s, dy.as<T>(), static_cast<const T*>(nullptr), x.as<T>(), gamma,
                        save_mean, save_invstd, ws.stats, dx.as<T>());
    return cudaGetLastError();
  });
}

}  // namespace

}  // namespace cuda

size_t CudaOps::batchnorm_workspace_bytes(const NormShape& s) const {
  return cuda::batchnorm_workspace_bytes(s);
}

void CudaOps::batchnorm_forward_train(const NormShape& s, ConstView x, const float* gamma,
                                      const float* beta, const BatchNormHyper& h, View y,
                                      const BatchNormEpilogue& epi, float* save_mean,
                                      float* save_invstd, float* running_mean,
                                      float* running_var, void* workspace) {
  OpScope scope(*state_, "batchnorm_forward_train");
  if (const std::string p = norm_problem(s); !p.empty()) return fail(p);
  if (const std::string p = batchnorm_epilogue_problem(s, x, epi); !p.empty()) return fail(p);
  if (const std::string p = workspace_problem(s, workspace); !p.empty()) return fail(p);
  check(cuda::launch_batchnorm_forward_train(stream_, s, x, gamma, beta, h, y, epi, save_mean,
                                             save_invstd, running_mean, running_var, workspace),
        "batchnorm forward kernels");
}

void CudaOps::batchnorm_forward_eval(const NormShape& s, ConstView x, const float* gamma,
                                     const float* beta, const float* running_mean,
                                     const float* running_var, const BatchNormHyper& h, View y,
                                     const BatchNormEpilogue& epi) {
  OpScope scope(*state_, "batchnorm_forward_eval");
  if (const std::string p = norm_problem(s); !p.empty()) return fail(p);
  if (const std::string p = batchnorm_epilogue_problem(s, x, epi); !p.empty()) return fail(p);
  check(cuda::launch_batchnorm_forward_eval(stream_, s, x, gamma, beta, running_mean,
                                            running_var, h, y, epi),
        "bn_apply_eval_kernel");
}

void CudaOps::batchnorm_backward(const NormShape& s, ConstView dy, ConstView x,
                                 const float* gamma, const float* save_mean,
                                 const float* save_invstd, View dx, float* dgamma, float* dbeta,
                                 void* workspace) {
  OpScope scope(*state_, "batchnorm_backward");
  if (const std::string p = norm_problem(s); !p.empty()) return fail(p);
  if (const std::string p = workspace_problem(s, workspace); !p.empty()) return fail(p);
  check(cuda::launch_batchnorm_backward(stream_, "batchnorm_backward", s, dy, ConstView{}, x,
                                        gamma, save_mean, save_invstd, dx, dgamma, dbeta,
                                        workspace),
        "batchnorm backward kernels");
}

// Reads relu_post for ReLU's gradient (the CPU takes its sign from x instead).
void CudaOps::batchnorm_relu_backward(const NormShape& s, ConstView dy, ConstView relu_post,
                                      ConstView x, const float* gamma, const float* /*beta*/,
                                      const float* save_mean, const float* save_invstd, View dx,
                                      float* dgamma, float* dbeta, void* workspace) {
  OpScope scope(*state_, "batchnorm_relu_backward");
  if (const std::string p = norm_problem(s); !p.empty()) return fail(p);
  if (const std::string p = workspace_problem(s, workspace); !p.empty()) return fail(p);
  if (s.elems() != 0 && relu_post.empty())
    return fail("batchnorm_relu_backward needs relu_post, the forward's ReLU output");
  check(cuda::launch_batchnorm_backward(stream_, "batchnorm_relu_backward", s, dy, relu_post, x,
                                        gamma, save_mean, save_invstd, dx, dgamma, dbeta,
                                        workspace),
        "batchnorm backward kernels");
}

void CudaOps::batchnorm_stats(const NormShape& s, ConstView x, double* stats, void* workspace) {
  OpScope scope(*state_, "batchnorm_stats");
  if (const std::string p = norm_problem(s); !p.empty()) return fail(p);
  if (const std::string p = workspace_problem(s, workspace); !p.empty()) return fail(p);
  check(cuda::launch_batchnorm_stats(stream_, s, x, stats, workspace), "batchnorm stats kernels");
}

void CudaOps::batchnorm_forward_from_stats(const NormShape& s, ConstView x, const double* stats,
                                           int64_t count, const float* gamma, const float* beta,
                                           const BatchNormHyper& h, View y,
                                           const BatchNormEpilogue& epi, float* save_mean,
                                           float* save_invstd, float* running_mean,
                                           float* running_var, void* workspace) {
  OpScope scope(*state_, "batchnorm_forward_from_stats");
  if (const std::string p = norm_problem(s); !p.empty()) return fail(p);
  if (const std::string p = count_problem(s, count); !p.empty()) return fail(p);
  if (const std::string p = batchnorm_epilogue_problem(s, x, epi); !p.empty()) return fail(p);
  if (const std::string p = workspace_problem(s, workspace); !p.empty()) return fail(p);
  check(cuda::launch_batchnorm_forward_from_stats(stream_, s, x, stats, count, gamma, beta, h, y,
                                                  epi, save_mean, save_invstd, running_mean,
                                                  running_var, workspace),
        "batchnorm forward-from-stats kernels");
}

void CudaOps::batchnorm_backward_stats(const NormShape& s, ConstView dy, ConstView x,
                                       const float* save_mean, const float* save_invstd,
                                       double* stats, void* workspace) {
  OpScope scope(*state_, "batchnorm_backward_stats");
  if (const std::string p = norm_problem(s); !p.empty()) return fail(p);
  if (const std::string p = workspace_problem(s, workspace); !p.empty()) return fail(p);
  check(cuda::launch_batchnorm_backward_stats(stream_, s, dy, x, save_mean, save_invstd, stats,
                                              workspace),
        "batchnorm backward stats kernels");
}

void CudaOps::batchnorm_backward_from_stats(const NormShape& s, ConstView dy, ConstView x,
                                            const float* gamma, const float* save_mean,
                                            const float* save_invstd, const double* local,
                                            const double* total, int64_t count, View dx,
                                            float* dgamma, float* dbeta, void* workspace) {
  OpScope scope(*state_, "batchnorm_backward_from_stats");
  if (const std::string p = norm_problem(s); !p.empty()) return fail(p);
  if (const std::string p = count_problem(s, count); !p.empty()) return fail(p);
  if (const std::string p = workspace_problem(s, workspace); !p.empty()) return fail(p);
  check(cuda::launch_batchnorm_backward_from_stats(stream_, s, dy, x, gamma, save_mean,
                                                   save_invstd, local, total, count, dx, dgamma,
                                                   dbeta, workspace),
        "batchnorm backward-from-stats kernels");
}

}  // namespace noeira
