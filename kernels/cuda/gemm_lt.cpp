#include "kernels/cuda/gemm_lt.h"

#include <cstdio>

#include "kernels/cuda/cuda_check.h"

namespace noeira::cuda {

namespace {

// A batched operand's alignment (lt_alignment: what cuBLASLt may assume): every matrix of
// the batch starts at p + i * stride elements, so the stride in bytes bounds it too.
uint32_t batched_alignment(const void* p, int64_t batch, int64_t stride, size_t elem_bytes) {
  uint32_t align = lt_alignment(p);
  if (batch > 1) {
    const uint64_t bytes = static_cast<uint64_t>(stride) * elem_bytes;
    while (align > 1 && bytes % align != 0) align >>= 1;
  }
  return align;
}

bool uses_bias(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}

bool uses_aux(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}

size_t type_bytes(cudaDataType_t t) { return t == CUDA_R_16BF ? 2 : 4; }

}  // namespace

cublasLtEpilogue_t cublas_epilogue(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::kDefault: return CUBLASLT_EPILOGUE_DEFAULT;
    case LtEpilogue::kBias: return CUBLASLT_EPILOGUE_BIAS;
    case LtEpilogue::kReLU: return CUBLASLT_EPILOGUE_RELU;
    case LtEpilogue::kReLUBias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case LtEpilogue::kGELU: return CUBLASLT_EPILOGUE_GELU;
    case LtEpilogue::kGELUBias: return CUBLASLT_EPILOGUE_GELU_BIAS;
    case LtEpilogue::kGELUAux: return CUBLASLT_EPILOGUE_GELU_AUX;
    case LtEpilogue::kGELUAuxBias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool lt_epilogue_of(cublasLtEpilogue_t e, LtEpilogue* out) {
  for (LtEpilogue l : {LtEpilogue::kDefault, LtEpilogue::kBias, LtEpilogue::kReLU,
                       LtEpilogue::kReLUBias, LtEpilogue::kGELU, LtEpilogue::kGELUBias,
                       LtEpilogue::kGELUAux, LtEpilogue::kGELUAuxBias}) {
    if (cublas_epilogue(l) == e) {
      *out = l;
      return true;
    }
  }
  return false;
}

const char* epilogue_name(cublasLtEpilogue_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: return "DEFAULT";
    case CUBLASLT_EPILOGUE_RELU: return "RELU";
    case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
    case CUBLASLT_EPILOGUE_RELU_BIAS: return "RELU_BIAS";
    case CUBLASLT_EPILOGUE_GELU: return "GELU";
    case CUBLASLT_EPILOGUE_GELU_BIAS: return "GELU_BIAS";
    case CUBLASLT_EPILOGUE_GELU_AUX: return "GELU_AUX";
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: return "GELU_AUX_BIAS";
    default: return "?";
  }
}

std::string describe(const GemmCall& c) {
  return std::string(c.ab_type == CUDA_R_16BF ? "bf16 " : "") +
         (c.batch > 1 ? std::to_string(c.batch) + " x " : std::string()) + "gemm " +
         std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) + " (trans_a " + std::to_string(c.trans_a) + ", trans_b " + std::to_string(c.trans_b) +
         ", lda " + std::to_string(c.lda) + ", ldb " + std::to_string(c.ldb) + ", ldc " +
         std::to_string(c.ldc) + ", epilogue " + epilogue_name(c.epilogue) + " (" +
         std::to_string(static_cast<int>(c.epilogue)) + ")" +
         (c.cd_type == CUDA_R_16BF ? ", D bf16" : "") + ")";
}

namespace {

// "the GELU_BIAS epilogue" / "the BIAS epilogue into a bf16 D"
std::string what_was_refused(const GemmCall& c) {
  return "the " + std::string(epilogue_name(c.epilogue)) + " epilogue" +
         (c.cd_type == CUDA_R_16BF ? " into a bf16 D" : "");
}

// What the caller does instead.
const char* fallback_text(const GemmCall& c) {
  return c.cd_type == CUDA_R_16BF
             ? "this shape runs the GEMM into fp32 and our bias/activation or cast kernel, "
               "which rounds, instead"
             : "this shape runs a plain GEMM and our bias/activation kernel instead";
}

}  // namespace

std::string epilogue_fallback_note(const GemmCall& c, cublasStatus_t status, int found) {
  return "noeira: cuBLASLt has no algorithm for " + what_was_refused(c) + " of " +
         describe(c) + " (cublasLtMatmulAlgoGetHeuristic: " + error_text(status) + ", " +
         std::to_string(found) + " found); " + fallback_text(c);
}

std::string matmul_refusal_note(const GemmCall& c, cublasStatus_t status) {
  return "noeira: cuBLASLt refused " + what_was_refused(c) + " of " + describe(c) +
         " on its first matmul (cublasLtMatmul: " + error_text(status) + "); " +
         fallback_text(c);
}

namespace {

// "cublasLtX failed (STATUS) for gemm MxNxK (...)"
std::string lt_error(const char* call, cublasStatus_t s, const GemmCall& c) {
  return std::string(call) + " failed (" + error_text(s) + ") for " + describe(c);
}

}  // namespace

GemmLt::Plan::~Plan() {
  if (layout_c) cublasLtMatrixLayoutDestroy(layout_c);
  if (layout_b) cublasLtMatrixLayoutDestroy(layout_b);
  if (layout_a) cublasLtMatrixLayoutDestroy(layout_a);
  if (desc) cublasLtMatmulDescDestroy(desc);
}

Result<std::unique_ptr<GemmLt>> GemmLt::create(int sm_major, bool tf32) {
  std::unique_ptr<GemmLt> g(new GemmLt());
  g->tf32_ = tf32;
  NOEIRA_CUBLAS_TRY(cublasLtCreate(&g->handle_),
                    "cuBLASLt could not start; check that libcublasLt matches the CUDA "
                    "driver (nvidia-smi) and that the device is not in an error state");
  g->workspace_bytes_ = workspace_bytes_for(sm_major);
  NOEIRA_CUDA_TRY(cudaMalloc(&g->workspace_, g->workspace_bytes_),
                  "out of device memory for the " +
                      std::to_string(g->workspace_bytes_ >> 20) +
                      " MiB cuBLASLt workspace; free the GPU (nvidia-smi) or use --target cpu");
  return g;
}

GemmLt::~GemmLt() {
  plans_.clear();
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

GemmLt::Outcome GemmLt::make_plan(const Key& key, const GemmCall& c, Plan& plan,
                                  std::string* error) {
#define NOEIRA_LT_CALL(call)                                \
  do {                                                      \
    const cublasStatus_t s_ = (call);                       \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                      \
      if (error) *error = lt_error(#call, s_, c);           \
      return Outcome::kFailed;                              \
    }                                                       \
  } while (0)

  // The types, compute and epilogue: gemm_lt_choice.h. The caller applied its policy (a
  // GELU into bf16: CudaOptions::lt_gelu_bf16) before calling, so here GELU is allowed;
  // the alignment rules are checked again, as the key's alignments say.
  LtRequest request;
  if (!lt_epilogue_of(c.epilogue, &request.epilogue) ||
      (c.ab_type != CUDA_R_32F && c.ab_type != CUDA_R_16BF) ||
      (c.cd_type != CUDA_R_32F && c.cd_type != CUDA_R_16BF)) {
    if (error)
      *error = "GemmLt takes fp32 or bf16 A/B and C/D and the BIAS, RELU and GELU epilogues; "
               "not " + describe(c) + " (a programming error in the caller)";
    return Outcome::kFailed;
  }
  request.ab = c.ab_type == CUDA_R_16BF ? LtType::kBF16 : LtType::kF32;
  request.d = c.cd_type == CUDA_R_16BF ? LtType::kBF16 : LtType::kF32;
  request.tf32 = tf32_;
  request.lt_gelu_bf16 = true;
  request.K = c.K;
  request.align_d = key.align_c;
  request.align_bias = key.align_bias;
  request.align_aux = key.align_aux;
  request.ld_aux = c.N;  // our (M, N) row-major = column-major (N, M), ld N
  const LtLayoutChoice choice = choose_lt_types(request);
  if (!choice.direct) {
    std::fflush(stdout);
    std::fprintf(stderr, "noeira: %s: %s; the caller's fp32 path runs instead\n",
                 describe(c).c_str(), choice.why);
    return Outcome::kUnsupported;
  }
  plan.may_refuse = c.epilogue != CUBLASLT_EPILOGUE_DEFAULT || choice.cd == LtType::kBF16;
  plan.typed_bias = choice.set_bias_type;

  const cublasComputeType_t compute = choice.compute == LtCompute::k32FFastTF32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  const cudaDataType_t cd_type = choice.cd == LtType::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
  NOEIRA_LT_CALL(cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F));
  // Operands swapped (see the header): cuBLASLt's A is our B, its B is our A.
  const int32_t op_a = c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t op_b = c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const uint32_t epilogue = c.epilogue;
  NOEIRA_LT_CALL(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a,
                                                sizeof op_a));
  NOEIRA_LT_CALL(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b,
                                                sizeof op_b));
  NOEIRA_LT_CALL(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                &epilogue, sizeof epilogue));
  // The heuristic reads the epilogue pointers' alignment, so set them before asking.
  if (uses_bias(c.epilogue)) {
    NOEIRA_LT_CALL(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                  &c.bias, sizeof c.bias));
    if (choice.set_bias_type) {  // our fp32 bias; unset, a bf16 D would read it as bf16
      const int32_t bias_type = CUDA_R_32F;
      NOEIRA_LT_CALL(cublasLtMatmulDescSetAttribute(
          plan.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
    }
  }
  if (uses_aux(c.epilogue)) {  // stored in D's type (EPILOGUE_AUX_DATA_TYPE left unset)
    const int64_t aux_ld = request.ld_aux;
    NOEIRA_LT_CALL(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &c.aux, sizeof c.aux));
    NOEIRA_LT_CALL(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                  &aux_ld, sizeof aux_ld));
  }

  // Stored (pre-op) column-major shapes. Our row-major X(r, c) with stride ld is the
  // column-major X^T(c, r) with the same ld.
  const uint64_t a_rows = c.trans_b ? c.K : c.N, a_cols = c.trans_b ? c.N : c.K;  // our B
  const uint64_t b_rows = c.trans_a ? c.M : c.K, b_cols = c.trans_a ? c.K : c.M;  // our A
  NOEIRA_LT_CALL(cublasLtMatrixLayoutCreate(&plan.layout_a, c.ab_type, a_rows, a_cols, c.ldb));
  NOEIRA_LT_CALL(cublasLtMatrixLayoutCreate(&plan.layout_b, c.ab_type, b_rows, b_cols, c.lda));
  NOEIRA_LT_CALL(cublasLtMatrixLayoutCreate(&plan.layout_c, cd_type, c.N, c.M, c.ldc));
  if (c.batch > 1) {  // strided batch; the operands swapped as above
    const int32_t count = static_cast<int32_t>(c.batch);
    const cublasLtMatrixLayout_t layouts[3] = {plan.layout_a, plan.layout_b, plan.layout_c};
    const int64_t strides[3] = {c.stride_b, c.stride_a, c.stride_c};
    for (int i = 0; i < 3; ++i) {
      NOEIRA_LT_CALL(cublasLtMatrixLayoutSetAttribute(
          layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
      NOEIRA_LT_CALL(cublasLtMatrixLayoutSetAttribute(
          layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
          sizeof strides[i]));
    }
  }

  cublasLtMatmulPreference_t pref = nullptr;
  NOEIRA_LT_CALL(cublasLtMatmulPreferenceCreate(&pref));
  struct PrefGuard {
    cublasLtMatmulPreference_t p;
    ~PrefGuard() { cublasLtMatmulPreferenceDestroy(p); }
  } guard{pref};
  const uint64_t max_ws = workspace_bytes_;
  // In-place split-K accumulates partial products in the output; keep only the schemes
  // that reduce in a separate, fixed-order step (or do not split K at all), and for a
  // bf16 D not the one that keeps the partial sums in bf16 (cublasLt.h 1924-1926).
  uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  if (choice.output_type_reduction) reductions |= CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
  NOEIRA_LT_CALL(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof max_ws));
  NOEIRA_LT_CALL(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions, sizeof reductions));
  const uint32_t aligns[4] = {key.align_b, key.align_a, key.align_c, key.align_c};
  const cublasLtMatmulPreferenceAttributes_t align_attrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    NOEIRA_LT_CALL(cublasLtMatmulPreferenceSetAttribute(pref, align_attrs[i], &aligns[i],
                                                        sizeof aligns[i]));

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(handle_, plan.desc, plan.layout_a, plan.layout_b,
                                     plan.layout_c, plan.layout_c, pref, 1, &result, &found);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    // An epilogue or a bf16 D cuBLASLt cannot do for this shape (e.g. not supported or
    // invalid for these layouts): the caller runs its fp32 path instead. The plan is
    // cached as unsupported, so this line appears once per shape key.
    if (plan.may_refuse) {
      std::fflush(stdout);
      std::fprintf(stderr, "%s\n", epilogue_fallback_note(c, s, found).c_str());
      return Outcome::kUnsupported;
    }
    if (error)
      *error = (s != CUBLAS_STATUS_SUCCESS ? lt_error("cublasLtMatmulAlgoGetHeuristic", s, c)
                                           : "cublasLtMatmulAlgoGetHeuristic found no algorithm "
                                             "for " + describe(c)) +
               "; check the leading dimensions (row-major: at least the row length) and that "
               "the pointers are element-aligned device memory";
    return Outcome::kFailed;
  }
  plan.algo = result.algo;
  plan.supported = true;
  return Outcome::kDone;
#undef NOEIRA_LT_CALL
}

GemmLt::Outcome GemmLt::run(const GemmCall& c, cudaStream_t stream, std::string* error) {
  const size_t ab_bytes = type_bytes(c.ab_type);
  const int64_t batch = c.batch > 1 ? c.batch : 1;
  const Key key{c.trans_a,
                c.trans_b,
                c.M,
                c.N,
                c.K,
                c.lda,
                c.ldb,
                c.ldc,
                static_cast<uint32_t>(c.epilogue),
                static_cast<uint32_t>(c.ab_type),
                static_cast<uint32_t>(c.cd_type),
                batched_alignment(c.A, batch, c.stride_a, ab_bytes),
                batched_alignment(c.B, batch, c.stride_b, ab_bytes),
                batched_alignment(c.C, batch, c.stride_c, type_bytes(c.cd_type)),
                lt_alignment(uses_bias(c.epilogue) ? c.bias : nullptr),
                lt_alignment(uses_aux(c.epilogue) ? c.aux : nullptr),
                batch,
                batch > 1 ? c.stride_a : 0,
                batch > 1 ? c.stride_b : 0,
                batch > 1 ? c.stride_c : 0};
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    auto plan = std::make_unique<Plan>();
    const Outcome o = make_plan(key, c, *plan, error);
    if (o == Outcome::kFailed) return o;  // not cached: the next call reports it again
    it = plans_.emplace(key, std::move(plan)).first;
  }
  Plan& plan = *it->second;
  if (!plan.supported) return Outcome::kUnsupported;

  // Same alignment class, possibly different buffers: point the epilogue at this call's.
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  if (uses_bias(c.epilogue))
    s = cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias,
                                       sizeof c.bias);
  if (s == CUBLAS_STATUS_SUCCESS && uses_aux(c.epilogue))
    s = cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                       &c.aux, sizeof c.aux);
  if (s != CUBLAS_STATUS_SUCCESS) {
    if (error) *error = lt_error("cublasLtMatmulDescSetAttribute", s, c);
    return Outcome::kFailed;
  }
  s = cublasLtMatmul(handle_, plan.desc, &c.alpha, c.B, plan.layout_a, c.A, plan.layout_b,
                     &c.beta, c.C, plan.layout_c, c.C, plan.layout_c, &plan.algo, workspace_,
                     workspace_bytes_, stream);
  if (s != CUBLAS_STATUS_SUCCESS) {
    // A combination the header does not promise, refused before anything was enqueued:
    // from now on this key takes the caller's fp32 path (one note, as for the heuristic).
    // INVALID_VALUE counts as a refusal only where we set a type the header does not
    // promise (the fp32 bias of a bf16 D); elsewhere it is a caller's bug, reported.
    if (plan.may_refuse && !plan.ran &&
        (s == CUBLAS_STATUS_NOT_SUPPORTED ||
         (s == CUBLAS_STATUS_INVALID_VALUE && plan.typed_bias))) {
      plan.supported = false;
      (void)cudaGetLastError();  // nothing of the refusal may be blamed on a later op
      std::fflush(stdout);
      std::fprintf(stderr, "%s\n", matmul_refusal_note(c, s).c_str());
      return Outcome::kUnsupported;
    }
    if (error)
      *error = lt_error("cublasLtMatmul", s, c) +
               "; check that A, B and C are device buffers of the sizes the shapes imply";
    return Outcome::kFailed;
  }
  plan.ran = true;
  return Outcome::kDone;
}

}  // namespace noeira::cuda
