// The CUDA backend's ops: every op of kernels/ops.h, enqueued on ONE stream that the
// backend owns, GEMMs through cuBLASLt (gemm_lt.h), the rest through our kernels
// (cuda_kernels.h). Nothing here allocates after create(): the stream, the cuBLASLt
// handle and workspace, and the loss-reduction scratch are made once, up front.
//
// Failures: create() returns an Error (no device, no kernel image for this GPU, out of
// memory). Ops return void, so an unexpected device error inside one stops the process
// with a line naming the op, the call and a fix — except while a graph is being
// captured, where the first failure is kept and end_capture() returns it as an Error.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/ops.h"

namespace noeira {

namespace cuda {
class GemmLt;
struct GemmCall;
}  // namespace cuda

struct CudaOptions {
  bool tf32 = true;  // fp32 GEMMs with TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)
};

// Defaults, with NOEIRA_TF32=0 turning TF32 off.
CudaOptions cuda_options_from_env();

class CudaOps final : public Ops {
 public:
  static Result<std::unique_ptr<CudaOps>> create(const CudaOptions& options);
  ~CudaOps() override;
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;

  cudaStream_t stream() const { return stream_; }
  bool tf32() const;
  int device() const { return device_; }
  const std::string& device_name() const { return device_name_; }
  int sm() const { return sm_; }  // e.g. 90

  void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
            const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
            int64_t ldc) override;
  void linear_forward(const float* x, const float* W, const float* b, float* y, float* pre,
                      int64_t M, int64_t N, int64_t K, Act act) override;
  void linear_backward_params(const float* dz, const float* x, float* dW, float* db, int64_t M,
                              int64_t N, int64_t K) override;
  void bias_act(float* y, float* pre, const float* bias, int64_t M, int64_t N,
                Act act) override;
  void act_forward(const float* x, float* y, int64_t n, Act act) override;
  void act_backward(const float* dy, const float* pre, const float* post, float* dx, int64_t n,
                    Act act) override;
  void bias_grad(const float* dy, float* db, int64_t M, int64_t N) override;
  void add(const float* a, const float* b, float* y, int64_t n) override;
  void softmax_xent(const float* logits, const int32_t* labels, int64_t B, int64_t C,
                    float* dlogits, LossStats* stats, float* loss_history,
                    const StepCounters* counters) override;
  void mse(const float* pred, const float* target, int64_t B, int64_t D, float* dpred,
           LossStats* stats, float* loss_history, const StepCounters* counters) override;
  // bf16 autocast (BF16Policy): the CPU's semantics (kernels/cpu/cpu_ops.cpp), fp32 math,
  // rounding by kernels/common/bf16.h; gemm_bf16 through cuBLASLt (bf16 A/B, fp32 C).
  bool supports_bf16() const override { return true; }
  void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const bf16_t* A, int64_t lda, const bf16_t* B, int64_t ldb, float beta,
                 float* C, int64_t ldc) override;
  void cast_to_bf16(const float* x, bf16_t* y, int64_t n) override;
  void cast_to_f32(const bf16_t* x, float* y, int64_t n) override;
  void bias_act_bf16(const float* acc, const float* bias, bf16_t* y, bf16_t* pre, int64_t M,
                     int64_t N, Act act) override;
  void act_forward_bf16(const bf16_t* x, bf16_t* y, int64_t n, Act act) override;
  void act_backward_bf16(const bf16_t* dy, const bf16_t* pre, const bf16_t* post, bf16_t* dx,
                         int64_t n, Act act) override;
  void bias_grad_bf16(const bf16_t* dy, float* db, int64_t M, int64_t N) override;
  void add_bf16(const bf16_t* a, const bf16_t* b, bf16_t* y, int64_t n) override;
  void softmax_xent_bf16(const bf16_t* logits, const int32_t* labels, int64_t B, int64_t C,
                         bf16_t* dlogits, LossStats* stats, float* loss_history,
                         const StepCounters* counters) override;
  void mse_bf16(const bf16_t* pred, const float* target, int64_t B, int64_t D, bf16_t* dpred,
                LossStats* stats, float* loss_history, const StepCounters* counters) override;
  void gather_rows_bf16(const float* src, const int32_t* perm, int64_t rows, int64_t row_elems,
                        const StepCounters* counters, bf16_t* dst) override;
  void adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamHyper& h,
            const StepCounters* counters) override;
  void sgd(float* p, const float* g, float* buf, int64_t n, const SgdHyper& h) override;
  void gather_rows(const float* src, const int32_t* perm, int64_t rows, int64_t row_elems,
                   const StepCounters* counters, float* dst) override;
  void gather_labels(const int32_t* src, const int32_t* perm, int64_t rows,
                     const StepCounters* counters, int32_t* dst) override;
  Result<size_t> shuffle_workspace_bytes(int64_t n) const override;
  void shuffle(uint64_t seed, uint32_t epoch, int64_t n, int32_t* perm,
               void* workspace) override;
  // bias_grad's per-chunk partials (kernels/common/column_sum.h), from the caller's plan.
  size_t reduction_workspace_bytes() const override;
  Status bind_reduction_workspace(void* workspace, size_t bytes) override;
  // The bound buffer (null: unbound, bias_grad runs as one chunk); lets tests check that
  // a caller such as the Trainer really planned and bound it.
  const void* bound_reduction_workspace() const { return reduction_ws_; }
  void advance(StepCounters* counters) override;
  void fill_zero(void* p, size_t bytes) override;
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void synchronize() override;

  // graph.cpp
  bool supports_graphs() const override { return true; }
  Status begin_capture() override;
  Result<std::unique_ptr<StepGraph>> end_capture() override;

  std::unique_ptr<DeviceStepTimer> make_device_timer(DeviceTimerKind kind,
                                                     std::string* why) override;

 private:
  class OpScope;  // names the running op in error messages; watches a capture
  CudaOps() = default;

  // Stops the process (or, while capturing, records the first failure) when e != success.
  void check(cudaError_t e, const char* call);
  void fail(const std::string& what);
  // True (and the capture is marked failed) when a graph is being captured: for ops that
  // must wait for the host or the device, which a graph cannot record.
  bool refuse_while_capturing(const std::string& why);
  // The partial buffer for a bias_grad of M rows; null (one chunk) when unbound.
  float* bias_grad_partials(int64_t M);
  // Runs a GEMM; false when cuBLASLt has no algorithm for the requested epilogue.
  bool run_gemm(const cuda::GemmCall& call);

  int device_ = 0;
  int sm_ = 0;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cuda::GemmLt> gemm_;
  cuda::LossPartial* loss_partials_ = nullptr;  // (kMaxLossBlocks), device
  float* reduction_ws_ = nullptr;               // planned by the caller, bound, not owned
  size_t reduction_ws_bytes_ = 0;
  bool warned_unbound_ = false;                 // the one-chunk note is printed once

  const char* op_ = nullptr;      // the op being enqueued, for messages
  bool capturing_ = false;        // between begin_capture and end_capture
  std::string capture_error_;     // first failure seen while capturing
};

}  // namespace noeira
