// The GPT modules' structure (parameter names, order, shapes and roles as nanoGPT's state
// dict has them), their plan errors, and their bf16 flow: under BF16Policy every module's
// output is bf16 and close to the fp32 result (the same parameters and inputs).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/transformer_block.h"
#include "nn/layernorm.h"
#include "nn/sequential.h"
#include "nn/tied_head.h"
#include "tests/support/module_rig.h"

using namespace noeira;
using noeira::test::ModuleRig;
using noeira::test::RigOptions;

namespace {

std::vector<std::string> names(const ModuleRig& rig) {
  std::vector<std::string> n;
  for (const ParamInfo& p : rig.params().all()) n.push_back(p.name);
  return n;
}

// nanoGPT at toy size: wte/wpe, `layers` blocks "h.<i>", ln_f, a head tied to wte.
std::unique_ptr<Module> tiny_gpt(int64_t vocab, int64_t C, int64_t context, int64_t heads,
                                 int layers, bool bias = true) {
  auto emb = std::make_unique<Embedding>(vocab, C, context);
  const Embedding& e = *emb;
  auto h = std::make_unique<Sequential>();
  for (int i = 0; i < layers; ++i)
    h->add(std::to_string(i), std::make_unique<TransformerBlock>(heads, bias));
  auto seq = std::make_unique<Sequential>();
  seq->add("transformer", std::move(emb));
  seq->add("h", std::move(h));
  seq->add("ln_f", std::make_unique<LayerNorm>(1e-5f, bias));
  seq->add("lm_head", std::make_unique<TiedLmHead>(e));
  return seq;
}

RigOptions ids_input(int64_t vocab, AmpPolicy amp = NoAMP) {
  RigOptions opt;
  opt.in_dtype = DType::kI32;
  opt.vocab = vocab;
  opt.input_needs_grad = false;
  opt.amp = amp;
  return opt;
}

// ||a - b|| / ||b||
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

// The module run twice from the same seed: fp32 (NoAMP) and BF16Policy with its input
// stored in `bf16_in` (bf16, or int32 ids). Output bf16 and within 2e-2 of fp32; parameter
// gradients within 5e-2.
void check_bf16_flow(const std::function<std::unique_ptr<Module>()>& make, const Shape& in,
                     int64_t batch, uint32_t seed, int64_t vocab = 0) {
  RigOptions f32_opt = vocab > 0 ? ids_input(vocab) : RigOptions{};
  RigOptions bf_opt = vocab > 0 ? ids_input(vocab, BF16Policy) : RigOptions{};
  if (vocab == 0) {
    bf_opt.amp = BF16Policy;
    bf_opt.in_dtype = DType::kBF16;
  }
  ModuleRig ref(make(), in, batch, seed, f32_opt);
  ModuleRig bf(make(), in, batch, seed, bf_opt);
  const std::string kind = ref.module().kind();
  INFO(kind);
  const Tensor y32 = ref.forward();
  const Tensor y16 = bf.forward();
  CHECK(y32.dtype == DType::kF32);
  CHECK(y16.dtype == DType::kBF16);
  CHECK(bf.module().out_dtype() == DType::kBF16);
  const double e = rel_err(ModuleRig::to_f32(y16), ModuleRig::to_f32(y32));
  INFO("output relative error " << e);
  CHECK(e < 2e-2);
  ref.backward();
  bf.backward();
  for (const ParamInfo& p : ref.params().all()) {
    const int64_t n = p.grad.shape.numel();
    const float* g32 = ref.grad(p);
    const float* g16 = bf.grad(bf.param(p.name));
    const double ge = rel_err(std::vector<float>(g16, g16 + n), std::vector<float>(g32, g32 + n));
    INFO(p.name << " gradient relative error " << ge);
    CHECK(ge < 5e-2);
  }
}

}  // namespace

TEST_CASE("TransformerBlock: nanoGPT's parameter names, order, shapes and roles", "[gpt-modules]") {
  SECTION("with bias") {
    ModuleRig rig(std::make_unique<TransformerBlock>(2), Shape{4, 8}, 2, 1);
    const std::vector<std::string> want = {
        "ln_1.weight",     "ln_1.bias",      "attn.c_attn.weight", "attn.c_attn.bias",
        "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight",     "ln_2.bias",
        "mlp.c_fc.weight", "mlp.c_fc.bias",  "mlp.c_proj.weight",  "mlp.c_proj.bias"};
    CHECK(names(rig) == want);
    CHECK(rig.param("ln_1.weight").value.shape == Shape{8});
    CHECK(rig.param("ln_1.weight").role == ParamRole::kScale);
    CHECK(rig.param("ln_1.bias").role == ParamRole::kShift);
    CHECK(rig.param("attn.c_attn.weight").value.shape == Shape{24, 8});
    CHECK(rig.param("attn.c_attn.bias").value.shape == Shape{24});
    CHECK(rig.param("attn.c_proj.weight").value.shape == Shape{8, 8});
    CHECK(rig.param("mlp.c_fc.weight").value.shape == Shape{32, 8});
    CHECK(rig.param("mlp.c_proj.weight").value.shape == Shape{8, 32});
    CHECK(rig.param("mlp.c_proj.bias").role == ParamRole::kBias);
    CHECK(rig.out_shape() == Shape{4, 8});
    CHECK(rig.forward().shape == Shape{2, 4, 8});
  }
  SECTION("without bias") {
    ModuleRig rig(std::make_unique<TransformerBlock>(2, false), Shape{4, 8}, 2, 1);
    const std::vector<std::string> want = {"ln_1.weight", "attn.c_attn.weight",
                                           "attn.c_proj.weight", "ln_2.weight",
                                           "mlp.c_fc.weight", "mlp.c_proj.weight"};
    CHECK(names(rig) == want);
  }
}

TEST_CASE("A tiny GPT: names, shapes, one shared wte", "[gpt-modules]") {
  ModuleRig rig(tiny_gpt(13, 8, 6, 2, 2), Shape{6}, 2, 2, ids_input(13));
  const std::vector<std::string> n = names(rig);
  REQUIRE(n.size() == 2 + 2 * 12 + 2);
  CHECK(n[0] == "transformer.wte.weight");
  CHECK(n[1] == "transformer.wpe.weight");
  CHECK(n[2] == "h.0.ln_1.weight");
  CHECK(n[14] == "h.1.ln_1.weight");
  CHECK(n[26] == "ln_f.weight");
  CHECK(n[27] == "ln_f.bias");
  CHECK(rig.param("transformer.wte.weight").value.shape == Shape{13, 8});
  CHECK(rig.param("transformer.wpe.weight").value.shape == Shape{6, 8});
  CHECK(rig.out_shape() == Shape{6, 13});
  const Tensor logits = rig.forward();
  CHECK(logits.shape == Shape{2, 6, 13});
  CHECK(rig.backward().empty());
}

TEST_CASE("GPT modules: plan errors name the module and the fix", "[gpt-modules]") {
  auto planned = [](std::unique_ptr<Module> m, const Shape& in, const RigOptions& opt) {
    try {
      ModuleRig rig(std::move(m), in, 2, 1, opt);
    } catch (const PlanError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(planned(std::make_unique<SelfAttention>(3), Shape{4, 8}, {}),
             Catch::Contains("SelfAttention") && Catch::Contains("divisible"));
  CHECK_THAT(planned(std::make_unique<Embedding>(5, 8, 4), Shape{6}, ids_input(5)),
             Catch::Contains("context"));
  CHECK_THAT(planned(std::make_unique<Embedding>(5, 8, 4), Shape{4}, {}),
             Catch::Contains("int32"));
  RigOptions bf;
  bf.amp = BF16Policy;  // fp32 input under BF16Policy
  CHECK_THAT(planned(std::make_unique<TransformerBlock>(2), Shape{4, 8}, bf),
             Catch::Contains("TransformerBlock") && Catch::Contains("flow dtype"));
  Embedding unplanned(5, 8, 4);
  CHECK_THAT(planned(std::make_unique<TiedLmHead>(unplanned), Shape{4, 8}, {}),
             Catch::Contains("not planned"));
}

TEST_CASE("LayerNorm keeps its input's dtype under BF16Policy", "[gpt-modules]") {
  RigOptions opt;
  opt.amp = BF16Policy;  // fp32 input: fp32 output
  ModuleRig rig(std::make_unique<LayerNorm>(), Shape{3, 8}, 2, 3, opt);
  CHECK(rig.module().out_dtype() == DType::kF32);
  CHECK(rig.forward().dtype == DType::kF32);
}

TEST_CASE("GPT modules under BF16Policy: bf16 outputs close to fp32", "[gpt-modules]") {
  SECTION("LayerNorm") {
    check_bf16_flow([] { return std::make_unique<LayerNorm>(); }, Shape{5, 16}, 3, 10);
  }
  SECTION("LayerNorm without bias") {
    check_bf16_flow([] { return std::make_unique<LayerNorm>(1e-5f, false); }, Shape{5, 16}, 3, 11);
  }
  SECTION("SelfAttention") {
    check_bf16_flow([] { return std::make_unique<SelfAttention>(2); }, Shape{6, 16}, 2, 12);
  }
  SECTION("TransformerBlock") {
    check_bf16_flow([] { return std::make_unique<TransformerBlock>(2); }, Shape{6, 16}, 2, 13);
  }
  SECTION("Embedding") {
    check_bf16_flow([] { return std::make_unique<Embedding>(17, 16, 8); }, Shape{6}, 3, 14, 17);
  }
  SECTION("Embedding + TiedLmHead") {
    check_bf16_flow(
        [] {
          auto emb = std::make_unique<Embedding>(17, 16, 8);
          const Embedding& e = *emb;
          auto seq = std::make_unique<Sequential>();
          seq->add("emb", std::move(emb));
          seq->add("lm_head", std::make_unique<TiedLmHead>(e));
          return seq;
        },
        Shape{6}, 3, 15, 17);
  }
  SECTION("tiny GPT") {
    check_bf16_flow([] { return tiny_gpt(17, 16, 8, 2, 2); }, Shape{8}, 2, 16, 17);
  }
}

TEST_CASE("A tiny GPT on a partial batch (tail rows) gives the first samples' logits",
          "[gpt-modules]") {
  RigOptions opt = ids_input(13);
  opt.tail_rows = 1;
  ModuleRig rig(tiny_gpt(13, 8, 6, 2, 2), Shape{6}, 3, 5, opt);
  const std::vector<float> full = ModuleRig::to_f32(rig.forward());
  const Tensor part = rig.forward(1);
  REQUIRE(part.shape == Shape{1, 6, 13});
  const std::vector<float> first = ModuleRig::to_f32(part);
  for (size_t i = 0; i < first.size(); ++i)
    REQUIRE(first[i] == Approx(full[i]).epsilon(1e-5).margin(1e-6));
}
