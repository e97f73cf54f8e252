// The CPU backend: OpenBLAS for GEMM, plain loops for the rest. It is the reference
// the CUDA backend is tested against.
//
// Determinism across thread counts (DESIGN.md rule 3): OpenBLAS's own threading
// changes sgemm's results with the thread count, so OpenBLAS runs single-threaded and
// we split every GEMM into fixed 64-row slabs that OpenMP hands to threads. A slab's
// result does not depend on which thread computes it, so 1 and N threads agree bit for
// bit. Reductions (bias gradients, losses) run in a fixed order for the same reason.
#pragma once
#include <memory>

#include "kernels/ops.h"

namespace noeira {

class Bf16Gemm;

class CpuOps final : public Ops {
 public:
  explicit CpuOps(int threads);
  ~CpuOps() override;
  int threads() const { return threads_; }

  void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
            const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
            int64_t ldc) override;
  void bias_act(float* y, float* pre, const float* bias, int64_t M, int64_t N,
                Act act) override;
  void act_forward(const float* x, float* y, int64_t n, Act act) override;
  void act_backward(const float* dy, const float* pre, const float* post, float* dx,
                    int64_t n, Act act) override;
  void bias_grad(const float* dy, float* db, int64_t M, int64_t N) override;
  void add(const float* a, const float* b, float* y, int64_t n) override;
  void softmax_xent(const float* logits, const int32_t* labels, int64_t B, int64_t C,
                    float* dlogits, LossStats* stats, float* loss_history,
                    const StepCounters* counters) override;
  void mse(const float* pred, const float* target, int64_t B, int64_t D, float* dpred,
           LossStats* stats, float* loss_history, const StepCounters* counters) override;
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
  void advance(StepCounters* counters) override;
  void fill_zero(void* p, size_t bytes) override;
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void synchronize() override {}

 private:
  int threads_;
  std::unique_ptr<Bf16Gemm> bf16_gemm_;
};

// Rows of C per GEMM slab: fixed, so results never depend on the thread count.
inline constexpr int64_t kCpuGemmSlabRows = 64;

}  // namespace noeira
