// GEMMs through cuBLASLt, with row-major semantics (Ops::gemm, the linear layer's passes;
// fp32 or bf16 A/B) and fused epilogues. fp32 A/B run in CUBLAS_COMPUTE_32F or, with TF32
// on, _FAST_TF32; bf16 A/B (GemmCall::ab_type CUDA_R_16BF, BF16Policy) always in
// CUBLAS_COMPUTE_32F: fp32 accumulation whatever the TF32 switch says. The destination
// C/D is fp32, or bf16 (GemmCall::cd_type CUDA_R_16BF, bf16 A/B only): cuBLASLt then adds
// the fp32 bias and applies the activation in fp32 and rounds once, on the store. Which
// types, epilogues and alignments take that path, and the cublasLt.h facts behind the
// rules: gemm_lt_choice.h (pure functions, unit-tested without CUDA).
//
// cuBLASLt is column-major. A row-major C(M,N) is the column-major C^T(N,M) with the same
// leading dimension, and C^T = op(B)^T op(A)^T, so every call swaps the operands: cuBLASLt's
// A is our B, its B is our A, and its (m, n, k) is our (N, M, K). A bias over our N
// columns is then cuBLASLt's per-row bias, which is what its BIAS epilogues add.
//
// Determinism and capture (DESIGN.md rule 3): the algorithm of each shape key (shapes,
// transposes, leading dimensions, types, epilogue, pointer alignments) is chosen once by
// cublasLtMatmulAlgoGetHeuristic and cached with its descriptors, so eager and captured
// runs execute the same algorithm. Split-K "in place" reductions are excluded, and for a
// bf16 D those reduced in the output type too (bf16 partial sums); the other schemes
// reduce in a fixed order in our workspace. The workspace is allocated once at creation
// and passed to every call, so no GEMM allocates (a capture would abort).
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kernels/common/error.h"
#include "kernels/cuda/gemm_lt_choice.h"

namespace noeira::cuda {

// One matmul, row-major: C(M,N) = epilogue(alpha op(A)(M,K) op(B)(K,N) + beta C).
// A and B hold ab_type elements (fp32, or bf16 bits); C holds cd_type elements (fp32, or
// bf16 bits with bf16 A/B: gemm_lt_choice.h), and so does aux.
struct GemmCall {
  bool trans_a = false, trans_b = false;
  int64_t M = 0, N = 0, K = 0;
  float alpha = 1.0f;
  const void* A = nullptr;
  int64_t lda = 0;
  const void* B = nullptr;
  int64_t ldb = 0;
  float beta = 0.0f;
  void* C = nullptr;
  int64_t ldc = 0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const float* bias = nullptr;  // (N) fp32, BIAS epilogues, whatever cd_type is
  void* aux = nullptr;          // (M, N) row stride N: GELU input, GELU_AUX epilogues
  cudaDataType_t ab_type = CUDA_R_32F;  // CUDA_R_32F or CUDA_R_16BF
  cudaDataType_t cd_type = CUDA_R_32F;  // CUDA_R_32F, or CUDA_R_16BF with bf16 A/B
  // Strided batch (attention's per-head products): `batch` independent matmuls, the i-th
  // on A + i stride_a, B + i stride_b, C + i stride_c (strides in elements). batch 1
  // ignores the strides (and leaves the layouts as they were).
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

// "GELU_AUX_BIAS", ...: the epilogue's name for messages.
const char* epilogue_name(cublasLtEpilogue_t e);
// cuBLASLt's epilogue for ours (gemm_lt_choice.h), and back: false for one we do not use.
cublasLtEpilogue_t cublas_epilogue(LtEpilogue e);
bool lt_epilogue_of(cublasLtEpilogue_t e, LtEpilogue* out);
// "bf16 gemm MxNxK (trans_a ..., epilogue NAME (n))", and ", D bf16" for a bf16 D.
std::string describe(const GemmCall& c);
// The stderr line GemmLt prints, once per shape key, when the heuristic refuses a fused
// epilogue or a bf16 D (status, or found == 0) and the caller falls back to its fp32
// path: the GEMM into fp32 and our kernel.
std::string epilogue_fallback_note(const GemmCall& c, cublasStatus_t status, int found);
// The same when the heuristic agreed but the first cublasLtMatmul of the plan refused
// the combination (NOT_SUPPORTED, INVALID_VALUE): cublasLt.h does not list an fp32 bias
// with a bf16 D (gemm_lt_choice.h), so a library may say so only here.
std::string matmul_refusal_note(const GemmCall& c, cublasStatus_t status);

class GemmLt {
 public:
  // 32 MiB of workspace on sm_90 and newer, 4 MiB before (what cuBLAS itself uses).
  static size_t workspace_bytes_for(int sm_major) { return (sm_major >= 9 ? 32u : 4u) << 20; }

  static Result<std::unique_ptr<GemmLt>> create(int sm_major, bool tf32);
  GemmLt(const GemmLt&) = delete;
  GemmLt& operator=(const GemmLt&) = delete;
  ~GemmLt();

  enum class Outcome { kDone, kUnsupported, kFailed };
  // Enqueues the matmul on `stream`. kUnsupported: cuBLASLt has no algorithm for this
  // epilogue or this bf16 D, or gemm_lt_choice.h's rules say no (the caller falls back
  // to its fp32 GEMM + our kernel; decided once per key, at the latest on the key's first
  // matmul, which the trainers run eagerly before any capture). kFailed: `error` says
  // which call failed and why.
  Outcome run(const GemmCall& call, cudaStream_t stream, std::string* error);

  bool tf32() const { return tf32_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  size_t cached_plans() const { return plans_.size(); }

 private:
  GemmLt() = default;

  struct Key {
    bool trans_a, trans_b;
    int64_t M, N, K, lda, ldb, ldc;
    uint32_t epilogue;
    uint32_t ab_type, cd_type;
    uint32_t align_a, align_b, align_c, align_bias, align_aux;
    int64_t batch, stride_a, stride_b, stride_c;
    // Ordered in the .cpp files (C++20) only; the op files that include this header
    // compile as C++17 and never compare keys (kernels/common/image_shapes.h).
#if __cplusplus >= 202002L
    auto operator<=>(const Key&) const = default;
#endif
  };
  struct Plan {
    bool supported = false;
    // A plan whose combination cublasLt.h does not promise (an epilogue, a bf16 D): its
    // first matmul may still refuse it, and until one has run, a refusal means kUnsupported.
    bool may_refuse = false, ran = false;
    bool typed_bias = false;  // set CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE (not the default)
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t layout_a = nullptr, layout_b = nullptr, layout_c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    ~Plan();
  };
  // Builds descriptors and asks the heuristic once; kFailed only on API errors.
  Outcome make_plan(const Key& key, const GemmCall& call, Plan& plan, std::string* error);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  bool tf32_ = true;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace noeira::cuda
