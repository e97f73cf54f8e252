// Linear::chain (nn/linear.h): a GELU layer and the Linear after it, chained, give the
// unchained pair's bits (outputs, d(input), every parameter gradient), fp32 and bf16; the
// gradients match finite differences; chaining refuses what it cannot take.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "nn/linear.h"
#include "nn/sequential.h"
#include "tests/support/gradcheck.h"
#include "tests/support/module_rig.h"

using namespace noeira;
using noeira::test::ModuleRig;
using noeira::test::RigOptions;

namespace {

// fc (GELU, C -> H) then proj (H -> C), chained or not; the same parameter names either way.
std::unique_ptr<Sequential> mlp(int64_t C, int64_t H, bool chained, bool bias = true) {
  auto fc = std::make_unique<LinearAct>(H, Act::kGELU, bias);
  auto proj = std::make_unique<Linear>(C, Act::kNone, bias);
  if (chained) Linear::chain(*fc, *proj);
  auto seq = std::make_unique<Sequential>();
  seq->add("fc", std::move(fc));
  seq->add("proj", std::move(proj));
  return seq;
}

std::vector<unsigned char> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.data);
  return std::vector<unsigned char>(p, p + t.numel() * static_cast<int64_t>(dtype_size(t.dtype)));
}

}  // namespace

TEST_CASE("Linear::chain: the unchained layers' bits, fp32 and bf16", "[linear]") {
  for (AmpPolicy amp : {NoAMP, BF16Policy}) {
    INFO("bf16 " << (amp == BF16Policy));
    RigOptions opt;
    opt.amp = amp;
    // 300 rows: more than one GEMM slab of the product.
    ModuleRig plain(mlp(24, 96, false), Shape{24}, 300, 7, opt);
    ModuleRig chained(mlp(24, 96, true), Shape{24}, 300, 7, opt);
    const std::vector<unsigned char> dx_plain = bytes_of(plain.backward());
    const std::vector<unsigned char> dx_chained = bytes_of(chained.backward());
    CHECK(dx_chained == dx_plain);
    CHECK(bytes_of(chained.forward()) == bytes_of(plain.forward()));
    for (const ParamInfo& p : plain.params().all()) {
      INFO(p.name);
      const int64_t n = p.value.shape.numel();
      const float* g0 = plain.grad(p);
      const float* g1 = chained.grad(chained.param(p.name));
      CHECK(std::memcmp(g0, g1, static_cast<size_t>(n) * sizeof(float)) == 0);
    }
    // The chained pair keeps no d(pre-activation) buffer of its own.
    CHECK(chained.activation_bytes() < plain.activation_bytes());
  }
}

TEST_CASE("Chained Linear layers backward match finite differences", "[gradcheck]") {
  ModuleRig rig(mlp(6, 10, true), Shape{6}, 5, 3);
  check_module(rig);
}

TEST_CASE("Linear::chain refuses a layer without GELU, planned layers and a mismatched input",
          "[linear]") {
  Linear relu(8, Act::kReLU), proj(4);
  CHECK_THROWS_AS(Linear::chain(relu, proj), std::logic_error);
  // A planned layer keeps its unchained buffers: chaining it now is refused.
  ModuleRig planned(std::make_unique<LinearAct>(8, Act::kGELU), Shape{4}, 2);
  Linear after(4);
  CHECK_THROWS_AS(Linear::chain(dynamic_cast<Linear&>(planned.module()), after),
                  std::logic_error);
  // proj chained after a layer whose output is not its input: refused at plan.
  auto fc2 = std::make_unique<LinearAct>(8, Act::kGELU);
  auto proj2 = std::make_unique<Linear>(4);
  Linear::chain(*fc2, *proj2);
  auto seq2 = std::make_unique<Sequential>();
  seq2->add("proj", std::move(proj2));  // fc2 left out: proj's input is the rig's (width 5)
  CHECK_THROWS_AS(ModuleRig(std::move(seq2), Shape{5}, 2), PlanError);
}
