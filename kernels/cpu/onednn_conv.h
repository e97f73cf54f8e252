// 2-D convolution on the CPU through oneDNN: NCHW activations, OIHW weights, stride and
// symmetric zero padding, no dilation, no groups. NCHW at the interface (DESIGN.md
// section 2b); inside, oneDNN's blocked layouts (nChw16c, JIT direct kernels) where they
// were measured faster, with reorders through the workspace (onednn_conv_pass.cpp).
//
// Results do not depend on the thread count (DESIGN.md rule 3): the batch is cut into
// fixed slabs of kConvSlabImages images that OpenMP spreads over the threads, each one
// single-threaded oneDNN call. Forward and backward-data write each slab's own images.
// Backward-weights writes each slab's partial dw/db into the workspace, then adds the
// partials in slab order. One caller at a time, outside any OpenMP parallel region.
#pragma once
#include <compare>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/common/error.h"

namespace noeira {

// Images per slab: fixed, so results never depend on the thread count.
inline constexpr int64_t kConvSlabImages = 8;

struct ConvShape {
  int64_t batch = 0, in_channels = 0, height = 0, width = 0;  // x (B, Cin, H, W)
  int64_t out_channels = 0, kernel_h = 0, kernel_w = 0;       // w (Cout, Cin, kh, kw)
  int64_t stride = 1;                                         // both spatial dims
  int64_t pad = 0;                                            // zeros on every side
  bool has_bias = true;                                       // b (Cout)

  // y (B, Cout, Ho, Wo), rounding down as PyTorch does.
  int64_t out_height() const { return (height + 2 * pad - kernel_h) / stride + 1; }
  int64_t out_width() const { return (width + 2 * pad - kernel_w) / stride + 1; }
  auto operator<=>(const ConvShape&) const = default;
};

// An Error naming the bad field: sizes must be positive, pad non-negative, and the
// padded input at least as large as the kernel.
Status validate(const ConvShape& shape);

class OnednnConv {
 public:
  explicit OnednnConv(int threads);
  ~OnednnConv();
  int threads() const { return threads_; }

  // Plans a shape: creates its primitives (slow, allocating) and returns the workspace
  // bytes its passes need: the per-slab partial gradients of backward_weights, the
  // weights in oneDNN's layout, and per thread the reordered activations and oneDNN's
  // scratchpads. Depends on threads(). Call once per shape when planning; the passes
  // refuse a shape that was not planned, so they never create primitives or allocate
  // buffers (oneDNN still news a few small objects per call). Shapes whose passes run one
  // after another may share one workspace. An Error for an invalid shape.
  Result<size_t> workspace_bytes(const ConvShape& shape);

  // y = conv(x, w) + bias.  x (B, Cin, H, W), w (Cout, Cin, kh, kw), bias (Cout) or null
  // as shape.has_bias says, y (B, Cout, Ho, Wo).
  Status forward(const ConvShape& shape, const float* x, const float* w, const float* bias,
                 float* y, void* workspace, size_t workspace_size);
  // dx = conv-transpose(dy, w), overwriting dx.  dy (B, Cout, Ho, Wo), dx (B, Cin, H, W).
  Status backward_data(const ConvShape& shape, const float* dy, const float* w, float* dx,
                       void* workspace, size_t workspace_size);
  // dw += sum over images of x correlated with dy; db += sums of dy over (B, Ho, Wo).
  // Accumulates, so a parameter used twice gets both gradients. dw (Cout, Cin, kh, kw),
  // db (Cout) or null as shape.has_bias says.
  Status backward_weights(const ConvShape& shape, const float* x, const float* dy, float* dw,
                          float* db, void* workspace, size_t workspace_size);

 private:
  struct Impl;
  int threads_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace noeira
