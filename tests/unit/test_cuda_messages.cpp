// Messages of the CUDA backend that need no device: the one line printed when cuBLASLt
// has no algorithm for a fused epilogue (or a bf16 D) names the shape, the epilogue and
// the status.
#include <catch2/catch.hpp>

#if defined(NOEIRA_WITH_CUDA)
#include "kernels/cuda/gemm_lt.h"
#endif

TEST_CASE("The cuBLASLt epilogue fallback note names shape, epilogue and status",
          "[cuda_messages]") {
#if defined(NOEIRA_WITH_CUDA)
  using namespace noeira::cuda;
  GemmCall c;
  c.M = 7;
  c.N = 13;
  c.K = 5;
  c.lda = 5;
  c.ldb = 5;
  c.ldc = 13;
  c.trans_b = true;
  c.epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  const std::string note = epilogue_fallback_note(c, CUBLAS_STATUS_NOT_SUPPORTED, 0);
  INFO(note);
  CHECK_THAT(note, Catch::StartsWith("noeira: cuBLASLt has no algorithm for the GELU_AUX_BIAS"));
  CHECK_THAT(note, Catch::Contains("gemm 7x13x5") && Catch::Contains("ldc 13") &&
                       Catch::Contains("CUBLAS_STATUS_NOT_SUPPORTED") &&
                       Catch::Contains("plain GEMM"));
  CHECK(note.find('\n') == std::string::npos);  // one line
  c.ab_type = CUDA_R_16BF;
  c.epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
  const std::string bf16 = epilogue_fallback_note(c, CUBLAS_STATUS_SUCCESS, 0);
  CHECK_THAT(bf16, Catch::Contains("RELU_BIAS") && Catch::Contains("bf16 gemm") &&
                       Catch::Contains("0 found"));
  CHECK(std::string(epilogue_name(CUBLASLT_EPILOGUE_BIAS)) == "BIAS");
  // A bf16 D: the note says so, and that the caller's fp32 path rounds instead; the same
  // when the first matmul refuses what the heuristic accepted.
  c.cd_type = CUDA_R_16BF;
  c.epilogue = CUBLASLT_EPILOGUE_BIAS;
  const std::string bf16_d = epilogue_fallback_note(c, CUBLAS_STATUS_NOT_SUPPORTED, 0);
  CHECK_THAT(bf16_d, Catch::Contains("BIAS epilogue into a bf16 D") &&
                         Catch::Contains("D bf16)") && Catch::Contains("GEMM into fp32"));
  const std::string refused = matmul_refusal_note(c, CUBLAS_STATUS_INVALID_VALUE);
  CHECK_THAT(refused, Catch::StartsWith("noeira: cuBLASLt refused the BIAS epilogue into a "
                                        "bf16 D") &&
                          Catch::Contains("CUBLAS_STATUS_INVALID_VALUE") &&
                          Catch::Contains("first matmul"));
  CHECK(refused.find('\n') == std::string::npos);
  // Our epilogue names and cuBLASLt's, both ways.
  for (LtEpilogue e : {LtEpilogue::kDefault, LtEpilogue::kBias, LtEpilogue::kReLU,
                       LtEpilogue::kReLUBias, LtEpilogue::kGELU, LtEpilogue::kGELUBias,
                       LtEpilogue::kGELUAux, LtEpilogue::kGELUAuxBias}) {
    LtEpilogue back = LtEpilogue::kDefault;
    CHECK(lt_epilogue_of(cublas_epilogue(e), &back));
    CHECK(back == e);
  }
  LtEpilogue unused;
  CHECK_FALSE(lt_epilogue_of(CUBLASLT_EPILOGUE_DGELU_BGRAD, &unused));
  CHECK(cublas_epilogue(LtEpilogue::kGELUAuxBias) == CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
#else
  SUCCEED("no CUDA backend in this build");
#endif
}
