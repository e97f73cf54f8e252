// The CPU backend's compute ops: oneDNN for GEMMs (onednn_matmul.h fp32, bf16_gemm.h bf16)
// and convolutions (onednn_conv.h), loops for the rest. It is the reference the CUDA
// backend is tested against. Contracts are kernels/op_list.inc's, and so are the
// declarations (kernels/op_overrides.inc). Each op (or small family of list entries,
// such as layernorm's forward, backward and workspace size) lives in the file named after
// it, kernels/cpu/<op>.cpp, as on CUDA, and dispatches once on its views' dtype
// (kernels/dispatch.h) to a loop templated on the storage type. Layouts are the
// interface's; only the convolutions use other layouts inside (oneDNN's nChw16c or nhwc,
// through the workspace), and the weight gradients of widening layers a transposed dW
// there (linear.cpp). Copies and the rest of the stream: cpu_stream.h.
//
// Determinism across thread counts (DESIGN.md rule 3): oneDNN's own threading changes
// its results with the thread count, so every oneDNN call runs single-threaded inside
// fixed slabs (GEMMs: rows of C, 64 or for tall fp32 products about 256, columns for fp32
// products of a small batch; convolutions: 8 or more images; each a function of the
// shape) that OpenMP hands to threads. A slab's result does not depend on which thread
// computes it, so 1 and N threads agree bit for bit. The loops compute each output element
// by itself, or reduce in a fixed order (bias gradients, losses, BatchNorm's channel sums)
// for the same reason.
#pragma once
#include <memory>

#include "kernels/cpu/onednn_matmul.h"
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

#include "kernels/op_overrides.inc"

 private:
  // gemm, with `after(m0, rows)` called on the slab's thread once each slab of C's rows
  // is computed (null: nothing); where fp32 C is cut by columns, on row slabs afterwards.
  void gemm_slabs(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  ConstView A, int64_t lda, ConstView B, int64_t ldb, float beta, float* C,
                  int64_t ldc, const SlabEpilogue* after);

  int threads_;
  std::unique_ptr<OnednnGemm> gemm_;  // fp32: its own slabs (onednn_matmul.h)
  std::unique_ptr<Bf16Gemm> bf16_gemm_;
  std::unique_ptr<OnednnConv> conv_;  // every planned shape, fp32 and bf16
};

// Rows of C per bf16 GEMM slab (fp32: onednn_gemm_slab_rows): fixed, so results never
// depend on the thread count.
inline constexpr int64_t kCpuGemmSlabRows = 64;

// Adds the rows of dy(rows, N) (fp32 or bf16) to sums(N) in fp32, row by row in order,
// each column by one thread: bias_grad's sums, a run of rows at a time (zeroed sums, every
// row of dy in runs, then db += sums give bias_grad's bits).
void add_column_sums(int threads, ConstView dy, int64_t rows, int64_t N, float* sums);

// bias_act's math on the calling thread alone, for `rows` rows of N (Out = float or
// bf16_t; dact null when not kept): linear_forward's epilogue on each GEMM slab.
template <class Out>
void bias_act_rows(const float* acc, const float* bias, Out* y, float* dact, int64_t rows,
                   int64_t N, Act act);

// act_backward_saved's math on the calling thread alone, for n elements of an fp32 product
// rounded to T as linear_backward_data stores it (product may be dx's own memory when T is
// float): linear_backward_data's dact epilogue on each GEMM slab.
template <class T>
void act_backward_saved_rows(const float* product, const float* dact, T* dx, int64_t n);

// A oneDNN call that failed inside an op (an unplanned shape, a short workspace): the
// contract says the op stops the process; prints "noeira: internal error: <op>: ...".
[[noreturn]] void cpu_op_failed(const char* op, const Error& e);

}  // namespace noeira
