// The image modules' analytic backward agrees with central finite differences (the
// pattern of test_gradcheck.cpp): tiny images (a few channels, 4x4 to 6x6 planes, batch 2)
// keep every check cheap and the finite differences stable in fp32.
#include <catch2/catch.hpp>

#include <random>

#include "nn/batchnorm.h"
#include "nn/conv2d.h"
#include "nn/dropout.h"
#include "nn/flatten.h"
#include "nn/linear.h"
#include "nn/pool.h"
#include "nn/resnet_block.h"
#include "nn/sequential.h"
#include "tests/support/gradcheck.h"

using namespace noeira;
using noeira::test::grad_close;
using noeira::test::check_module;
using noeira::test::ModuleRig;
using noeira::test::RigOptions;

namespace {

// The step and tolerances are test_gradcheck.cpp's for every module here, BatchNorm
// included. BatchNorm couples the elements of a channel: perturbing one input moves the
// batch mean and variance, so every output of the channel changes and L = sum(y * R)
// carries the fp32 rounding of all of them (~sqrt(n) 1e-7) into the difference quotient,
// which divides it by 2h. At these sizes (n <= 256 outputs per perturbation) that is
// ~1e-4 with h = 1e-3, well below atol. A larger step would hurt BasicBlock instead: its
// ReLUs have kinks, and h = 1e-2 on a BatchNorm shift moves a whole channel's
// pre-activations, some across 0 (tried: 27 failures). Margin: with these seeds every
// check also passes with rtol and atol three times tighter.

}  // namespace

TEST_CASE("Conv2d backward matches finite differences", "[gradcheck]") {
  struct Case {
    int64_t out, kernel, stride, pad;
    bool bias;
    Act act;
    Shape in;
  };
  const Case cases[] = {
      {4, 3, 1, 0, true, Act::kNone, Shape{3, 5, 5}},   // stride 1, no padding
      {4, 3, 1, 1, false, Act::kNone, Shape{3, 5, 5}},  // padded, no bias
      {3, 3, 2, 1, true, Act::kNone, Shape{2, 6, 6}},   // stride 2, padded
      {3, 3, 2, 0, false, Act::kNone, Shape{2, 5, 5}},  // stride 2, no padding, no bias
      {4, 3, 1, 1, true, Act::kReLU, Shape{3, 5, 5}},   // fused relu
      {2, 1, 1, 0, true, Act::kNone, Shape{3, 4, 4}},   // 1x1
  };
  uint32_t seed = 30;
  for (const Case& c : cases) {
    INFO("Conv2d(" << c.out << ", k " << c.kernel << ", s " << c.stride << ", p " << c.pad
                   << ", bias " << c.bias << ") on " << c.in.str());
    ModuleRig rig(std::make_unique<Conv2d>(c.out, c.kernel, c.stride, c.pad, c.bias, c.act), c.in,
                  2, seed++);
    check_module(rig);
  }
}

TEST_CASE("MaxPool2d backward matches finite differences", "[gradcheck]") {
  ModuleRig rig(std::make_unique<MaxPool2d>(2), Shape{3, 6, 6}, 2, 40);
  check_module(rig);
  ModuleRig overlap(std::make_unique<MaxPool2d>(3, 2, 1), Shape{2, 5, 5}, 2, 41);
  check_module(overlap);
}

TEST_CASE("AvgPool2d and GlobalAvgPool backward match finite differences", "[gradcheck]") {
  ModuleRig plain(std::make_unique<AvgPool2d>(2), Shape{3, 4, 4}, 2, 50);
  check_module(plain);
  ModuleRig padded(std::make_unique<AvgPool2d>(3, 2, 1), Shape{2, 5, 5}, 2, 51);
  check_module(padded);
  ModuleRig global(std::make_unique<GlobalAvgPool>(), Shape{3, 4, 5}, 2, 52);
  check_module(global);
}

TEST_CASE("Flatten between Conv2d and Linear passes gradients through", "[gradcheck]") {
  auto seq = std::make_unique<Sequential>();
  seq->add("conv", std::make_unique<Conv2d>(3, 3, 1, 1, true, Act::kReLU));
  seq->add("flat", std::make_unique<Flatten>());
  seq->add("fc", std::make_unique<Linear>(4));
  ModuleRig rig(std::move(seq), Shape{2, 4, 4}, 2, 60);
  check_module(rig);
}

TEST_CASE("BatchNorm2d (train) backward matches finite differences", "[gradcheck]") {
  ModuleRig rig(std::make_unique<BatchNorm2d>(), Shape{3, 4, 4}, 3, 70);
  check_module(rig, 24);
}

TEST_CASE("Dropout backward matches finite differences", "[gradcheck]") {
  RigOptions opt;
  opt.seed = 1234;
  ModuleRig rig(std::make_unique<Dropout>(0.3f, 2), Shape{3, 4, 4}, 2, 80, opt);
  rig.counters()->step = 5;  // fixed: every forward draws the same mask
  check_module(rig);
}

TEST_CASE("BasicBlock backward matches finite differences", "[gradcheck]") {
  SECTION("identity shortcut") {
    ModuleRig rig(std::make_unique<BasicBlock>(4, 1), Shape{4, 5, 5}, 2, 90);
    check_module(rig, 16);
  }
  SECTION("option A, 16 -> 32 channels, stride 2") {
    ModuleRig rig(std::make_unique<BasicBlock>(32, 2), Shape{16, 4, 4}, 2, 91);
    check_module(rig, 16);
  }
}
