// The image modules' forward semantics (shapes, BatchNorm's statistics, the option-A
// shortcut, Dropout's masks, Flatten's views) and their bf16 flow under BF16Policy.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <vector>

#include "kernels/common/philox.h"
#include "nn/batchnorm.h"
#include "nn/conv2d.h"
#include "nn/dropout.h"
#include "nn/flatten.h"
#include "nn/linear.h"
#include "nn/pool.h"
#include "nn/resnet_block.h"
#include "nn/sequential.h"
#include "tests/support/image_reference.h"
#include "tests/support/module_rig.h"

using namespace noeira;
using noeira::test::ModuleRig;
using noeira::test::RigOptions;
using noeira::test::image_ref::same_bits;

namespace {

// max |a - b| / max(max |ref|, floor): a relative error for a whole tensor.
double rel_err(const std::vector<float>& a, const std::vector<float>& ref, double floor = 1e-3) {
  REQUIRE(a.size() == ref.size());
  double diff = 0.0, scale = floor;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - ref[i]));
    scale = std::max(scale, std::abs(static_cast<double>(ref[i])));
  }
  return diff / scale;
}

// ||a - b|| / ||ref|| (2-norms).
double l2_rel_err(const std::vector<float>& a, const std::vector<float>& ref) {
  REQUIRE(a.size() == ref.size());
  double d = 0.0, r = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    d += std::pow(static_cast<double>(a[i]) - ref[i], 2);
    r += std::pow(static_cast<double>(ref[i]), 2);
  }
  return std::sqrt(d / r);
}

}  // namespace

TEST_CASE("Conv2d output shapes and parameters", "[conv-modules]") {
  struct Case {
    Shape in;
    int64_t out, k, s, p;
    Shape expect;
  };
  const Case cases[] = {
      {Shape{3, 8, 8}, 5, 3, 1, 1, Shape{5, 8, 8}},      // "same"
      {Shape{3, 8, 8}, 5, 3, 2, 1, Shape{5, 4, 4}},      // stride 2
      {Shape{3, 8, 8}, 2, 5, 1, 0, Shape{2, 4, 4}},      // valid
      {Shape{1, 28, 28}, 6, 5, 1, 2, Shape{6, 28, 28}},  // LeNet's first layer
      {Shape{3, 7, 7}, 4, 3, 2, 0, Shape{4, 3, 3}},      // rounding down
      {Shape{2, 7, 5}, 3, 2, 2, 0, Shape{3, 3, 2}},      // not square
  };
  for (const Case& c : cases) {
    INFO(c.in.str() << " k " << c.k << " s " << c.s << " p " << c.p);
    ModuleRig rig(std::make_unique<Conv2d>(c.out, c.k, c.s, c.p), c.in, 2);
    CHECK(rig.out_shape() == c.expect);
    const Tensor y = rig.forward();
    CHECK(y.shape == c.expect.with_batch(2));
    CHECK(y.dtype == DType::kF32);
    const ParamInfo& w = rig.param("weight");
    CHECK(w.value.shape == Shape{c.out, c.in[0], c.k, c.k});
    CHECK(w.role == ParamRole::kWeight);
    CHECK(w.fan_in == c.in[0] * c.k * c.k);
    CHECK(w.fan_out == c.out * c.k * c.k);
    CHECK(rig.param("bias").value.shape == Shape{c.out});
  }
  ModuleRig no_bias(std::make_unique<Conv2d>(4, 3, 1, 1, false), Shape{3, 4, 4}, 1);
  CHECK(no_bias.params().all().size() == 1);
}

TEST_CASE("Conv2d refuses a kernel larger than its padded input", "[conv-modules]") {
  CHECK_THROWS_AS(ModuleRig(std::make_unique<Conv2d>(4, 5), Shape{3, 4, 4}, 1), PlanError);
  CHECK_THROWS_AS(ModuleRig(std::make_unique<Conv2d>(4, 3), Shape{12}, 1), PlanError);
  CHECK_THROWS_AS(ModuleRig(std::make_unique<BasicBlock>(6, 2), Shape{3, 4, 4}, 1), PlanError);
}

TEST_CASE("Conv2d planned with tail rows runs a partial batch", "[conv-modules]") {
  RigOptions opt;
  opt.tail_rows = 3;
  ModuleRig rig(std::make_unique<Conv2d>(4, 3, 2, 1, true, Act::kReLU), Shape{3, 6, 6}, 5, 1, opt);
  const std::vector<float> full = ModuleRig::to_f32(rig.forward());
  const Tensor tail = rig.forward(3);
  REQUIRE(tail.shape == Shape{3, 4, 3, 3});
  const std::vector<float> t = ModuleRig::to_f32(tail);
  for (size_t i = 0; i < t.size(); ++i) REQUIRE(t[i] == full[i]);
}

TEST_CASE("Pooling output shapes", "[conv-modules]") {
  ModuleRig max(std::make_unique<MaxPool2d>(2), Shape{3, 7, 6}, 2);
  CHECK(max.out_shape() == Shape{3, 3, 3});
  ModuleRig avg(std::make_unique<AvgPool2d>(3, 2, 1), Shape{3, 8, 8}, 2);
  CHECK(avg.out_shape() == Shape{3, 4, 4});
  ModuleRig global(std::make_unique<GlobalAvgPool>(), Shape{5, 3, 4}, 2);
  CHECK(global.out_shape() == Shape{5, 1, 1});
  // The global mean of each plane.
  const std::vector<float> y = ModuleRig::to_f32(global.forward());
  for (int64_t bc = 0; bc < 10; ++bc) {
    double sum = 0.0;
    for (int64_t i = 0; i < 12; ++i) sum += global.input()[bc * 12 + i];
    CHECK(y[static_cast<size_t>(bc)] == Approx(sum / 12.0).margin(1e-6));
  }
}

TEST_CASE("Flatten reshapes without copying", "[conv-modules]") {
  ModuleRig rig(std::make_unique<Flatten>(), Shape{3, 4, 5}, 2);
  CHECK(rig.out_shape() == Shape{60});
  const Tensor y = rig.forward();
  CHECK(y.shape == Shape{2, 60});
  CHECK(y.data == rig.input());
  const Tensor dx = rig.backward();
  CHECK(dx.shape == Shape{2, 3, 4, 5});
  CHECK(dx.dtype == DType::kF32);

  auto seq = std::make_unique<Sequential>();
  seq->add("conv", std::make_unique<Conv2d>(4, 3, 2, 1));
  seq->add("flat", std::make_unique<Flatten>());
  seq->add("fc", std::make_unique<Linear>(10));
  ModuleRig net(std::move(seq), Shape{3, 8, 8}, 2);
  CHECK(net.out_shape() == Shape{10});
  CHECK(net.param("fc.weight").value.shape == Shape{10, 4 * 4 * 4});
}

TEST_CASE("BatchNorm2d: training uses the batch, updates running stats; eval uses them",
          "[conv-modules]") {
  const int64_t B = 4, C = 3, S = 16, n = B * S;
  ModuleRig rig(std::make_unique<BatchNorm2d>(), Shape{C, 4, 4}, B, 5);
  CHECK(rig.param("weight").role == ParamRole::kScale);
  CHECK(rig.param("bias").role == ParamRole::kShift);
  REQUIRE(rig.params().buffers().size() == 2);
  CHECK(rig.params().buffers()[0].name == "running_mean");
  CHECK(rig.params().buffers()[1].name == "running_var");
  const float* x = rig.input();
  const float* gamma = rig.value(rig.param("weight"));
  const float* beta = rig.value(rig.param("bias"));
  // The batch statistics, in double.
  std::vector<double> mean(C, 0.0), var(C, 0.0);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) mean[c] += x[(b * C + c) * S + s];
    mean[c] /= n;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) var[c] += std::pow(x[(b * C + c) * S + s] - mean[c], 2);
    var[c] /= n;  // biased, as the forward normalises
  }

  const std::vector<float> yt = ModuleRig::to_f32(rig.forward());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t i = (b * C + c) * S + s;
        const double want = (x[i] - mean[c]) / std::sqrt(var[c] + 1e-5) * gamma[c] + beta[c];
        REQUIRE(yt[static_cast<size_t>(i)] == Approx(want).margin(1e-5));
      }
  // running = 0.9 running + 0.1 batch, from (0, 1), the variance unbiased.
  const float* rm = rig.buffer("running_mean");
  const float* rv = rig.buffer("running_var");
  for (int64_t c = 0; c < C; ++c) {
    CHECK(rm[c] == Approx(0.1 * mean[c]).margin(1e-6));
    CHECK(rv[c] == Approx(0.9 + 0.1 * var[c] * n / (n - 1)).epsilon(1e-6));
  }

  rig.context().set_training(false);
  const std::vector<float> rm0(rm, rm + C), rv0(rv, rv + C);
  const std::vector<float> ye = ModuleRig::to_f32(rig.forward());
  for (int64_t c = 0; c < C; ++c) {
    CHECK(rm[c] == rm0[static_cast<size_t>(c)]);  // eval leaves them alone
    CHECK(rv[c] == rv0[static_cast<size_t>(c)]);
  }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t i = (b * C + c) * S + s;
        const double want = (x[i] - rm[c]) / std::sqrt(rv[c] + 1e-5) * gamma[c] + beta[c];
        REQUIRE(ye[static_cast<size_t>(i)] == Approx(want).margin(1e-5));
      }
}

TEST_CASE("Chained BasicBlocks (BasicBlock::chain) give the unchained blocks' bits: output, "
          "d(input) and every gradient, fp32 and bf16 AMP",
          "[conv-modules]") {
  // Three blocks as resnet.cpp chains them across a stage: identity, option A, identity.
  const auto make = [](bool chained) {
    auto seq = std::make_unique<Sequential>();
    std::vector<std::unique_ptr<BasicBlock>> blocks;
    blocks.push_back(std::make_unique<BasicBlock>(8, 1));
    blocks.push_back(std::make_unique<BasicBlock>(16, 2));
    blocks.push_back(std::make_unique<BasicBlock>(16, 1));
    if (chained)
      for (size_t i = 0; i + 1 < blocks.size(); ++i) BasicBlock::chain(*blocks[i], *blocks[i + 1]);
    for (size_t i = 0; i < blocks.size(); ++i) seq->add(std::to_string(i), std::move(blocks[i]));
    return seq;
  };
  for (AmpPolicy amp : {NoAMP, BF16Policy}) {
    INFO("amp " << (amp == BF16Policy));
    RigOptions opt;
    opt.amp = amp;
    ModuleRig plain(make(false), Shape{8, 8, 8}, 3, 5, opt);
    ModuleRig chained(make(true), Shape{8, 8, 8}, 3, 5, opt);
    // The chain took effect: blocks 0 and 1 plan no d(sum) of their own (their outputs:
    // (8, 8, 8) and (16, 4, 4) per image), blocks 1 and 2 no d(input) (conv1 writes it: the
    // same shapes); 3 images, in the flow dtype.
    const size_t elem = amp == BF16Policy ? 2 : 4;
    CHECK(plain.activation_bytes() - chained.activation_bytes() ==
          2 * 3 * (8 * 64 + 16 * 16) * elem);
    CHECK(same_bits(ModuleRig::to_f32(chained.forward()), ModuleRig::to_f32(plain.forward())));
    CHECK(same_bits(ModuleRig::to_f32(chained.backward()), ModuleRig::to_f32(plain.backward())));
    for (const ParamInfo& p : plain.params().all()) {
      INFO(p.name);
      const int64_t n = p.value.shape.numel();
      CHECK(same_bits(std::vector<float>(chained.grad(chained.param(p.name)),
                                         chained.grad(chained.param(p.name)) + n),
                      std::vector<float>(plain.grad(p), plain.grad(p) + n)));
    }
  }
}

TEST_CASE("BasicBlock's option-A shortcut subsamples and pads channels", "[conv-modules]") {
  const int64_t B = 2;
  ModuleRig rig(std::make_unique<BasicBlock>(32, 2), Shape{16, 32, 32}, B, 3);
  REQUIRE(rig.out_shape() == Shape{32, 16, 16});
  std::vector<std::string> names;
  for (const ParamInfo& p : rig.params().all()) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"conv1.weight", "bn1.weight", "bn1.bias",
                                          "conv2.weight", "bn2.weight", "bn2.bias"});
  CHECK(rig.params().buffers().size() == 4);
  CHECK(rig.param("conv1.weight").value.shape == Shape{32, 16, 3, 3});
  CHECK(rig.param("conv2.weight").value.shape == Shape{32, 32, 3, 3});
  // Silence the branch: conv2 = 0 makes bn2's input constant, so bn2 outputs its bias, 0.
  // With a positive input, out = relu(shortcut(x)) = shortcut(x).
  const ParamInfo& w2 = rig.param("conv2.weight");
  std::fill_n(rig.value(w2), w2.value.shape.numel(), 0.0f);
  const ParamInfo& b2 = rig.param("bn2.bias");
  std::fill_n(rig.value(b2), b2.value.shape.numel(), 0.0f);
  float* x = rig.input();
  for (int64_t i = 0; i < rig.input_size(); ++i) x[i] = std::abs(x[i]) + 0.5f;
  const Tensor yt = rig.forward();
  REQUIRE(yt.shape == Shape{B, 32, 16, 16});
  const std::vector<float> y = ModuleRig::to_f32(yt);
  int64_t bad = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < 32; ++c)
      for (int64_t i = 0; i < 16; ++i)
        for (int64_t j = 0; j < 16; ++j) {
          const float got = y[static_cast<size_t>(((b * 32 + c) * 16 + i) * 16 + j)];
          const float want =
              (c < 8 || c >= 24) ? 0.0f : x[((b * 16 + c - 8) * 32 + 2 * i) * 32 + 2 * j];
          if (got != want) ++bad;
        }
  CHECK(bad == 0);
}

TEST_CASE("Dropout: identity in eval, a scaled Philox mask in training", "[conv-modules]") {
  const float p = 0.3f;
  const uint32_t layer = 3;
  RigOptions opt;
  opt.seed = 99;
  ModuleRig rig(std::make_unique<Dropout>(p, layer), Shape{4, 16, 16}, 4, 7, opt);
  const int64_t n = rig.input_size();

  rig.context().set_training(false);
  const Tensor ye = rig.forward();
  CHECK(ye.data == rig.input());  // no copy

  rig.context().set_training(true);
  rig.counters()->step = 11;
  const std::vector<float> y = ModuleRig::to_f32(rig.forward());
  const float* x = rig.input();
  std::vector<bool> keep(static_cast<size_t>(n));
  int64_t kept = 0, bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    keep[k] = dropout_keep(99, 11, layer, static_cast<uint64_t>(i), p);
    kept += keep[k];
    const float want = keep[k] ? x[i] * dropout_scale(p) : 0.0f;
    if (std::abs(y[k] - want) > 1e-6f * std::abs(want)) ++bad;
  }
  CHECK(bad == 0);
  CHECK(static_cast<double>(kept) / static_cast<double>(n) == Approx(1.0 - p).margin(0.03));
  // Backward draws the same mask on dy (dy is random, so nonzero where kept).
  const std::vector<float> dx = ModuleRig::to_f32(rig.backward());
  int64_t mismatched = 0;
  for (size_t k = 0; k < dx.size(); ++k) mismatched += (dx[k] != 0.0f) != keep[k];
  CHECK(mismatched == 0);
  // Another step, another mask.
  rig.counters()->step = 12;
  const std::vector<float> y2 = ModuleRig::to_f32(rig.forward());
  int64_t differ = 0;
  for (size_t k = 0; k < y2.size(); ++k) differ += (y2[k] != 0.0f) != keep[k];
  CHECK(differ > n / 10);
}

namespace {

// Plans `make()` twice on the same values, fp32 and BF16Policy (bf16 input and weight
// copies), and compares forward outputs (max error relative to the largest value),
// d(input) and parameter gradients (2-norm of the error relative to the fp32 one's).
//
// grad_tol: modules with a kink (ReLU, max pooling) get a looser one. bf16 rounding moves
// a pre-activation by ~2^-9 of its size, so now and then one that sits that close to 0
// lands on the other side of a ReLU (or a window's two largest values swap): the forward
// output barely moves (the functions are continuous), but that element's gradient is
// switched on or off, an O(1) change that BatchNorm's backward spreads over its channel.
// One such flip in a 1024-element BasicBlock output costs ~0.1 in d(input)'s 2-norm and
// ~0.2 in a 4-channel BatchNorm's shift gradient. The loose bound still catches wiring
// errors (a wrong buffer, a missed cast: errors of order 1); the kink-free modules,
// near 2^-8, carry the tight checks.
constexpr double kBf16Tol = 2e-2;
constexpr double kBf16KinkTol = 0.3;

void check_bf16_flow(const std::function<std::unique_ptr<Module>()>& make, const Shape& in,
                     int64_t batch, DType in_dtype = DType::kBF16, double grad_tol = kBf16Tol) {
  ModuleRig ref(make(), in, batch, 17);
  RigOptions opt;
  opt.amp = BF16Policy;
  opt.in_dtype = in_dtype;
  ModuleRig low(make(), in, batch, 17, opt);
  INFO(low.module().kind() << " on " << in.str() << ", input " << dtype_name(in_dtype));
  CHECK(low.module().out_dtype() == DType::kBF16);
  const Tensor y = low.forward();
  CHECK(y.dtype == DType::kBF16);
  CHECK(rel_err(ModuleRig::to_f32(y), ModuleRig::to_f32(ref.forward())) < kBf16Tol);

  const Tensor dx = low.backward();
  const Tensor dx_ref = ref.backward();
  CHECK(dx.dtype == in_dtype);
  CHECK(l2_rel_err(ModuleRig::to_f32(dx), ModuleRig::to_f32(dx_ref)) < grad_tol);
  for (const ParamInfo& p : low.params().all()) {
    INFO(p.name);
    const int64_t k = p.grad.shape.numel();
    const std::vector<float> g(low.grad(p), low.grad(p) + k);
    const ParamInfo& q = ref.param(p.name);
    const std::vector<float> g_ref(ref.grad(q), ref.grad(q) + k);
    CHECK(l2_rel_err(g, g_ref) < grad_tol);
  }
}

}  // namespace

TEST_CASE("Image modules flow bf16 under BF16Policy", "[conv-modules][bf16]") {
  check_bf16_flow([] { return std::make_unique<Conv2d>(6, 3, 1, 1); }, Shape{4, 8, 8}, 2);
  check_bf16_flow([] { return std::make_unique<Conv2d>(6, 3, 2, 1, false, Act::kReLU); },
                  Shape{4, 8, 8}, 2, DType::kBF16, kBf16KinkTol);
  // A first layer: the fp32 input is cast at the boundary, d(input) comes back in fp32.
  check_bf16_flow([] { return std::make_unique<Conv2d>(6, 3, 1, 1); }, Shape{3, 8, 8}, 2,
                  DType::kF32);
  check_bf16_flow([] { return std::make_unique<MaxPool2d>(2); }, Shape{4, 8, 8}, 2, DType::kBF16,
                  kBf16KinkTol);
  check_bf16_flow([] { return std::make_unique<AvgPool2d>(3, 2, 1); }, Shape{4, 8, 8}, 2);
  check_bf16_flow([] { return std::make_unique<GlobalAvgPool>(); }, Shape{4, 8, 8}, 2);
  check_bf16_flow([] { return std::make_unique<Flatten>(); }, Shape{4, 8, 8}, 2);
  check_bf16_flow([] { return std::make_unique<BatchNorm2d>(); }, Shape{4, 8, 8}, 4);
  check_bf16_flow([] { return std::make_unique<Dropout>(0.3f, 1); }, Shape{4, 8, 8}, 2);
  check_bf16_flow([] { return std::make_unique<BasicBlock>(4, 1); }, Shape{4, 8, 8}, 4,
                  DType::kBF16, kBf16KinkTol);
  check_bf16_flow([] { return std::make_unique<BasicBlock>(8, 2); }, Shape{4, 8, 8}, 4,
                  DType::kBF16, kBf16KinkTol);
  check_bf16_flow([] { return std::make_unique<BasicBlock>(8, 2); }, Shape{4, 8, 8}, 4,
                  DType::kF32, kBf16KinkTol);
  auto net = [] {
    auto seq = std::make_unique<Sequential>();
    seq->add("conv", std::make_unique<Conv2d>(4, 3, 1, 1, true, Act::kReLU));
    seq->add("pool", std::make_unique<MaxPool2d>(2));
    seq->add("flat", std::make_unique<Flatten>());
    seq->add("fc", std::make_unique<Linear>(5));
    return seq;
  };
  check_bf16_flow(net, Shape{3, 8, 8}, 2, DType::kF32, kBf16KinkTol);
}
