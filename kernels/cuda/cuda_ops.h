// The CUDA backend's compute ops: every entry of kernels/op_list.inc (contracts there;
// declarations from kernels/op_overrides.inc), enqueued on the ONE stream it shares with
// CudaStream (stream_state.h). Each op (or small family of list entries) lives in
// kernels/cuda/<op>.cu, named as on the CPU, with its kernels and launchers; GEMMs go
// through cuBLASLt (gemm_lt.h), convolutions through cuDNN (cudnn_conv.h). Launchers
// dispatch once on the views' dtype. Layouts are the interface's (NCHW, OIHW included).
// Nothing here allocates after create() except conv2d_plan (a planning call): the
// cuBLASLt handle and workspace and the loss-reduction scratch are made once, up front;
// the cuDNN handle and each shape's descriptors when planned.
//
// Every op opens a cuda::OpScope (op_scope.h) naming itself, checks its shape (a bad one
// is a programming error: fail() stops the process, or fails the capture) and enqueues;
// check() turns a launch error into the same.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "kernels/cuda/op_scope.h"
#include "kernels/cuda/stream_state.h"
#include "kernels/ops.h"

namespace noeira {

namespace cuda {
class GemmLt;
struct GemmCall;
class CudnnConv;

// Per-block partial sums of a loss (losses.cu), reduced by a second, single-block kernel.
struct LossPartial {
  double loss;
  long long correct;
};
// The most blocks a loss kernel uses; CudaOps owns this many LossPartials.
inline constexpr int kMaxLossBlocks = 1024;

// CudaOps::shuffle_workspace_bytes without a device (tests): the sample limit is checked
// before any CUDA call, and cub's own size query failing is an Error too (shuffle.cu).
Result<size_t> shuffle_workspace_bytes(int64_t n);
}  // namespace cuda

struct CudaOptions {
  bool tf32 = true;  // fp32 GEMMs with TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)
  // bf16 attention through the fused flash-style kernels (CUDA cores, no T x T buffer) at
  // every T, rather than the tensor-core GEMM path up to kGemmAttentionMaxT (attention.cu).
  bool flash_attention = false;
  // A GELU into bf16 through cuBLASLt's GELU epilogue, written by the GEMM in one
  // rounding, rather than the GEMM into fp32 and our bias_act, where no derivative is kept.
  // No model takes it now: every GELU Linear keeps its derivative (nn/linear.h), which no
  // epilogue writes; kept for linear_forward callers without one. Not the CPU's bits (its
  // GELU is its own code); off until the [gpu] test's bf16 bound holds for it on the
  // machine (kernels/cuda/gemm_lt_choice.h).
  bool lt_gelu_bf16 = false;
};

// Defaults, with NOEIRA_TF32=0 turning TF32 off, NOEIRA_ATTENTION=flash choosing the
// flash kernels for bf16 attention and NOEIRA_GELU_EPILOGUE=cublaslt cuBLASLt's GELU for
// bf16 outputs (lt_gelu_bf16).
CudaOptions cuda_options_from_env();

class CudaOps final : public Ops {
 public:
  // Failures: an Error (out of memory, no cuBLASLt).
  static Result<std::unique_ptr<CudaOps>> create(std::shared_ptr<cuda::StreamState> state,
                                                 const CudaOptions& options);
  ~CudaOps() override;
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;

  bool tf32() const;
  // GEMM calls so far that wrote a bf16 destination straight from cuBLASLt, and calls
  // cuBLASLt refused (no algorithm for the epilogue or the bf16 D: run through the fp32
  // path instead), for tests and logs (kernels/cuda/gemm_lt_choice.h).
  struct LtCounts {
    int64_t bf16_direct = 0, refused = 0;
  };
  LtCounts lt_counts() const { return lt_counts_; }
  // The planned algorithms of a convolution shape, for logs and tests; empty when not
  // planned (conv2d.cu).
  std::string conv2d_plan_description(const ConvShape& s, DType dtype) const;

#include "kernels/op_overrides.inc"

 private:
  using OpScope = cuda::OpScope;
  explicit CudaOps(std::shared_ptr<cuda::StreamState> state);

  void check(cudaError_t e, const char* call) { state_->check(e, call); }
  void fail(const std::string& what) { state_->fail(what); }
  // The partial buffer for a bias_grad of M rows; null (one chunk) when unbound.
  float* bias_grad_partials(int64_t M);
  // Runs a GEMM; false when cuBLASLt has no algorithm for the requested epilogue.
  bool run_gemm(const cuda::GemmCall& call);
  // linear_backward_data's product dx = dz W, without dact's multiply (linear.cu).
  void linear_product_into_dx(ConstView dz, ConstView W, View dx, float* acc, int64_t M,
                              int64_t N, int64_t K);

  std::shared_ptr<cuda::StreamState> state_;
  cudaStream_t stream_ = nullptr;               // state_'s, for the launchers
  std::unique_ptr<cuda::GemmLt> gemm_;
  std::unique_ptr<cuda::CudnnConv> conv_;       // made by the first conv2d_plan
  cuda::LossPartial* loss_partials_ = nullptr;  // (kMaxLossBlocks), device
  bool warned_unbound_ = false;                 // the one-chunk note is printed once
  bool flash_attention_ = false;                // CudaOptions::flash_attention
  bool lt_gelu_bf16_ = false;                   // CudaOptions::lt_gelu_bf16
  LtCounts lt_counts_;
  // Whether bf16 attention over T positions takes the flash kernels (attention.cu).
  bool bf16_attention_is_flash(int64_t T) const;
  // bf16 attention on the GEMM path, bf16 tensor cores (attention_bf16.cu): called by
  // attention_forward / attention_backward once the shape and workspace are checked.
  void attention_forward_bf16(ConstView qkv, View out, float* att, int64_t B, int64_t T,
                              int64_t C, int64_t nh, float scale, bool causal, void* workspace);
  void attention_backward_bf16(ConstView dout, ConstView qkv, const float* att, View dqkv,
                               int64_t B, int64_t T, int64_t C, int64_t nh, float scale,
                               bool causal, void* workspace);
};

}  // namespace noeira
