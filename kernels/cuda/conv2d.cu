// CudaOps' convolutions, conv2d_plan and its three passes (contracts: kernels/op_list.inc),
// through the one cuda::CudnnConv the backend makes at the first plan (cudnn_conv.h:
// algorithms, math types, the bf16 scheme), and the convolution's own kernels around
// cuDNN, which cudnn_conv.cpp launches (launchers.h): the forward's bias, added to
// cuDNN's fp32 result and rounded once to y's dtype, and the bias gradient, a
// per-channel sum of dy in the fixed order of channel_sum.h (cuDNN's deprecated
// cudnnConvolutionBackwardBias documents no order and overwrites db).
#include <memory>
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/conv_dx_epilogue_check.h"
#include "kernels/cuda/channel_sum.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/cuda/index.cuh"
#include "kernels/cuda/launchers.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace cuda {

namespace {

// y(b, c, s) = in(b, c, s) + bias[c]; in may alias y when T is float. I: index.cuh's.
template <class T, class I>
__global__ void channel_bias_add_kernel(const float* in, const float* bias, T* y, I n,
                                        Divider<I> C, Divider<I> S) {
  for (I i = first_index<I>(); i < n; i += index_stride<I>())
    store_f32(y[i], in[i] + bias[C.mod(S.div(i))]);
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
    return with_index(n, [&](auto index) {
      using I = typename decltype(index)::type;
      channel_bias_add_kernel<<<grid_for(n), kBlock, 0, stream>>>(
          in, bias, y.as<T>(), static_cast<I>(n), Divider<I>(C), Divider<I>(S));
      return cudaGetLastError();
    });
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

}  // namespace cuda

Result<size_t> CudaOps::conv2d_plan(const ConvShape& s, DType dtype) {
  if (state_->capturing())
    return make_error("conv2d_plan: a CUDA graph is being captured; plan every convolution "
                      "before begin_capture");
  if (!conv_) {
    Result<std::unique_ptr<cuda::CudnnConv>> c = cuda::CudnnConv::create(stream_, tf32());
    if (!c) return make_error("target gpu: " + c.error().message);
    conv_ = std::move(c).value();
  }
  return conv_->plan(s, dtype);
}

std::string CudaOps::conv2d_plan_description(const ConvShape& s, DType dtype) const {
  return conv_ ? conv_->describe_plan(s, dtype) : std::string();
}

void CudaOps::conv2d_forward(const ConvShape& s, ConstView x, ConstView w, const float* bias,
                             View y, void* workspace, size_t workspace_bytes) {
  OpScope scope(*state_, "conv2d_forward");
  if (!conv_) return fail("no convolution was planned; call conv2d_plan first");
  if (Status st = conv_->forward(s, x, w, bias, y, workspace, workspace_bytes); !st)
    fail(st.error().message);
}

void CudaOps::conv2d_backward_data(const ConvShape& s, ConstView dy, ConstView w, View dx,
                                   void* workspace, size_t workspace_bytes) {
  OpScope scope(*state_, "conv2d_backward_data");
  if (!conv_) return fail("no convolution was planned; call conv2d_plan first");
  if (Status st = conv_->backward_data(s, dy, w, dx, workspace, workspace_bytes); !st)
    fail(st.error().message);
}

void CudaOps::conv2d_backward_weights(const ConvShape& s, ConstView x, ConstView dy, float* dw,
                                      float* db, void* workspace, size_t workspace_bytes) {
  OpScope scope(*state_, "conv2d_backward_weights");
  if (!conv_) return fail("no convolution was planned; call conv2d_plan first");
  if (Status st = conv_->backward_weights(s, x, dy, dw, db, workspace, workspace_bytes); !st)
    fail(st.error().message);
}

// The two ops, each in its own scope (cuDNN has no shared layout copy to save), then the dx
// epilogue in place over dx: add_relu_backward's kernel, in its own scope.
void CudaOps::conv2d_backward(const ConvShape& s, ConstView x, ConstView dy, ConstView w, View dx,
                              const ConvDxEpilogue& dx_epi, float* dw, float* db,
                              void* workspace, size_t workspace_bytes) {
  if (std::string p = conv_dx_epilogue_problem(s, dx, dx_epi); !p.empty()) {
    OpScope scope(*state_, "conv2d_backward");
    return fail(p);
  }
  conv2d_backward_weights(s, x, dy, dw, db, workspace, workspace_bytes);
  if (dx.empty()) return;
  conv2d_backward_data(s, dy, w, dx, workspace, workspace_bytes);
  if (dx_epi.empty()) return;
  OpScope scope(*state_, "add_relu_backward");
  check(cuda::launch_add_relu_backward(stream_, dx, dx_epi.residual, dx_epi.relu_post, dx),
        "add_relu_backward_kernel");
}

}  // namespace noeira
