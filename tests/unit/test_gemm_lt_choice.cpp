// The cuBLASLt type and epilogue choice (kernels/cuda/gemm_lt_choice.h), a pure function
// checked without a device or CUDA headers: which GEMMs write their destination straight
// from cuBLASLt (fp32 as before; bf16 with one rounding, fp32 bias, no bf16 split-K
// partials), and which keep the fp32 path (the GEMM into fp32, then our kernel).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "kernels/cuda/gemm_lt_choice.h"

using namespace noeira;
using namespace noeira::cuda;

namespace {

// A linear forward's request as linear.cu builds it, with aligned buffers; with `aux`, a
// GELU's epilogue is the one that also stores its input (GELU_AUX[_BIAS]: linear.cu no
// longer asks for it, GemmLt still takes it).
LtRequest linear_request(LtType ab, LtType d, Act act, bool bias, bool aux, int64_t N = 64) {
  const LinearEpilogue e = linear_epilogue(act, bias, false);
  REQUIRE(e.fits);
  LtRequest r;
  r.ab = ab;
  r.d = d;
  r.epilogue = e.epilogue;
  if (aux && act == Act::kGELU)
    r.epilogue = bias ? LtEpilogue::kGELUAuxBias : LtEpilogue::kGELUAux;
  r.K = 32;
  r.ld_aux = N;
  return r;
}

}  // namespace

TEST_CASE("lt_alignment is the largest power of two dividing the address, up to 256",
          "[gemm_lt_choice]") {
  alignas(256) static unsigned char buf[512];
  CHECK(lt_alignment(nullptr) == 256);
  CHECK(lt_alignment(buf) == 256);
  CHECK(lt_alignment(buf + 256) == 256);
  CHECK(lt_alignment(buf + 16) == 16);
  CHECK(lt_alignment(buf + 48) == 16);
  CHECK(lt_alignment(buf + 8) == 8);
  CHECK(lt_alignment(buf + 2) == 2);  // a bf16 view one element in
  CHECK(lt_alignment(buf + 1) == 1);
}

TEST_CASE("linear_epilogue maps act and bias onto one cuBLASLt epilogue, none with a dact",
          "[gemm_lt_choice]") {
  struct Case {
    Act act;
    bool bias, dact, fits;
    LtEpilogue e;
  };
  const Case cases[] = {
      {Act::kNone, false, false, true, LtEpilogue::kDefault},
      {Act::kNone, true, false, true, LtEpilogue::kBias},
      {Act::kReLU, false, false, true, LtEpilogue::kReLU},
      {Act::kReLU, true, false, true, LtEpilogue::kReLUBias},
      {Act::kGELU, false, false, true, LtEpilogue::kGELU},
      {Act::kGELU, true, false, true, LtEpilogue::kGELUBias},
      // No epilogue writes the activation's derivative (GELU_AUX's aux is its input).
      {Act::kGELU, false, true, false, LtEpilogue::kDefault},
      {Act::kGELU, true, true, false, LtEpilogue::kDefault},
      {Act::kNone, true, true, false, LtEpilogue::kDefault},
      {Act::kReLU, false, true, false, LtEpilogue::kDefault},
  };
  for (const Case& c : cases) {
    INFO("act " << int(c.act) << " bias " << c.bias << " dact " << c.dact);
    const LinearEpilogue got = linear_epilogue(c.act, c.bias, c.dact);
    CHECK(got.fits == c.fits);
    if (c.fits) CHECK(got.epilogue == c.e);
  }
  CHECK(lt_has_bias(LtEpilogue::kGELUAuxBias));
  CHECK_FALSE(lt_has_bias(LtEpilogue::kGELUAux));
  CHECK(lt_has_aux(LtEpilogue::kGELUAux));
  CHECK_FALSE(lt_has_aux(LtEpilogue::kGELUBias));
  CHECK(lt_is_gelu(LtEpilogue::kGELU));
  CHECK_FALSE(lt_is_gelu(LtEpilogue::kReLUBias));
}

TEST_CASE("fp32 in, fp32 out: as before, every epilogue fused, TF32 by the switch",
          "[gemm_lt_choice]") {
  for (bool tf32 : {false, true}) {
    for (Act act : {Act::kNone, Act::kReLU, Act::kGELU}) {
      for (bool bias : {false, true}) {
        const bool pre = act == Act::kGELU;
        LtRequest r = linear_request(LtType::kF32, LtType::kF32, act, bias, pre);
        r.tf32 = tf32;
        // Alignments are the heuristic's business for an fp32 D, as they were.
        r.align_d = 4;
        r.align_bias = 4;
        r.align_aux = 4;
        INFO("tf32 " << tf32 << " act " << int(act) << " bias " << bias);
        const LtLayoutChoice c = choose_lt_types(r);
        CHECK(c.direct);
        CHECK(c.compute == (tf32 ? LtCompute::k32FFastTF32 : LtCompute::k32F));
        CHECK(c.ab == LtType::kF32);
        CHECK(c.cd == LtType::kF32);
        CHECK(c.epilogue == r.epilogue);
        CHECK_FALSE(c.set_bias_type);       // fp32 D: cuBLASLt's default bias type is fp32
        CHECK(c.output_type_reduction);     // fp32 partials either way
      }
    }
  }
  // The GELU input's ld must be a multiple of 8 (cublasLt.h), fp32 or not.
  const LtLayoutChoice odd =
      choose_lt_types(linear_request(LtType::kF32, LtType::kF32, Act::kGELU, true, true, 13));
  CHECK_FALSE(odd.direct);
  CHECK_THAT(std::string(odd.why), Catch::Contains("multiple of 8"));
  // Without aux, no ld rule: N = 13 is fine.
  CHECK(choose_lt_types(linear_request(LtType::kF32, LtType::kF32, Act::kGELU, true, false, 13))
            .direct);
}

TEST_CASE("bf16 in, bf16 out: one rounding from fp32, fp32 bias, no bf16 partial sums",
          "[gemm_lt_choice]") {
  for (bool tf32 : {false, true}) {
    for (bool bias : {false, true}) {
      for (Act act : {Act::kNone, Act::kReLU}) {
        LtRequest r = linear_request(LtType::kBF16, LtType::kBF16, act, bias, false);
        r.tf32 = tf32;
        INFO("tf32 " << tf32 << " act " << int(act) << " bias " << bias);
        const LtLayoutChoice c = choose_lt_types(r);
        CHECK(c.direct);
        CHECK(c.compute == LtCompute::k32F);  // bf16 inputs: plain fp32, TF32 or not
        CHECK(c.ab == LtType::kBF16);
        CHECK(c.cd == LtType::kBF16);
        CHECK(c.epilogue == r.epilogue);
        CHECK(c.set_bias_type == bias);  // our fp32 bias, not the bf16 default
        CHECK_FALSE(c.output_type_reduction);
      }
    }
  }
}

TEST_CASE("bf16 in, bf16 out with GELU: our formula unless cuBLASLt's GELU is asked for",
          "[gemm_lt_choice]") {
  for (bool bias : {false, true}) {
    for (bool pre : {false, true}) {
      INFO("bias " << bias << " pre " << pre);
      LtRequest r = linear_request(LtType::kBF16, LtType::kBF16, Act::kGELU, bias, pre);
      const LtLayoutChoice ours = choose_lt_types(r);
      CHECK_FALSE(ours.direct);
      CHECK_THAT(std::string(ours.why), Catch::Contains("our formula"));
      r.lt_gelu_bf16 = true;
      const LtLayoutChoice fused = choose_lt_types(r);
      CHECK(fused.direct);
      CHECK(fused.cd == LtType::kBF16);  // and the GELU input (aux) in D's type: bf16 pre
      CHECK(fused.epilogue == r.epilogue);
      CHECK(fused.set_bias_type == bias);
      CHECK_FALSE(fused.output_type_reduction);
    }
  }
  // The aux ld rule holds for bf16 too.
  LtRequest odd = linear_request(LtType::kBF16, LtType::kBF16, Act::kGELU, true, true, 12);
  odd.lt_gelu_bf16 = true;
  CHECK_FALSE(choose_lt_types(odd).direct);
}

TEST_CASE("bf16 in, fp32 out (the gemm op, parameter gradients): fp32 D as before",
          "[gemm_lt_choice]") {
  LtRequest r;
  r.ab = LtType::kBF16;
  r.d = LtType::kF32;
  r.tf32 = true;
  r.K = 100;
  r.align_d = 4;
  const LtLayoutChoice c = choose_lt_types(r);
  CHECK(c.direct);
  CHECK(c.compute == LtCompute::k32F);
  CHECK(c.cd == LtType::kF32);
  CHECK(c.epilogue == LtEpilogue::kDefault);
  CHECK_FALSE(c.set_bias_type);
  CHECK(c.output_type_reduction);
  // With an epilogue it stays composed (GEMM into fp32, then bias_act), as before.
  for (const LtEpilogue e : {LtEpilogue::kBias, LtEpilogue::kReLUBias, LtEpilogue::kGELU}) {
    r.epilogue = e;
    const LtLayoutChoice ce = choose_lt_types(r);
    CHECK_FALSE(ce.direct);
    CHECK_THAT(std::string(ce.why), Catch::Contains("fp32 destination with an epilogue"));
  }
}

TEST_CASE("fp32 in, bf16 out and K == 0 keep the fp32 path", "[gemm_lt_choice]") {
  LtRequest r;
  r.ab = LtType::kF32;
  r.d = LtType::kBF16;
  const LtLayoutChoice f32_in = choose_lt_types(r);
  CHECK_FALSE(f32_in.direct);
  CHECK_THAT(std::string(f32_in.why), Catch::Contains("fp32 A/B"));
  r.ab = LtType::kBF16;
  r.K = 0;
  const LtLayoutChoice k0 = choose_lt_types(r);
  CHECK_FALSE(k0.direct);
  CHECK_THAT(std::string(k0.why), Catch::Contains("K == 0"));
}

TEST_CASE("a bf16 D, bias or GELU input off 16 bytes keeps the fp32 path",
          "[gemm_lt_choice]") {
  const LtRequest base = [] {
    LtRequest r = linear_request(LtType::kBF16, LtType::kBF16, Act::kGELU, true, true);
    r.lt_gelu_bf16 = true;
    return r;
  }();
  REQUIRE(choose_lt_types(base).direct);
  for (uint32_t align : {1u, 2u, 4u, 8u}) {
    INFO("alignment " << align);
    LtRequest d = base;
    d.align_d = align;
    const LtLayoutChoice cd = choose_lt_types(d);
    CHECK_FALSE(cd.direct);
    CHECK_THAT(std::string(cd.why), Catch::Contains("destination"));
    LtRequest b = base;
    b.align_bias = align;
    const LtLayoutChoice cb = choose_lt_types(b);
    CHECK_FALSE(cb.direct);
    CHECK_THAT(std::string(cb.why), Catch::Contains("bias"));
    LtRequest a = base;
    a.align_aux = align;
    const LtLayoutChoice ca = choose_lt_types(a);
    CHECK_FALSE(ca.direct);
    CHECK_THAT(std::string(ca.why), Catch::Contains("GELU input"));
  }
  for (uint32_t align : {16u, 32u, 256u}) {
    LtRequest r = base;
    r.align_d = r.align_bias = r.align_aux = align;
    CHECK(choose_lt_types(r).direct);
  }
  // A bias or aux alignment that the epilogue does not read does not matter.
  LtRequest plain = linear_request(LtType::kBF16, LtType::kBF16, Act::kNone, false, false);
  plain.align_bias = 1;
  plain.align_aux = 1;
  CHECK(choose_lt_types(plain).direct);
  // D's own leading dimension is cuBLASLt's business (a vocabulary of 65): no rule here,
  // only the pointer's alignment.
  plain.ld_aux = 65;
  CHECK(choose_lt_types(plain).direct);
}
