// 2-D convolution through cuDNN's legacy API (Ops::conv2d_*, conv2d.cu; contracts in
// kernels/op_list.inc).
// NCHW activations and OIHW weights at the interface and inside: cuDNN reads them as
// they are.
//
// Determinism and capture (DESIGN.md rule 3): plan() builds each shape's descriptors and
// asks cuDNN's heuristic (cudnnGet*Algorithm_v7, which depends on the shape, the device
// and the cuDNN version only; cudnnFind* would time the algorithms and could choose
// differently from run to run) for each pass's algorithms, keeping the first one that is
// CUDNN_DETERMINISTIC, supported and within kMaxPassWorkspace. The passes run that
// algorithm, eager or captured, in the caller's planned workspace; they never allocate,
// synchronise or search.
//
// Math: fp32 convolutions may use TF32 tensor cores when the backend's TF32 switch is on
// (CUDNN_TENSOR_OP_MATH asked for, the chosen algorithm's own math type set) and never
// when it is off (CUDNN_FMA_MATH: CUDNN_DEFAULT_MATH would still allow TF32 on sm_80+).
// bf16 (BF16Policy) runs with fp32 compute (CUDNN_DATA_BFLOAT16 tensors, compute
// CUDNN_DATA_FLOAT, tensor cores) where cuDNN can write the result itself: the forward
// without bias and backward-data, rounded once by cuDNN. Where it cannot, the pass is
// "widened": its bf16 operands are cast to fp32 in the workspace and an fp32 convolution
// runs with tensor cores allowed whatever the TF32 switch says (TF32 holds every bf16
// value exactly, so a GEMM-based algorithm multiplies exactly and sums in fp32, as the
// native bf16 path does):
//   - backward-weights, always, so dw accumulates into the fp32 gradient with beta = 1
//     and no bf16 rounding of the step's gradient (cuDNN's bf16 config writes bf16 dw);
//   - the forward with bias, so conv + bias is rounded to bf16 once, by our kernel;
//   - the forward or backward-data of a shape for which cuDNN's heuristic offers no
//     deterministic native bf16 algorithm (the fp32 result is then rounded once by a cast).
// Never TENSOR_OP_MATH_ALLOW_CONVERSION (a down-conversion to fp16).
//
// Bias: the forward adds it with our kernel (in place for fp32, from the fp32 widened
// result for bf16); db is our per-channel sum in double (channel_sum.h, conv2d.cu), in a fixed
// order, run before the cuDNN backward-weights in the same workspace.
#pragma once
#include <cuda_runtime.h>
#include <cudnn.h>

#include <compare>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "kernels/common/error.h"
#include "kernels/common/image_shapes.h"
#include "kernels/view.h"

namespace noeira::cuda {

// "CUDNN_STATUS_NOT_SUPPORTED (...)"
std::string error_text(cudnnStatus_t s);

// "conv 10x16x32x32 -> 32 channels, 3x3 kernel, stride 2, pad 1, bias, bf16"
std::string describe(const ConvShape& s, DType dtype);

class CudnnConv {
 public:
  // The most workspace one pass's algorithm may ask for; larger ones are skipped.
  static constexpr size_t kMaxPassWorkspace = size_t{1} << 30;
  // Workspace regions start at 256-byte boundaries; the planned size includes the slack
  // to align an unaligned workspace pointer.
  static constexpr size_t kAlign = 256;

  // The cuDNN handle, bound to `stream` for good. tf32: the backend's switch.
  static Result<std::unique_ptr<CudnnConv>> create(cudaStream_t stream, bool tf32);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // Descriptors and the three algorithms of (shape, dtype), once; the workspace bytes its
  // passes need. An Error for an invalid shape (sizes, int range), a dtype other than
  // fp32/bf16, or no deterministic algorithm.
  Result<size_t> plan(const ConvShape& s, DType dtype);
  // "fwd IMPLICIT_PRECOMP_GEMM (tensor-op math, 0 B), bwd-data ALGO_1 (...), bwd-weights
  // ALGO_1 (... , widened)" for tests and logs; empty when not planned.
  std::string describe_plan(const ConvShape& s, DType dtype) const;

  // The passes (contracts in kernels/op_list.inc). An Error when the shape was not planned, the
  // workspace is smaller than planned, operands do not match, or cuDNN fails.
  Status forward(const ConvShape& s, ConstView x, ConstView w, const float* bias, View y,
                 void* workspace, size_t workspace_bytes);
  Status backward_data(const ConvShape& s, ConstView dy, ConstView w, View dx, void* workspace,
                       size_t workspace_bytes);
  Status backward_weights(const ConvShape& s, ConstView x, ConstView dy, float* dw, float* db,
                          void* workspace, size_t workspace_bytes);

  struct Plan;  // cudnn_conv.cpp

 private:
  CudnnConv() = default;
  struct Key {
    ConvShape shape;
    DType dtype;
    // Ordered in the .cpp files (C++20) only; the op files that include this header
    // compile as C++17 and never compare keys (kernels/common/image_shapes.h).
#if __cplusplus >= 202002L
    auto operator<=>(const Key&) const = default;
#endif
  };
  // The plan of (s, dtype) and the 256-aligned workspace base, or an Error naming the pass.
  Result<const Plan*> find(const char* pass, const ConvShape& s, DType dtype, void* workspace,
                           size_t workspace_bytes) const;

  cudnnHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool tf32_ = true;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace noeira::cuda
