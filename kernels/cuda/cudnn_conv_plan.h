// CudnnConv's plan (cudnn_conv.h): what cudnn_conv_plan.cpp builds once per (shape,
// dtype) and the passes in cudnn_conv.cpp run, and the workspace layout they share.
//
// Workspace (from its first 256-byte boundary; regions 256-byte aligned; x32 etc. are
// fp32 copies of bf16 operands or fp32 results for a widened pass):
//   forward:          native: cuDNN's workspace at 0; widened: x32 | w32 | y32 | cuDNN's
//   backward-data:    native: cuDNN's workspace at 0; widened: dy32 | w32 | dx32 | cuDNN's
//   backward-weights: db's channel partials at 0 (done before what follows starts: one
//                     stream), then native: cuDNN's workspace at 0; widened:
//                     x32 | dy32 | cuDNN's
#pragma once
#include <cudnn.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cudnn_conv.h"

namespace noeira::cuda {

constexpr size_t conv_align_up(size_t b) {
  return (b + CudnnConv::kAlign - 1) / CudnnConv::kAlign * CudnnConv::kAlign;
}

// Bytes of an fp32 copy of `elems` values, rounded up to the alignment.
inline size_t f32_bytes(int64_t elems) {
  return conv_align_up(static_cast<size_t>(elems) * sizeof(float));
}

// The workspace's first aligned byte.
inline char* aligned_base(void* workspace) {
  const auto a = reinterpret_cast<uintptr_t>(workspace);
  return reinterpret_cast<char*>(conv_align_up(a));
}

struct CudnnConv::Plan {
  // Tensor descriptors: x (B, Cin, H, W), y (B, Cout, Ho, Wo), w (Cout, Cin, kh, kw).
  struct Descs {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
  };
  // One pass: its own convolution descriptor (carrying the algorithm's math type), the
  // algorithm, and where cuDNN's workspace starts in ours.
  template <class Algo>
  struct Pass {
    cudnnConvolutionDescriptor_t conv = nullptr;
    Algo algo{};
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    bool widened = false;  // bf16 operands widened to fp32 first (the `wide` descriptors)
    size_t cudnn_offset = 0, cudnn_bytes = 0;
  };

  Descs native;  // the storage dtype
  Descs wide;    // fp32, for widened bf16 passes (bf16 plans only)
  Pass<cudnnConvolutionFwdAlgo_t> fwd;
  Pass<cudnnConvolutionBwdDataAlgo_t> data;
  Pass<cudnnConvolutionBwdFilterAlgo_t> filter;
  size_t bytes = 0;  // planned workspace, with kAlign of slack

  static void destroy(Descs& d) {
    if (d.x) cudnnDestroyTensorDescriptor(d.x);
    if (d.y) cudnnDestroyTensorDescriptor(d.y);
    if (d.w) cudnnDestroyFilterDescriptor(d.w);
  }
  ~Plan() {
    destroy(native);
    destroy(wide);
    for (cudnnConvolutionDescriptor_t c : {fwd.conv, data.conv, filter.conv})
      if (c) cudnnDestroyConvolutionDescriptor(c);
  }
};

}  // namespace noeira::cuda
