// Shapes of the image ops (kernels/op_list.inc): NCHW activations, OIHW weights, as PyTorch
// lays them out. Plain structs with the output-size arithmetic written once, so the
// backends, the modules and the tests agree on it.
#pragma once
#include <compare>
#include <cstdint>

#include "kernels/common/hd.h"

// Shapes are ordered (map keys of the backends' plans) in C++20 code; the CUDA kernels
// compile as C++17 (CMakeLists.txt) and never compare shapes, so they skip it.
#if __cplusplus >= 202002L
#define NOEIRA_SHAPE_ORDER(T) auto operator<=>(const T&) const = default;
#else
#define NOEIRA_SHAPE_ORDER(T)
#endif

namespace noeira {

// 2-D convolution: x (B, Cin, H, W) * w (Cout, Cin, kh, kw) + b (Cout) -> y (B, Cout, Ho, Wo).
// No dilation, no groups; the same stride and zero padding on both spatial dims.
struct ConvShape {
  int64_t batch = 0, in_channels = 0, height = 0, width = 0;  // x (B, Cin, H, W)
  int64_t out_channels = 0, kernel_h = 0, kernel_w = 0;       // w (Cout, Cin, kh, kw)
  int64_t stride = 1;                                         // both spatial dims
  int64_t pad = 0;                                            // zeros on every side
  bool has_bias = true;                                       // b (Cout)
  // Whether backward-data runs (a network's first convolution needs no d(input)): a
  // backend then need not find an algorithm for it.
  bool input_grad = true;

  // Rounding down, as PyTorch does.
  NOEIRA_HD int64_t out_height() const { return (height + 2 * pad - kernel_h) / stride + 1; }
  NOEIRA_HD int64_t out_width() const { return (width + 2 * pad - kernel_w) / stride + 1; }
  int64_t x_elems() const { return batch * in_channels * height * width; }
  int64_t w_elems() const { return out_channels * in_channels * kernel_h * kernel_w; }
  int64_t y_elems() const { return batch * out_channels * out_height() * out_width(); }
  NOEIRA_SHAPE_ORDER(ConvShape)
};

// 2-D max or average pooling over (kh, kw) windows: x (B, C, H, W) -> y (B, C, Ho, Wo).
// Padding is implicit: -inf for max, zeros counted in the divisor for average (PyTorch's
// count_include_pad=True). Global average pooling is kh = H, kw = W.
struct PoolShape {
  int64_t batch = 0, channels = 0, height = 0, width = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride = 1, pad = 0;

  NOEIRA_HD int64_t out_height() const { return (height + 2 * pad - kernel_h) / stride + 1; }
  NOEIRA_HD int64_t out_width() const { return (width + 2 * pad - kernel_w) / stride + 1; }
  int64_t x_elems() const { return batch * channels * height * width; }
  int64_t y_elems() const { return batch * channels * out_height() * out_width(); }
  NOEIRA_SHAPE_ORDER(PoolShape)
};

// Per-channel normalisation (BatchNorm2d): x (B, C, S) with S = H * W spatial elements;
// statistics per channel over the B * S values of that channel.
struct NormShape {
  int64_t batch = 0, channels = 0, spatial = 1;

  int64_t elems() const { return batch * channels * spatial; }
  int64_t per_channel() const { return batch * spatial; }
  NOEIRA_SHAPE_ORDER(NormShape)
};

// The ResNet option-A shortcut (He et al. 2016, as the common PyTorch reimplementation
// writes it: F.pad(x[:, :, ::s, ::s], (0, 0, 0, 0, p, p))): subsample every stride-th
// pixel starting at 0, then pad p = (Cout - Cin) / 2 zero channels on both sides.
// x (B, Cin, H, W) -> y (B, Cout, ceil(H / s), ceil(W / s)).
struct ShortcutShape {
  int64_t batch = 0, in_channels = 0, height = 0, width = 0;
  int64_t out_channels = 0, stride = 1;

  NOEIRA_HD int64_t out_height() const { return (height + stride - 1) / stride; }
  NOEIRA_HD int64_t out_width() const { return (width + stride - 1) / stride; }
  NOEIRA_HD int64_t pad_channels() const { return (out_channels - in_channels) / 2; }
  int64_t x_elems() const { return batch * in_channels * height * width; }
  int64_t y_elems() const { return batch * out_channels * out_height() * out_width(); }
  NOEIRA_SHAPE_ORDER(ShortcutShape)
};

// Non-overlapping p x p patches (a ViT's patch embedding): x (B, C, H, W) -> y (B, N, D),
// N = (H / p) (W / p) patches in row-major patch order, each flattened as (c, ky, kx), so
// D = C p p in the order of a stride-p convolution's (Cout, C, p, p) weight: Linear(D -> E)
// on the patches is that convolution. H and W are multiples of p.
struct PatchShape {
  int64_t batch = 0, channels = 0, height = 0, width = 0, patch = 1;

  NOEIRA_HD int64_t grid_w() const { return width / patch; }
  NOEIRA_HD int64_t patches() const { return (height / patch) * (width / patch); }
  NOEIRA_HD int64_t patch_elems() const { return channels * patch * patch; }
  int64_t elems() const { return batch * channels * height * width; }  // x and y alike
  // The index in x of element i of y: y[i] = x[patch_source(i)], a permutation.
  NOEIRA_HD int64_t patch_source(int64_t i) const {
    const int64_t D = patch_elems(), N = patches();
    const int64_t d = i % D, n = (i / D) % N, b = i / (D * N);
    const int64_t pp = patch * patch;
    const int64_t c = d / pp, ky = (d % pp) / patch, kx = d % patch;
    const int64_t py = n / grid_w(), px = n % grid_w();
    return ((b * channels + c) * height + py * patch + ky) * width + px * patch + kx;
  }
  NOEIRA_SHAPE_ORDER(PatchShape)
};

// Random crop with `pad` pixels of padding on every side, then a horizontal flip, per
// sample of a (n, C, H, W) fp32 image set (kernels/common/augment.h draws them). Pixels
// that fall into the padding take fill[c]: zero in pixel space is -mean[c] / std[c] once
// the data set is normalised.
struct AugmentSpec {
  static constexpr int kMaxChannels = 4;
  int64_t count = 0, channels = 0, height = 0, width = 0;
  int pad = 4;
  bool flip = true;
  float fill[kMaxChannels] = {};
};

}  // namespace noeira
