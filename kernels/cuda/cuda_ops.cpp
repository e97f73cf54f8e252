// CudaOps' set-up and teardown, its GEMM runner (shared by linear.cu and attention.cu) and
// its capabilities. The ops: one file per op in this folder (cuda_ops.h).
#include "kernels/cuda/cuda_ops.h"

#include <cstdlib>
#include <cstring>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/tf32_switch.h"

namespace noeira {

CudaOptions cuda_options_from_env() {
  CudaOptions o;
  o.tf32 = tf32_from_env();
  if (const char* v = std::getenv("NOEIRA_ATTENTION")) o.flash_attention = std::strcmp(v, "flash") == 0;
  if (const char* v = std::getenv("NOEIRA_GELU_EPILOGUE"))
    o.lt_gelu_bf16 = std::strcmp(v, "cublaslt") == 0;
  return o;
}

CudaOps::CudaOps(std::shared_ptr<cuda::StreamState> state)
    : state_(std::move(state)), stream_(state_->stream()) {}

Result<std::unique_ptr<CudaOps>> CudaOps::create(std::shared_ptr<cuda::StreamState> state,
                                                 const CudaOptions& options) {
  std::unique_ptr<CudaOps> ops(new CudaOps(std::move(state)));
  const size_t partial_bytes = sizeof(cuda::LossPartial) * cuda::kMaxLossBlocks;
  if (const cudaError_t e = cudaMalloc(&ops->loss_partials_, partial_bytes); e != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda::call_error("cudaMalloc", e,
                            "out of device memory for the loss scratch (" +
                                std::to_string(partial_bytes) +
                                " bytes); free the GPU (nvidia-smi) or use --target cpu");
  }
  const int sm_major = ops->state_->sm() / 10;
  Result<std::unique_ptr<cuda::GemmLt>> gemm = cuda::GemmLt::create(sm_major, options.tf32);
  if (!gemm) {
    (void)cudaGetLastError();
    return make_error("target gpu: " + gemm.error().message);
  }
  ops->gemm_ = std::move(gemm).value();
  ops->flash_attention_ = options.flash_attention;
  ops->lt_gelu_bf16_ = options.lt_gelu_bf16;
  return ops;
}

// Work still queued may use the scratch and the cuBLASLt workspace: end an abandoned
// capture, wait, then free.
CudaOps::~CudaOps() {
  state_->abandon_capture();
  cudaStreamSynchronize(stream_);
  gemm_.reset();
  conv_.reset();
  if (loss_partials_) cudaFree(loss_partials_);
}

bool CudaOps::tf32() const { return gemm_->tf32(); }

bool CudaOps::supports_bf16() const { return true; }

bool CudaOps::run_gemm(const cuda::GemmCall& call) {
  std::string error;
  switch (gemm_->run(call, stream_, &error)) {
    case cuda::GemmLt::Outcome::kDone:
      if (call.cd_type == CUDA_R_16BF) ++lt_counts_.bf16_direct;
      return true;
    case cuda::GemmLt::Outcome::kUnsupported:
      ++lt_counts_.refused;
      return false;
    case cuda::GemmLt::Outcome::kFailed: break;
  }
  fail(error);
  return true;  // reported; nothing to fall back to
}

}  // namespace noeira
