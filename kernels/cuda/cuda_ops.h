// The CUDA backend's ops: every op of kernels/ops.h (contracts there), enqueued on ONE
// stream that the backend owns, GEMMs through cuBLASLt (gemm_lt.h), convolutions through
// cuDNN (cudnn_conv.h), the rest through our kernels (cuda_kernels.h, image_kernels.h),
// whose launchers dispatch once on the views' dtype. Layouts are the interface's (NCHW,
// OIHW included). Nothing here allocates after create() except conv2d_plan (a planning
// call): the stream, the cuBLASLt handle and workspace, and the loss-reduction scratch
// are made once, up front; the cuDNN handle and each shape's descriptors when planned.
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
class CudnnConv;
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

  // cuda_gemm_ops.cpp: cuBLASLt; A/B fp32 (TF32 when on) or bf16 (CUDA_R_16BF, plain
  // fp32 accumulation whatever the TF32 switch says).
  void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
            ConstView A, int64_t lda, ConstView B, int64_t ldb, float beta, float* C,
            int64_t ldc) override;
  void linear_forward(ConstView x, ConstView W, const float* b, View y, View pre, float* acc,
                      int64_t M, int64_t N, int64_t K, Act act) override;
  void linear_backward_params(ConstView dz, ConstView x, float* dW, float* db, int64_t M,
                              int64_t N, int64_t K) override;

  // cuda_kernel_ops.cpp: our kernels (cuda_kernels.h).
  void bias_act(const float* acc, const float* bias, View y, View pre, int64_t M, int64_t N,
                Act act) override;
  void act_forward(ConstView x, View y, Act act) override;
  void act_backward(ConstView dy, ConstView pre, ConstView post, View dx, Act act) override;
  void add(ConstView a, ConstView b, View y) override;
  void cast(ConstView x, View y) override;
  void bias_grad(ConstView dy, float* db, int64_t M, int64_t N) override;
  void softmax_xent(ConstView logits, const int32_t* labels, int64_t B, int64_t C,
                    float label_smoothing, View dlogits, LossStats* stats, float* loss_history,
                    const StepCounters* counters) override;
  void mse(ConstView pred, const float* target, int64_t B, int64_t D, View dpred,
           LossStats* stats, float* loss_history, const StepCounters* counters) override;
  void adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamHyper& h,
            const StepCounters* counters) override;
  void sgd(float* p, const float* g, float* buf, int64_t n, const SgdHyper& h,
           const StepCounters* counters) override;
  void gather_rows(ConstView src, const int32_t* perm, int64_t rows, int64_t row_elems,
                   const StepCounters* counters, View dst) override;
  Result<size_t> shuffle_workspace_bytes(int64_t n) const override;
  void shuffle(uint64_t seed, uint32_t epoch, int64_t n, int32_t* perm,
               void* workspace) override;
  void batch_windows(const int32_t* corpus, int64_t n_tokens, uint64_t seed,
                     const StepCounters* counters, int64_t B, int64_t T, int64_t first_row,
                     int32_t* inputs, int32_t* targets) override;
  void advance(StepCounters* counters) override;
  bool host_memory() const override { return false; }
  bool supports_bf16() const override { return true; }

  // cuda_image_ops.cpp: convolutions through cuDNN (cudnn_conv.h: algorithms, math types,
  // the bf16 scheme), the other image ops through our kernels (image_kernels.h).
  Result<size_t> conv2d_plan(const ConvShape& s, DType dtype) override;
  void conv2d_forward(const ConvShape& s, ConstView x, ConstView w, const float* bias, View y,
                      void* workspace, size_t workspace_bytes) override;
  void conv2d_backward_data(const ConvShape& s, ConstView dy, ConstView w, View dx,
                            void* workspace, size_t workspace_bytes) override;
  void conv2d_backward_weights(const ConvShape& s, ConstView x, ConstView dy, float* dw,
                               float* db, void* workspace, size_t workspace_bytes) override;
  // The planned algorithms of a shape, for logs and tests; empty when not planned.
  std::string conv2d_plan_description(const ConvShape& s, DType dtype) const;
  void maxpool2d_forward(const PoolShape& s, ConstView x, View y, int32_t* argmax) override;
  void maxpool2d_backward(const PoolShape& s, ConstView dy, const int32_t* argmax,
                          View dx) override;
  void avgpool2d_forward(const PoolShape& s, ConstView x, View y) override;
  void avgpool2d_backward(const PoolShape& s, ConstView dy, View dx) override;
  size_t batchnorm_workspace_bytes(const NormShape& s) const override;
  void batchnorm_forward_train(const NormShape& s, ConstView x, const float* gamma,
                               const float* beta, const BatchNormHyper& h, View y,
                               float* save_mean, float* save_invstd, float* running_mean,
                               float* running_var, void* workspace) override;
  void batchnorm_forward_eval(const NormShape& s, ConstView x, const float* gamma,
                              const float* beta, const float* running_mean,
                              const float* running_var, const BatchNormHyper& h,
                              View y) override;
  void batchnorm_backward(const NormShape& s, ConstView dy, ConstView x, const float* gamma,
                          const float* save_mean, const float* save_invstd, View dx,
                          float* dgamma, float* dbeta, void* workspace) override;
  void shortcut_forward(const ShortcutShape& s, ConstView x, View y) override;
  void shortcut_backward(const ShortcutShape& s, ConstView dy, View dx) override;
  void dropout(ConstView x, View y, float p, uint64_t seed, uint32_t layer,
               const StepCounters* counters) override;
  void patchify(const PatchShape& s, ConstView x, View y) override;
  void unpatchify(const PatchShape& s, ConstView dy, View dx) override;
  void augment_crop_flip(const AugmentSpec& spec, const float* src, float* dst, uint64_t seed,
                         uint32_t epoch) override;

  // cuda_sequence_ops.cpp: the sequence ops (sequence_kernels.h: orders, workspaces).
  // Attention runs its per-head products as strided-batched cuBLASLt GEMMs over fp32
  // (B, nh, T, hd) copies of q, k, v in the workspace (bf16 storage is widened there, so
  // every product is an fp32 GEMM: TF32 when the switch is on, like gemm's fp32 path).
  void embedding_forward(const int32_t* ids, const float* wte, const float* wpe, View y,
                         int64_t rows, int64_t T, int64_t C) override;
  size_t embedding_workspace_bytes(int64_t rows, int64_t V) const override;
  void embedding_backward(const int32_t* ids, ConstView dy, float* dwte, float* dwpe,
                          int64_t rows, int64_t T, int64_t C, int64_t V,
                          void* workspace) override;
  void layernorm_forward(ConstView x, const float* gamma, const float* beta, View y, float* mean,
                         float* rstd, int64_t N, int64_t C, float eps) override;
  size_t layernorm_workspace_bytes(int64_t N, int64_t C) const override;
  void layernorm_backward(ConstView dy, ConstView x, const float* gamma, const float* mean,
                          const float* rstd, View dx, float* dgamma, float* dbeta, int64_t N,
                          int64_t C, void* workspace) override;
  void class_token_forward(ConstView x, const float* cls, const float* pos, View y, int64_t B,
                           int64_t N, int64_t C) override;
  void copy_token_rows(ConstView src, int64_t src_T, int64_t src_t0, View dst, int64_t dst_T,
                       int64_t dst_t0, int64_t count, int64_t B, int64_t C) override;
  // bf16: the fused flash kernels (kernels/cuda/flash_attention.h) keep the per-row
  // log-sum-exp, B * nh * T floats; fp32: the probabilities.
  int64_t attention_saved_floats(int64_t B, int64_t T, int64_t nh, DType dtype) const override;
  size_t attention_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh,
                                   DType dtype) const override;
  void attention_forward(ConstView qkv, View out, float* att, int64_t B, int64_t T, int64_t C,
                         int64_t nh, bool causal, void* workspace) override;
  void attention_backward(ConstView dout, ConstView qkv, const float* att, View dqkv, int64_t B,
                          int64_t T, int64_t C, int64_t nh, bool causal,
                          void* workspace) override;
  size_t clip_workspace_bytes(int64_t n_segments) const override;
  void clip_grad_norm(float* g, const int64_t* segments, int64_t n_segments, float max_norm,
                      float* norm, void* workspace) override;
  // cuda_dist_ops.cpp: a data-parallel rank's slice.
  void slice_mean_sumsq(float* g, int64_t lo, int64_t n, float ranks, const int64_t* segments,
                        int64_t n_segments, double* sumsq) override;
  void clip_slice(float* g, int64_t n, const double* sumsq, int64_t ranks, int64_t n_segments,
                  float max_norm, float* coef) override;

  // cuda_ops.cpp: set-up, workspaces, memory, copies, synchronisation, timers.
  // bias_grad's per-chunk partials (kernels/common/column_sum.h), from the caller's plan.
  size_t reduction_workspace_bytes() const override;
  Status bind_reduction_workspace(void* workspace, size_t bytes) override;
  // The bound buffer (null: unbound, bias_grad runs as one chunk); lets tests check that
  // a caller such as the DatasetTrainer really planned and bound it.
  const void* bound_reduction_workspace() const { return reduction_ws_; }
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
  class OpScope;  // names the running op in error messages; watches a capture (op_scope.h)
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
  std::unique_ptr<cuda::CudnnConv> conv_;      // made by the first conv2d_plan
  cuda::LossPartial* loss_partials_ = nullptr;  // (kMaxLossBlocks), device
  float* reduction_ws_ = nullptr;               // planned by the caller, bound, not owned
  size_t reduction_ws_bytes_ = 0;
  bool warned_unbound_ = false;                 // the one-chunk note is printed once

  const char* op_ = nullptr;      // the op being enqueued, for messages
  bool capturing_ = false;        // between begin_capture and end_capture
  std::string capture_error_;     // first failure seen while capturing
};

}  // namespace noeira
