// 2-D convolution on the CPU through oneDNN: NCHW activations, OIHW weights, stride and
// symmetric zero padding, no dilation, no groups. NCHW at the interface (DESIGN.md
// section 2b); inside, the layouts oneDNN picks for its kernels (nChw16c for the JIT direct
// and Winograd ones, where winograd_applies below; nhwc for its AMX bf16 ones and, asked
// for, its fp32 direct stride-1 ones from 16 channels to 16 where each pass gets a JIT
// kernel), with copies through the workspace (onednn_conv_pass.cpp, channel_blocks.h);
// activation outputs of kStreamBytes or more leave them by streaming stores where our copies
// move them and their nchw rows are 64-byte aligned (streaming_store.h).
// Activations and weights fp32 or bf16 (oneDNN's bf16 kernels: fp32 accumulation, a bf16
// output rounded once); bias and weight gradients always fp32. bf16 3x3 stride-1 weight
// gradients run our kernels instead where bf16_wgrad_applies (bf16_conv3x3_wgrad.h: its
// AVX512-BF16 kernel, or bf16_conv3x3_wgrad_amx.h's on AMX tiles, as planned), in the same
// slabs. fp32 3x3 stride-1 forward and backward-data passes of 32-pixel rows that Winograd
// does not take run our kernel on the nchw rows instead, with no copies
// (f32_conv3x3_rows.h), in the same slabs.
//
// Results do not depend on the thread count (DESIGN.md rule 3): the batch is cut into
// fixed slabs of conv_slab_images(shape) images that OpenMP spreads over the threads, each one
// single-threaded oneDNN call. Forward and backward-data write each slab's own images.
// Backward-weights writes each slab's partial dw/db into the workspace, then adds the
// partials in slab order. One caller at a time, outside any OpenMP parallel region.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/common/dtype.h"
#include "kernels/common/error.h"
#include "kernels/common/image_shapes.h"

namespace noeira {

// Images per slab, a function of the shape alone, so results never depend on the thread
// count: kConvSlabImages, doubled while a slab holds under kConvSlabPixels input pixels, the
// batch keeps at least two slabs and the slab's largest activation stays within 2^24
// elements. oneDNN's kernels amortise their per-call work over a slab; on one Zen 4 core,
// ResNet-20's 8x8 convolutions (64-image slabs) ran every pass in 0.63-0.78x the time of
// 8-image slabs and its 16x16 ones (16 images) in 0.85-0.95x; at 32x32, 16-image slabs
// made fp32 Winograd slower (docs/cpu-runs/2026-12-05-zen4-slabs.md).
inline constexpr int64_t kConvSlabImages = 8;
inline constexpr int64_t kConvSlabPixels = 4096;
int64_t conv_slab_images(const ConvShape& shape);

// Whether a shape's passes run oneDNN's Winograd F(4x4, 3x3) kernels rather than direct
// ones: fp32, 3x3, stride 1, padding 1, input and output channels multiples of 16 (the
// kernels' own limits; all of ResNet-20's stride-1 convolutions). They do about a quarter
// of the multiplications; on one AMD Zen 4 core, 8-image slabs, they took 0.50-0.70x the
// direct kernels' time in every pass at (16, 32x32), (32, 16x16) and (64, 8x8). Their
// rounding differs from a direct sum's (the input and output transforms add and subtract
// before and after the products): rel. error ~1e-6 against a double reference, within the
// convolution tests' 1e-4. Chosen from the shape alone, like every layout choice; where
// oneDNN has no such kernel for this CPU the passes run direct (onednn_conv_pass.cpp).
// Where oneDNN runs AMX (onednn::runs_amx), only images of kAmxWinogradMaxPixels or fewer:
// there its direct kernels were faster at 32x32 (onednn_conv_pass.cpp).
inline constexpr int64_t kAmxWinogradMaxPixels = 256;
// NOEIRA_WINOGRAD=0 in the environment turns it off (read when a shape is planned).
bool winograd_applies(const ConvShape& shape, DType dtype);

// An Error naming the bad field: sizes must be positive, pad non-negative, and the
// padded input at least as large as the kernel.
Status validate(const ConvShape& shape);

// The shape in words for error messages ("convolution (B=128, Cin=16, ...)"), with its
// dtype first in the second form.
std::string describe_conv(const ConvShape& shape);
std::string describe_conv(const ConvShape& shape, DType dtype);

class OnednnConv {
 public:
  explicit OnednnConv(int threads);
  ~OnednnConv();
  int threads() const { return threads_; }

  // Plans a shape for activations and weights of `dtype` (fp32 or bf16): creates its
  // primitives (slow, allocating) and returns the workspace bytes its passes need: the
  // per-slab partial gradients of backward_weights, the weights in oneDNN's layout, and
  // per thread the reordered activations and oneDNN's scratchpads. Depends on threads().
  // Call once per shape and dtype when planning; the passes refuse one that was not
  // planned, so they never create primitives or allocate buffers (oneDNN still news a few
  // small objects per call). Shapes whose passes run one after another may share one
  // workspace. An Error for an invalid shape or one oneDNN cannot run in `dtype`.
  Result<size_t> workspace_bytes(const ConvShape& shape, DType dtype = DType::kF32);

  // The passes, for T = float or bf16_t (the planned dtype).
  // y = conv(x, w) + bias.  x (B, Cin, H, W), w (Cout, Cin, kh, kw), bias (Cout) or null
  // as shape.has_bias says, y (B, Cout, Ho, Wo).
  template <class T>
  Status forward(const ConvShape& shape, const T* x, const T* w, const float* bias, T* y,
                 void* workspace, size_t workspace_size);
  // dx = conv-transpose(dy, w), overwriting dx.  dy (B, Cout, Ho, Wo), dx (B, Cin, H, W).
  // With relu_post (and residual, both dx's shape): dx = add_relu_grad(conv-transpose,
  // residual, relu_post) as it is written (kernels/ops.h ConvDxEpilogue).
  template <class T>
  Status backward_data(const ConvShape& shape, const T* dy, const T* w, T* dx, void* workspace,
                       size_t workspace_size, const T* residual = nullptr,
                       const T* relu_post = nullptr);
  // dw += sum over images of x correlated with dy; db += sums of dy over (B, Ho, Wo).
  // Accumulates, so a parameter used twice gets both gradients. dw (Cout, Cin, kh, kw),
  // db (Cout) or null (always null without shape.has_bias; with it, null skips the bias
  // gradient); both fp32.
  template <class T>
  Status backward_weights(const ConvShape& shape, const T* x, const T* dy, float* dw, float* db,
                          void* workspace, size_t workspace_size);
  // backward_weights, then backward_data when dx is not null: their bits. Where both
  // passes read dy in one layout (oneDNN's kernels for both, the fused_backward of the
  // plan), each slab copies dy into it once: backward-data's copy serves backward-weights
  // (one of the six activation copies a convolution's three passes make).
  template <class T>
  Status backward(const ConvShape& shape, const T* x, const T* dy, const T* w, T* dx, float* dw,
                  float* db, void* workspace, size_t workspace_size, const T* residual = nullptr,
                  const T* relu_post = nullptr);
  // Whether backward() copies dy once for both passes at a planned shape (false unplanned).
  bool fuses_backward(const ConvShape& shape, DType dtype) const;

 private:
  struct Impl;
  int threads_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace noeira
