// The convolution's own kernels around cuDNN (cudnn_conv.cpp): the forward's bias, added
// to cuDNN's fp32 result and rounded once to y's dtype, and the bias gradient, a
// per-channel sum of dy in the fixed order of channel_sum.cuh (cuDNN's deprecated
// cudnnConvolutionBackwardBias documents no order and overwrites db).
#include "kernels/cuda/channel_sum.cuh"
#include "kernels/cuda/image_kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/dispatch.h"

namespace noeira::cuda {

namespace {

// y(b, c, s) = in(b, c, s) + bias[c]; in may alias y when T is float.
template <class T>
__global__ void channel_bias_add_kernel(const float* in, const float* bias, T* y, int64_t n,
                                        int64_t C, int64_t S) {
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    store_f32(y[i], in[i] + bias[(i / S) % C]);
}

template <class T>
struct DySum {
  const T* dy;
  __device__ double2 operator()(int64_t i, int64_t) const {
    return make_double2(static_cast<double>(load_f32(dy[i])), 0.0);
  }
};

__global__ void bias_grad_finish_kernel(const double2* partials, int64_t chunks, int64_t C,
                                        float* db) {
  for (int64_t c = global_thread(); c < C; c += grid_stride())
    db[c] += static_cast<float>(channel_total(partials, c, chunks).x);
}

}  // namespace

cudaError_t launch_channel_bias_add(cudaStream_t stream, const float* in, const float* bias,
                                    View y, int64_t B, int64_t C, int64_t S) {
  const char* op = "conv2d_forward (bias)";
  const int64_t n = B * C * S;
  expect_elems(op, n, {y});
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    channel_bias_add_kernel<<<grid_for(n), kBlock, 0, stream>>>(in, bias, y.as<T>(), n, C, S);
    return cudaGetLastError();
  });
}

cudaError_t launch_channel_bias_grad(cudaStream_t stream, ConstView dy, int64_t B, int64_t C,
                                     int64_t S, float* db, void* partials) {
  const char* op = "conv2d_backward_weights (bias)";
  expect_elems(op, B * C * S, {dy});
  if (C == 0) return cudaSuccess;
  auto* p = static_cast<double2*>(partials);
  const int64_t chunks = channel_sum_plan(B * S).chunks;
  return dispatch_float(op, {dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    launch_channel_partials(stream, DySum<T>{dy.as<T>()}, B, C, S, p);
    bias_grad_finish_kernel<<<grid_for(C), kBlock, 0, stream>>>(p, chunks, C, db);
    return cudaGetLastError();
  });
}

}  // namespace noeira::cuda
