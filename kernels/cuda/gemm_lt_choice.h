// The types and the epilogue of one cuBLASLt matmul, as pure functions of the request:
// linear.cu asks choose_lt_types before it calls, gemm_lt.cpp builds its descriptors from
// the answer. No CUDA header here (gemm_lt.cpp maps the enums onto cuBLASLt's), so the unit
// tests check every rule in a build without CUDA (tests/unit/test_gemm_lt_choice.cpp).
// Included by C++17 .cu files: C++17 only.
//
// What the destination D (and C, the same buffer) holds:
//  - fp32 (every fp32 GEMM; bf16 A/B into fp32: the gemm op, the parameter gradients):
//    as before, fp32 C/D, compute CUBLAS_COMPUTE_32F (_FAST_TF32 for fp32 A/B with the
//    TF32 switch on), any epilogue, the bias fp32 (cuBLASLt's default for fp32 D).
//  - bf16 (BF16Policy's activations: Linear's y, TiedLmHead's logits, the dx of
//    both): bf16 A/B, compute CUBLAS_COMPUTE_32F, C/D CUDA_R_16BF. cuBLASLt accumulates
//    in fp32, adds the fp32 bias in fp32, applies the activation and rounds once, to
//    nearest even, on the store: the ops' contract (one rounding of the fp32 result),
//    with none of the fp32 product's trip through memory and no second kernel.
//    Where a rule below says no, the caller keeps its fp32 path: the GEMM into fp32
//    scratch, then our bias_act or cast rounds (kernels/composed_ops.h).
//
// The facts of cublasLt.h (CUDA 13.0, cuBLAS 13.1.0) these rules rest on, by line:
//  - 1535-1547, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: "Bias vector elements are the same
//    type as the elements of output matrix (Dtype)", the listed exceptions being IMMA and
//    fp8 kernels only. Left unset, a bf16 D would read our fp32 bias as bf16, so a bf16-D
//    plan sets it to CUDA_R_32F (set_bias_type). The header does not list fp32 bias with
//    a bf16 D, nor rule it out: cuBLASLt says at plan time (the heuristic finds nothing)
//    or on the first matmul (NOT_SUPPORTED / INVALID_VALUE), and gemm_lt.cpp turns either
//    into kUnsupported: that shape keeps the fp32 path, with one note on stderr.
//  - 1380-1386, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: the GELU input's leading dimension
//    "Must be divisible by 8 and be no less than the number of rows in the output matrix"
//    (cuBLASLt's rows are our N: ld N, so N % 8 == 0).
//  - 1483-1501, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE: unset, "GELU input matrix
//    elements type is the same as the type of elements of the output matrix": a bf16 GELU
//    input for a bf16 D, fp32 for fp32. Left unset. (Linear no longer asks for it: it keeps
//    GELU's derivative, which no epilogue writes: linear_epilogue below.)
//  - 1924-1926, CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: split-K "Intermediate results are
//    stored in output type in the workspace": with a bf16 D each partial sum would be
//    rounded to bf16 before the sum. A bf16-D plan allows NONE and COMPUTE_TYPE (fp32
//    partials, reduced in a fixed order) only; INPLACE stays out for every plan
//    (gemm_lt.h: determinism).
//  - 1982-2002, CUBLASLT_EPILOGUE_GELU*: "apply GELU point-wise transform", no formula.
//    NVIDIA documents the tanh approximation, ours too (kernels/common/math.h), but ours
//    is x * logistic(2u) with exp_approx, written to keep its relative accuracy for
//    negative x; cuBLASLt's code is its own, so the bits differ. For fp32 D this was
//    measured and accepted (tests/gpu/test_cuda_ops.cpp: 1e-4 normwise). For a bf16 D
//    it is not known yet whether the bf16-output kernels' GELU keeps within the bf16
//    bound (tests/gpu/test_cuda_bf16.cpp: < 1e-2 normwise, >= 99% of elements the same
//    bits as the CPU): so by default a GELU into bf16 keeps our formula (the GEMM into
//    fp32, then bias_act: one rounding, the CPU's numbers), and cuBLASLt's GELU into bf16
//    is taken only with CudaOptions::lt_gelu_bf16 (NOEIRA_GELU_EPILOGUE=cublaslt), which
//    the [gpu] test measures against that bound.
//
// Alignment, for a bf16 D only (an fp32 D keeps the rules it had: the heuristic is told
// the alignments, gemm_lt.cpp): D, the bias and the GELU input start on 16 bytes (our
// arenas give 256 for activations, 32 for parameters: memory_plan.h, params.cpp), and
// the GELU input's ld is a multiple of 8 (above). D's own ld may be anything cuBLASLt's
// layout takes (a vocabulary of 65): its kernels read the layout, and the heuristic
// the pointer. Otherwise: the fp32 path, whose kernels take any alignment.
#pragma once
#include <cstdint>

#include "kernels/common/math.h"

namespace noeira::cuda {

enum class LtType : uint8_t { kF32, kBF16 };                 // CUDA_R_32F, CUDA_R_16BF
enum class LtCompute : uint8_t { k32F, k32FFastTF32 };       // CUBLAS_COMPUTE_32F[_FAST_TF32]
// The cuBLASLt epilogues we use, by cuBLASLt's names (CUBLASLT_EPILOGUE_<NAME>).
enum class LtEpilogue : uint8_t {
  kDefault,
  kBias,
  kReLU,
  kReLUBias,
  kGELU,
  kGELUBias,
  kGELUAux,
  kGELUAuxBias,
};

inline constexpr bool lt_has_bias(LtEpilogue e) {
  return e == LtEpilogue::kBias || e == LtEpilogue::kReLUBias || e == LtEpilogue::kGELUBias ||
         e == LtEpilogue::kGELUAuxBias;
}
inline constexpr bool lt_has_aux(LtEpilogue e) {
  return e == LtEpilogue::kGELUAux || e == LtEpilogue::kGELUAuxBias;
}
inline constexpr bool lt_is_gelu(LtEpilogue e) {
  return e == LtEpilogue::kGELU || e == LtEpilogue::kGELUBias || lt_has_aux(e);
}

// The bytes a pointer is aligned to: the largest power of two (<= 256) dividing its
// address; 256 for null (nothing to read). What cuBLASLt's heuristic is told.
inline uint32_t lt_alignment(const void* p) {
  if (!p) return 256;
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align != 0) align >>= 1;
  return align;
}

// Linear's act(x W^T + b) as one epilogue. fits is false where a dact is asked for: no
// epilogue writes the activation's derivative (GELU_AUX's aux is the GELU input), so those
// take the GEMM and our bias_act. The GELU_AUX epilogues stay available to GemmLt callers.
struct LinearEpilogue {
  bool fits = false;
  LtEpilogue epilogue = LtEpilogue::kDefault;
};
inline LinearEpilogue linear_epilogue(Act act, bool bias, bool dact) {
  switch (act) {
    case Act::kNone:
      return {!dact, bias ? LtEpilogue::kBias : LtEpilogue::kDefault};
    case Act::kReLU:
      return {!dact, bias ? LtEpilogue::kReLUBias : LtEpilogue::kReLU};
    case Act::kGELU:
      return {!dact, bias ? LtEpilogue::kGELUBias : LtEpilogue::kGELU};
  }
  return {};
}

// The least alignment (bytes) of a bf16 D, the bias and the GELU input for the bf16-D path.
inline constexpr uint32_t kLtBf16MinAlign = 16;
// The GELU input's leading dimension must be a multiple of this (cublasLt.h 1381-1382).
inline constexpr int64_t kLtAuxLdMultiple = 8;

struct LtRequest {
  LtType ab = LtType::kF32;  // A and B
  LtType d = LtType::kF32;   // the destination (C and D)
  bool tf32 = false;         // the backend's TF32 switch (fp32 A/B only)
  LtEpilogue epilogue = LtEpilogue::kDefault;
  bool lt_gelu_bf16 = false;  // CudaOptions::lt_gelu_bf16: cuBLASLt's GELU into a bf16 D
  int64_t K = 1;              // the depth; cuBLASLt needs K >= 1
  uint32_t align_d = 256;     // bytes (lt_alignment; a batch's stride bounds it too)
  uint32_t align_bias = 256;
  uint32_t align_aux = 256;
  int64_t ld_aux = 0;  // elements: our N
};

struct LtLayoutChoice {
  // cuBLASLt writes the destination itself, epilogue fused. false: `why`, and the caller
  // runs its fp32 path (GEMM into fp32, then our kernel).
  bool direct = false;
  const char* why = "";
  LtCompute compute = LtCompute::k32F;
  LtType ab = LtType::kF32;
  LtType cd = LtType::kF32;  // C and D; the GELU input (aux) is stored in this type too
  LtEpilogue epilogue = LtEpilogue::kDefault;
  bool set_bias_type = false;          // CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = CUDA_R_32F
  bool output_type_reduction = true;   // may split-K partials be kept in D's type
};

inline LtLayoutChoice choose_lt_types(const LtRequest& r) {
  LtLayoutChoice c;
  c.ab = r.ab;
  c.cd = r.d;
  c.epilogue = r.epilogue;
  // bf16 inputs: plain fp32 accumulation (TF32 is about rounding fp32 inputs).
  c.compute = r.ab == LtType::kF32 && r.tf32 ? LtCompute::k32FFastTF32 : LtCompute::k32F;
  const auto no = [&c](const char* why) {
    c.direct = false;
    c.why = why;
    return c;
  };
  if (r.K < 1) return no("K == 0: cuBLASLt needs k >= 1");
  if (lt_has_aux(r.epilogue) && r.ld_aux % kLtAuxLdMultiple != 0)
    return no("the GELU input's leading dimension is not a multiple of 8");
  if (r.d == LtType::kF32) {  // as it was: everything fused, the heuristic told the alignments
    // bf16 A/B into fp32 with an epilogue stays composed, as before this path existed: the
    // modules never ask it (their outputs are the flow's dtype) and no test covers it.
    if (r.ab == LtType::kBF16 && r.epilogue != LtEpilogue::kDefault)
      return no("bf16 A/B into an fp32 destination with an epilogue: the GEMM writes fp32, "
                "bias_act applies it");
    c.direct = true;
    return c;
  }
  // A bf16 destination.
  if (r.ab != LtType::kBF16)
    return no("fp32 A/B into a bf16 destination: the GEMM writes fp32, our kernel rounds");
  if (lt_is_gelu(r.epilogue) && !r.lt_gelu_bf16)
    return no("GELU into bf16 keeps our formula (kernels/common/math.h): the GEMM writes "
              "fp32, bias_act rounds (CudaOptions::lt_gelu_bf16 fuses cuBLASLt's)");
  if (r.align_d < kLtBf16MinAlign) return no("the bf16 destination is not 16-byte aligned");
  if (lt_has_bias(r.epilogue) && r.align_bias < kLtBf16MinAlign)
    return no("the bias is not 16-byte aligned");
  if (lt_has_aux(r.epilogue) && r.align_aux < kLtBf16MinAlign)
    return no("the GELU input is not 16-byte aligned");
  c.direct = true;
  c.set_bias_type = lt_has_bias(r.epilogue);
  c.output_type_reduction = false;  // bf16 partial sums would round before the sum
  return c;
}

}  // namespace noeira::cuda
