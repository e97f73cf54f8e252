// The GPT modules' analytic backward agrees with central finite differences (the pattern
// of test_gradcheck_conv.cpp): tiny sequences (T <= 5, C = 8, 2 heads, batch 2-3) in fp32.
// The Embedding's input is int32 token ids (no input gradient); the tied head is checked
// behind an Embedding that owns the weight, so wte's gradient carries both uses.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/transformer_block.h"
#include "nn/layernorm.h"
#include "nn/sequential.h"
#include "nn/tied_head.h"
#include "tests/support/gradcheck.h"

using namespace noeira;
using noeira::test::grad_close;
using noeira::test::check_module;
using noeira::test::ModuleRig;
using noeira::test::RigOptions;

namespace {

RigOptions ids_input(int64_t vocab) {
  RigOptions opt;
  opt.in_dtype = DType::kI32;
  opt.vocab = vocab;
  opt.input_needs_grad = false;
  return opt;
}

}  // namespace

TEST_CASE("LayerNorm backward matches finite differences", "[gradcheck]") {
  SECTION("with bias") {
    ModuleRig rig(std::make_unique<LayerNorm>(), Shape{4, 8}, 2, 100);
    check_module(rig);
  }
  SECTION("without bias") {
    ModuleRig rig(std::make_unique<LayerNorm>(1e-5f, false), Shape{3, 6}, 2, 101);
    check_module(rig);
  }
}

TEST_CASE("SelfAttention backward matches finite differences", "[gradcheck]") {
  SECTION("with bias") {
    ModuleRig rig(std::make_unique<SelfAttention>(2), Shape{5, 8}, 2, 110);
    check_module(rig);
  }
  SECTION("without bias") {
    ModuleRig rig(std::make_unique<SelfAttention>(2, false), Shape{5, 8}, 2, 111);
    check_module(rig);
  }
}

TEST_CASE("SelfAttention is causal: a later position never moves an earlier output",
          "[gradcheck]") {
  const int64_t T = 5, C = 8;
  ModuleRig rig(std::make_unique<SelfAttention>(2), Shape{T, C}, 2, 112);
  const std::vector<float> before = ModuleRig::to_f32(rig.forward());
  const int64_t t = 3;
  for (int64_t c = 0; c < C; ++c) rig.input()[t * C + c] += 0.5f;  // sample 0, position 3
  const std::vector<float> after = ModuleRig::to_f32(rig.forward());
  for (int64_t p = 0; p < T; ++p) {
    bool same = true;
    for (int64_t c = 0; c < C; ++c) same = same && before[p * C + c] == after[p * C + c];
    INFO("sample 0, position " << p);
    CHECK(same == (p < t));
  }
  for (int64_t i = T * C; i < 2 * T * C; ++i) REQUIRE(before[i] == after[i]);  // sample 1
}

// The block's step is 1e-2: every function in it is smooth (LayerNorm, softmax, GELU), and
// with h = 1e-3 the fp32 rounding of L (|L| ~ 12 over 64 outputs) divided by 2h reaches
// 4e-3, above atol. Measured on c_attn (seed 120), max |analytic - numeric| over all entries
// falls as 1/h (3.7e-3 at 1e-3, 1.5e-3 at 3e-3, 3.5e-4 at 1e-2): rounding, not a wrong
// gradient (max |g| = 8).
TEST_CASE("TransformerBlock backward matches finite differences", "[gradcheck]") {
  SECTION("with bias") {
    ModuleRig rig(std::make_unique<TransformerBlock>(2), Shape{4, 8}, 2, 120);
    check_module(rig, 16, 1e-2f);
  }
  SECTION("without bias") {
    ModuleRig rig(std::make_unique<TransformerBlock>(2, false), Shape{4, 8}, 2, 121);
    check_module(rig, 16, 1e-2f);
  }
}

TEST_CASE("Embedding backward matches finite differences (ids repeat)", "[gradcheck]") {
  // 12 ids from a vocabulary of 5: tokens repeat, and T = 4 < context 6 uses wpe's first rows.
  ModuleRig rig(std::make_unique<Embedding>(5, 8, 6), Shape{4}, 3, 130, ids_input(5));
  check_module(rig, 32);
  // Rows of wpe past T get no gradient.
  const ParamInfo& wpe = rig.param("wpe.weight");
  for (int64_t i = 4 * 8; i < 6 * 8; ++i) CHECK(rig.grad(wpe)[i] == 0.0f);
}

TEST_CASE("TiedLmHead backward matches finite differences (weight shared with wte)",
          "[gradcheck]") {
  auto emb = std::make_unique<Embedding>(11, 8, 6);
  const Embedding& e = *emb;
  auto seq = std::make_unique<Sequential>();
  seq->add("emb", std::move(emb));
  seq->add("ln_f", std::make_unique<LayerNorm>());
  seq->add("lm_head", std::make_unique<TiedLmHead>(e));
  ModuleRig rig(std::move(seq), Shape{5}, 2, 140, ids_input(11));
  REQUIRE(rig.params().all().size() == 4);  // wte, wpe, ln_f.weight, ln_f.bias: no head weight
  check_module(rig, 24);
}
