// The CPU backend: OpenBLAS for fp32 GEMMs, oneDNN for bf16 ones (bf16_gemm.h), loops for
// the rest. It is the reference the CUDA backend is tested against. Contracts are
// kernels/ops.h's; each op dispatches once on its views' dtype (kernels/dispatch.h) to a
// loop templated on the storage type. Layouts are the interface's, nothing else inside.
//
//   cpu_ops.cpp          construction, GEMMs, data (gather, shuffle), memory, counters
//   cpu_elementwise.cpp  bias_act, activations, add, cast
//   cpu_losses.cpp       bias_grad, softmax_xent, mse
//   cpu_optimizers.cpp   adam, sgd
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
            ConstView A, int64_t lda, ConstView B, int64_t ldb, float beta, float* C,
            int64_t ldc) override;
  void bias_act(const float* acc, const float* bias, View y, View pre, int64_t M, int64_t N,
                Act act) override;
  void act_forward(ConstView x, View y, Act act) override;
  void act_backward(ConstView dy, ConstView pre, ConstView post, View dx, Act act) override;
  void add(ConstView a, ConstView b, View y) override;
  void cast(ConstView x, View y) override;
  void bias_grad(ConstView dy, float* db, int64_t M, int64_t N) override;
  void softmax_xent(ConstView logits, const int32_t* labels, int64_t B, int64_t C, View dlogits,
                    LossStats* stats, float* loss_history, const StepCounters* counters) override;
  void mse(ConstView pred, const float* target, int64_t B, int64_t D, View dpred,
           LossStats* stats, float* loss_history, const StepCounters* counters) override;
  void adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamHyper& h,
            const StepCounters* counters) override;
  void sgd(float* p, const float* g, float* buf, int64_t n, const SgdHyper& h) override;
  void gather_rows(ConstView src, const int32_t* perm, int64_t rows, int64_t row_elems,
                   const StepCounters* counters, View dst) override;
  Result<size_t> shuffle_workspace_bytes(int64_t n) const override;
  void shuffle(uint64_t seed, uint32_t epoch, int64_t n, int32_t* perm,
               void* workspace) override;
  bool supports_bf16() const override { return true; }
  void advance(StepCounters* counters) override;
  void fill_zero(void* p, size_t bytes) override;
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void synchronize() override {}

 private:
  // One slab of rows of C, single-threaded: OpenBLAS (fp32) or oneDNN (bf16).
  void gemm_slab(bool trans_a, bool trans_b, int64_t rows, int64_t N, int64_t K, float alpha,
                 const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                 int64_t ldc);
  void gemm_slab(bool trans_a, bool trans_b, int64_t rows, int64_t N, int64_t K, float alpha,
                 const bf16_t* A, int64_t lda, const bf16_t* B, int64_t ldb, float beta,
                 float* C, int64_t ldc);

  int threads_;
  std::unique_ptr<Bf16Gemm> bf16_gemm_;
};

// Rows of C per GEMM slab: fixed, so results never depend on the thread count.
inline constexpr int64_t kCpuGemmSlabRows = 64;

}  // namespace noeira
