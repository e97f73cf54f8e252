// bf16 x bf16 -> fp32 GEMM on the CPU through oneDNN's matmul (AVX512-BF16 where the
// CPU has it), as torch's CPU autocast runs it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/common/bf16.h"

namespace noeira {

class Bf16Gemm {
 public:
  // `threads`: the OpenMP team its callers run in (run() keeps per-thread state).
  explicit Bf16Gemm(int threads);
  ~Bf16Gemm();
  // "" when oneDNN has a bf16 matmul for this CPU (checked once: a descriptor for a 1x1x1
  // product), else why not. oneDNN 2.6 has none below avx512_core (e.g. an AVX2 CPU, or
  // ONEDNN_MAX_CPU_ISA=avx2), and run() would throw there.
  static const std::string& unavailable_reason();
  // Row-major C(M,N) = alpha op(A)(M,K) op(B)(K,N) + beta C, single-threaded on the
  // calling OpenMP thread (below `threads`): the caller parallelises over fixed row slabs,
  // as for the fp32 GEMM. One primitive
  // per shape, created on first use and cached (like cuBLASLt's algorithm choice).
  void run(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const bf16_t* A, int64_t lda, const bf16_t* B, int64_t ldb, float beta, float* C,
           int64_t ldc);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace noeira
