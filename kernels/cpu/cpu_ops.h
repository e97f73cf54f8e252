// The CPU backend: oneDNN for GEMMs (onednn_matmul.h fp32, bf16_gemm.h bf16) and
// convolutions (onednn_conv.h), loops for the rest. It is the reference the CUDA backend
// is tested against. Contracts are kernels/ops.h's; each op dispatches once on its views'
// dtype (kernels/dispatch.h) to a loop templated on the storage type. Layouts are the
// interface's; only the convolutions use oneDNN's blocked layouts inside (through the
// workspace).
//
//   cpu_ops.cpp          construction, GEMMs, data (gather, shuffle), memory, counters
//   cpu_elementwise.cpp  bias_act, activations, add, cast
//   cpu_losses.cpp       bias_grad, softmax_xent, mse
//   cpu_optimizers.cpp   adam, sgd
//   cpu_conv.cpp         conv2d plan and passes (OnednnConv)
//   cpu_pool.cpp         max and average pooling
//   cpu_norm.cpp         BatchNorm2d
//   cpu_image_misc.cpp   shortcut, dropout, augment_crop_flip
//   cpu_sequence.cpp     embedding, LayerNorm, clip_grad_norm
//   cpu_dist.cpp         a data-parallel rank's slice: mean, sums of squares, clipping
//   cpu_attention.cpp    self-attention (per (batch, head): oneDNN GEMMs + fused softmax)
//   cpu_tokens.cpp       patchify, the class token, token-row copies (ViT)
//   cpu_batch_windows.cpp  batch_windows (the autoregressive batch, rows of the corpus)
//
// Determinism across thread counts (DESIGN.md rule 3): oneDNN's own threading changes
// its results with the thread count, so every oneDNN call runs single-threaded inside
// fixed slabs (GEMMs: 64 rows of C; convolutions: 8 images) that OpenMP hands to
// threads. A slab's result does not depend on which thread computes it, so 1 and N
// threads agree bit for bit. The loops compute each output element by itself, or reduce
// in a fixed order (bias gradients, losses, BatchNorm's channel sums) for the same reason.
#pragma once
#include <memory>

#include "kernels/ops.h"

namespace noeira {

class Bf16Gemm;
class OnednnConv;
class OnednnGemm;

class CpuOps final : public Ops {
 public:
  explicit CpuOps(int threads);
  ~CpuOps() override;
  int threads() const { return threads_; }

  void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
            ConstView A, int64_t lda, ConstView B, int64_t ldb, float beta, float* C,
            int64_t ldc) override;
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

  Result<size_t> conv2d_plan(const ConvShape& s, DType dtype) override;
  void conv2d_forward(const ConvShape& s, ConstView x, ConstView w, const float* bias, View y,
                      void* workspace, size_t workspace_bytes) override;
  void conv2d_backward_data(const ConvShape& s, ConstView dy, ConstView w, View dx,
                            void* workspace, size_t workspace_bytes) override;
  void conv2d_backward_weights(const ConvShape& s, ConstView x, ConstView dy, float* dw,
                               float* db, void* workspace, size_t workspace_bytes) override;
  void maxpool2d_forward(const PoolShape& s, ConstView x, View y, int32_t* argmax) override;
  void maxpool2d_backward(const PoolShape& s, ConstView dy, const int32_t* argmax,
                          View dx) override;
  void avgpool2d_forward(const PoolShape& s, ConstView x, View y) override;
  void avgpool2d_backward(const PoolShape& s, ConstView dy, View dx) override;
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
  void augment_crop_flip(const AugmentSpec& spec, const float* src, float* dst, uint64_t seed,
                         uint32_t epoch) override;

  void batch_windows(const int32_t* corpus, int64_t n_tokens, uint64_t seed,
                     const StepCounters* counters, int64_t B, int64_t T, int64_t first_row,
                     int32_t* inputs, int32_t* targets) override;
  void embedding_forward(const int32_t* ids, const float* wte, const float* wpe, View y,
                         int64_t rows, int64_t T, int64_t C) override;
  size_t embedding_workspace_bytes(int64_t rows, int64_t V) const override;
  void embedding_backward(const int32_t* ids, ConstView dy, float* dwte, float* dwpe,
                          int64_t rows, int64_t T, int64_t C, int64_t V,
                          void* workspace) override;
  void layernorm_forward(ConstView x, const float* gamma, const float* beta, View y,
                         float* mean, float* rstd, int64_t N, int64_t C, float eps) override;
  void layernorm_backward(ConstView dy, ConstView x, const float* gamma, const float* mean,
                          const float* rstd, View dx, float* dgamma, float* dbeta, int64_t N,
                          int64_t C, void* workspace) override;
  // oneDNN GEMM primitives are created per block of 64 query rows (about 0.3 MB each
  // block): 65,536 positions plan 1,024 blocks.
  int64_t attention_max_context() const override { return int64_t{1} << 16; }
  size_t attention_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh,
                                   DType dtype) const override;
  void attention_forward(ConstView qkv, View out, float* att, int64_t B, int64_t T, int64_t C,
                         int64_t nh, bool causal, void* workspace) override;
  void attention_backward(ConstView dout, ConstView qkv, const float* att, View dqkv,
                          int64_t B, int64_t T, int64_t C, int64_t nh, bool causal,
                          void* workspace) override;
  void patchify(const PatchShape& s, ConstView x, View y) override;
  void unpatchify(const PatchShape& s, ConstView dy, View dx) override;
  void class_token_forward(ConstView x, const float* cls, const float* pos, View y, int64_t B,
                           int64_t N, int64_t C) override;
  void copy_token_rows(ConstView src, int64_t src_T, int64_t src_t0, View dst, int64_t dst_T,
                       int64_t dst_t0, int64_t count, int64_t B, int64_t C) override;
  size_t clip_workspace_bytes(int64_t n_segments) const override;
  void clip_grad_norm(float* g, const int64_t* segments, int64_t n_segments, float max_norm,
                      float* norm, void* workspace) override;
  void slice_mean_sumsq(float* g, int64_t lo, int64_t n, float ranks, const int64_t* segments,
                        int64_t n_segments, double* sumsq) override;
  void clip_slice(float* g, int64_t n, const double* sumsq, int64_t ranks, int64_t n_segments,
                  float max_norm, float* coef) override;

  void gather_rows(ConstView src, const int32_t* perm, int64_t rows, int64_t row_elems,
                   const StepCounters* counters, View dst) override;
  Result<size_t> shuffle_workspace_bytes(int64_t n) const override;
  void shuffle(uint64_t seed, uint32_t epoch, int64_t n, int32_t* perm,
               void* workspace) override;
  bool host_memory() const override { return true; }
  bool supports_bf16() const override;  // oneDNN has a bf16 matmul for this CPU (Bf16Gemm)
  void advance(StepCounters* counters) override;
  void fill_zero(void* p, size_t bytes) override;
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void synchronize() override {}

 private:
  int threads_;
  std::unique_ptr<OnednnGemm> gemm_;  // fp32: its own 64-row slabs
  std::unique_ptr<Bf16Gemm> bf16_gemm_;
  std::unique_ptr<OnednnConv> conv_;  // every planned shape, fp32 and bf16
};

// Rows of C per bf16 GEMM slab (fp32: kOnednnGemmSlabRows, the same 64): fixed, so
// results never depend on the thread count.
inline constexpr int64_t kCpuGemmSlabRows = 64;

// A oneDNN call that failed inside an op (an unplanned shape, a short workspace): the
// contract says the op stops the process; prints "noeira: internal error: <op>: ...".
[[noreturn]] void cpu_op_failed(const char* op, const Error& e);

}  // namespace noeira
