// CudnnConv's passes (cudnn_conv.h): the planned cuDNN algorithm in the caller's
// workspace (layout: cudnn_conv_plan.h), with our kernels for the widening casts, the
// bias and its gradient. Nothing here allocates, synchronises or searches.
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cudnn_conv_plan.h"
#include "kernels/cuda/launchers.h"

namespace noeira::cuda {

namespace {

Status cudnn_status(const char* call, cudnnStatus_t s, const ConvShape& shape, DType dtype) {
  if (s == CUDNN_STATUS_SUCCESS) return {};
  return make_error(std::string(call) + " failed (" + error_text(s) + ") for the " +
                    describe(shape, dtype) +
                    "; rerun with CUDNN_LOGLEVEL_DBG=1 CUDNN_LOGDEST_DBG=stderr for cuDNN's reason");
}

Status cuda_status(const char* call, cudaError_t e) {
  if (e == cudaSuccess) return {};
  return make_error(std::string(call) + " failed (" + error_text(e) + ")");
}

}  // namespace

Result<const CudnnConv::Plan*> CudnnConv::find(const char* pass, const ConvShape& s,
                                               DType dtype, void* workspace,
                                               size_t workspace_bytes) const {
  const auto it = plans_.find(Key{s, dtype});
  if (it == plans_.end())
    return make_error(std::string(pass) + ": the " + describe(s, dtype) +
                      " was not planned; call conv2d_plan for every shape (and dtype) while "
                      "planning, before any pass");
  const Plan* p = it->second.get();
  if (workspace_bytes < p->bytes || (!workspace && p->bytes > 0))
    return make_error(std::string(pass) + ": the workspace has " +
                      std::to_string(workspace ? workspace_bytes : 0) + " bytes, the " +
                      describe(s, dtype) + " needs " + std::to_string(p->bytes) +
                      " (conv2d_plan's result); plan the workspace for the largest shape");
  return p;
}

Status CudnnConv::forward(const ConvShape& s, ConstView x, ConstView w, const float* bias, View y,
                          void* workspace, size_t workspace_bytes) {
  const char* pass = "conv2d_forward";
  Result<const Plan*> found = find(pass, s, x.dtype, workspace, workspace_bytes);
  if (!found) return found.error();
  const Plan& p = **found;
  if (w.dtype != x.dtype || y.dtype != x.dtype || w.n != s.w_elems() || x.n != s.x_elems() ||
      y.n != s.y_elems())
    return make_error(std::string(pass) + ": x, w and y must be one dtype and hold the " +
                      describe(s, x.dtype) + "'s element counts");
  if ((bias != nullptr) != s.has_bias)
    return make_error(std::string(pass) + ": the " + describe(s, x.dtype) +
                      (s.has_bias ? " needs its bias" : " was planned without a bias"));
  const float one = 1.0f, zero = 0.0f;
  char* base = aligned_base(workspace);
  const int64_t spatial = s.out_height() * s.out_width();
  if (!p.fwd.widened) {  // fp32, or bf16 without bias: cuDNN writes y (rounds bf16 once)
    NOEIRA_TRY(cudnn_status(
        "cudnnConvolutionForward",
        cudnnConvolutionForward(handle_, &one, p.native.x, x.data, p.native.w, w.data, p.fwd.conv,
                                p.fwd.algo, base + p.fwd.cudnn_offset, p.fwd.cudnn_bytes, &zero,
                                p.native.y, y.data),
        s, x.dtype));
    if (!bias) return {};
    // Only fp32 gets here with a bias (plan: bf16 with bias is widened): in place.
    return cuda_status("channel_bias_add_kernel",
                       launch_channel_bias_add(stream_, y.as<float>(), bias, y, s.batch,
                                               s.out_channels, spatial));
  }
  // bf16, widened: x, w to fp32; fp32 conv into y32; (+ bias) rounded once into y.
  float* x32 = reinterpret_cast<float*>(base);
  float* w32 = reinterpret_cast<float*>(base + f32_bytes(s.x_elems()));
  float* y32 = reinterpret_cast<float*>(base + f32_bytes(s.x_elems()) + f32_bytes(s.w_elems()));
  NOEIRA_TRY(cuda_status("cast_kernel (x to fp32)",
                         launch_cast(stream_, x, View(x32, s.x_elems()))));
  NOEIRA_TRY(cuda_status("cast_kernel (w to fp32)",
                         launch_cast(stream_, w, View(w32, s.w_elems()))));
  NOEIRA_TRY(cudnn_status(
      "cudnnConvolutionForward",
      cudnnConvolutionForward(handle_, &one, p.wide.x, x32, p.wide.w, w32, p.fwd.conv, p.fwd.algo,
                              base + p.fwd.cudnn_offset, p.fwd.cudnn_bytes, &zero, p.wide.y, y32),
      s, x.dtype));
  if (bias)
    return cuda_status("channel_bias_add_kernel",
                       launch_channel_bias_add(stream_, y32, bias, y, s.batch, s.out_channels,
                                               spatial));
  return cuda_status("cast_kernel (y to bf16)",
                     launch_cast(stream_, ConstView(y32, s.y_elems()), y));
}

Status CudnnConv::backward_data(const ConvShape& s, ConstView dy, ConstView w, View dx,
                                void* workspace, size_t workspace_bytes) {
  const char* pass = "conv2d_backward_data";
  if (!s.input_grad)
    return make_error(std::string(pass) + ": the " + describe(s, dy.dtype) +
                      " was planned without backward-data (ConvShape::input_grad)");
  Result<const Plan*> found = find(pass, s, dy.dtype, workspace, workspace_bytes);
  if (!found) return found.error();
  const Plan& p = **found;
  if (w.dtype != dy.dtype || dx.dtype != dy.dtype || w.n != s.w_elems() ||
      dy.n != s.y_elems() || dx.n != s.x_elems())
    return make_error(std::string(pass) + ": dy, w and dx must be one dtype and hold the " +
                      describe(s, dy.dtype) + "'s element counts");
  const float one = 1.0f, zero = 0.0f;
  char* base = aligned_base(workspace);
  if (!p.data.widened)  // cuDNN writes dx (rounds bf16 once)
    return cudnn_status(
        "cudnnConvolutionBackwardData",
        cudnnConvolutionBackwardData(handle_, &one, p.native.w, w.data, p.native.y, dy.data,
                                     p.data.conv, p.data.algo, base + p.data.cudnn_offset,
                                     p.data.cudnn_bytes, &zero, p.native.x, dx.data),
        s, dy.dtype);
  // bf16 without a native algorithm: dy, w to fp32; fp32 pass into dx32; rounded once.
  float* dy32 = reinterpret_cast<float*>(base);
  float* w32 = reinterpret_cast<float*>(base + f32_bytes(s.y_elems()));
  float* dx32 = reinterpret_cast<float*>(base + f32_bytes(s.y_elems()) + f32_bytes(s.w_elems()));
  NOEIRA_TRY(cuda_status("cast_kernel (dy to fp32)",
                         launch_cast(stream_, dy, View(dy32, s.y_elems()))));
  NOEIRA_TRY(cuda_status("cast_kernel (w to fp32)",
                         launch_cast(stream_, w, View(w32, s.w_elems()))));
  NOEIRA_TRY(cudnn_status(
      "cudnnConvolutionBackwardData",
      cudnnConvolutionBackwardData(handle_, &one, p.wide.w, w32, p.wide.y, dy32, p.data.conv,
                                   p.data.algo, base + p.data.cudnn_offset, p.data.cudnn_bytes,
                                   &zero, p.wide.x, dx32),
      s, dy.dtype));
  return cuda_status("cast_kernel (dx to bf16)",
                     launch_cast(stream_, ConstView(dx32, s.x_elems()), dx));
}

Status CudnnConv::backward_weights(const ConvShape& s, ConstView x, ConstView dy, float* dw,
                                   float* db, void* workspace, size_t workspace_bytes) {
  const char* pass = "conv2d_backward_weights";
  Result<const Plan*> found = find(pass, s, x.dtype, workspace, workspace_bytes);
  if (!found) return found.error();
  const Plan& p = **found;
  if (dy.dtype != x.dtype || x.n != s.x_elems() || dy.n != s.y_elems())
    return make_error(std::string(pass) + ": x and dy must be one dtype and hold the " +
                      describe(s, x.dtype) + "'s element counts");
  char* base = aligned_base(workspace);
  if (db)  // first: its partials share the workspace with what follows, in stream order
    NOEIRA_TRY(cuda_status("channel bias-gradient kernels",
                           launch_channel_bias_grad(stream_, dy, s.batch, s.out_channels,
                                                    s.out_height() * s.out_width(), db, base)));
  const float one = 1.0f;  // alpha, and beta: dw accumulates
  const void* xs = x.data;
  const void* dys = dy.data;
  const Plan::Descs& d = p.filter.widened ? p.wide : p.native;
  if (p.filter.widened) {
    float* x32 = reinterpret_cast<float*>(base);
    float* dy32 = reinterpret_cast<float*>(base + f32_bytes(s.x_elems()));
    NOEIRA_TRY(cuda_status("cast_kernel (x to fp32)",
                           launch_cast(stream_, x, View(x32, s.x_elems()))));
    NOEIRA_TRY(cuda_status("cast_kernel (dy to fp32)",
                           launch_cast(stream_, dy, View(dy32, s.y_elems()))));
    xs = x32;
    dys = dy32;
  }
  return cudnn_status(
      "cudnnConvolutionBackwardFilter",
      cudnnConvolutionBackwardFilter(handle_, &one, d.x, xs, d.y, dys, p.filter.conv,
                                     p.filter.algo, base + p.filter.cudnn_offset,
                                     p.filter.cudnn_bytes, &one, d.w, dw),
      s, x.dtype);
}

}  // namespace noeira::cuda
