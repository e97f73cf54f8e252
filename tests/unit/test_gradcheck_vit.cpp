// The ViT modules' analytic backward agrees with central finite differences (the pattern
// of test_gradcheck_gpt.cpp): tiny images and sequences in fp32. Label smoothing's
// gradient is checked through the loss in test_gradcheck.cpp's way.
#include <catch2/catch.hpp>

#include <vector>

#include "nn/attention.h"
#include "nn/class_token.h"
#include "nn/patch_embedding.h"
#include "nn/sequential.h"
#include "nn/transformer_block.h"
#include "tests/support/gradcheck.h"

using namespace noeira;
using noeira::test::check_module;
using noeira::test::ModuleRig;

TEST_CASE("PatchEmbedding backward matches finite differences (input and weights)",
          "[gradcheck][vit]") {
  SECTION("2 channels, 4x6 image, patch 2: 6 patches of 8") {
    ModuleRig rig(std::make_unique<PatchEmbedding>(2, 5), Shape{2, 4, 6}, 2, 200);
    REQUIRE(rig.out_shape() == Shape{6, 5});
    check_module(rig);
  }
  SECTION("3 channels, 3x3 image, patch 3: one patch") {
    ModuleRig rig(std::make_unique<PatchEmbedding>(3, 4), Shape{3, 3, 3}, 3, 201);
    check_module(rig);
  }
}

TEST_CASE("ClassToken backward matches finite differences (cls_token and pos_embed)",
          "[gradcheck][vit]") {
  ModuleRig rig(std::make_unique<ClassToken>(), Shape{4, 6}, 3, 210);
  REQUIRE(rig.out_shape() == Shape{5, 6});
  REQUIRE(rig.params().all().size() == 2);
  CHECK(rig.params().all()[0].name == "cls_token");
  CHECK(rig.params().all()[1].name == "pos_embed");
  check_module(rig);
}

TEST_CASE("ClassTokenPool backward matches finite differences; other tokens get zero",
          "[gradcheck][vit]") {
  auto seq = std::make_unique<Sequential>();
  seq->add("", std::make_unique<ClassToken>());
  seq->add("", std::make_unique<ClassTokenPool>());
  ModuleRig rig(std::move(seq), Shape{3, 4}, 2, 220);
  REQUIRE(rig.out_shape() == Shape{4});
  check_module(rig);
  // Only the class token reaches the output: the patches' gradient is zero.
  const std::vector<float> dx = ModuleRig::to_f32(rig.backward());
  REQUIRE(dx.size() == 2 * 3 * 4);
  for (float v : dx) CHECK(v == 0.0f);
}

TEST_CASE("SelfAttention without the mask backward matches finite differences",
          "[gradcheck][vit]") {
  ModuleRig rig(std::make_unique<SelfAttention>(2, true, /*causal=*/false), Shape{5, 8}, 2, 230);
  check_module(rig);
}

TEST_CASE("SelfAttention without the mask: every position sees every other", "[gradcheck][vit]") {
  const int64_t T = 5, C = 8;
  ModuleRig rig(std::make_unique<SelfAttention>(2, true, false), Shape{T, C}, 2, 231);
  const std::vector<float> before = ModuleRig::to_f32(rig.forward());
  for (int64_t c = 0; c < C; ++c) rig.input()[3 * C + c] += 0.5f;  // sample 0, position 3
  const std::vector<float> after = ModuleRig::to_f32(rig.forward());
  for (int64_t p = 0; p < T; ++p) {
    bool same = true;
    for (int64_t c = 0; c < C; ++c) same = same && before[p * C + c] == after[p * C + c];
    INFO("sample 0, position " << p);
    CHECK_FALSE(same);
  }
  for (int64_t i = T * C; i < 2 * T * C; ++i) REQUIRE(before[i] == after[i]);  // sample 1
}

// h = 1e-2 as for the GPT block (test_gradcheck_gpt.cpp says why).
TEST_CASE("TransformerBlock as a ViT encoder block (no mask, MLP ratio 2) matches finite "
          "differences", "[gradcheck][vit]") {
  ModuleRig rig(std::make_unique<TransformerBlock>(2, true, false, 2), Shape{5, 8}, 2, 240);
  CHECK(rig.param("mlp.c_fc.weight").value.shape == Shape{16, 8});
  check_module(rig, 16, 1e-2f);
}
