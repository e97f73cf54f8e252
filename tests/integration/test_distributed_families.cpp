// Every model family trains data-parallel through the same GradientSync
// (parallel/data_parallel_sync.h), run as users run it: `mpirun -np 2 noeira-bench train
// --model M --zero K`, on this machine's two cores (one thread per rank). Rank r takes
// rows r*B .. r*B + B - 1 of each global batch of the epoch's Philox permutation, and
// ZeRO-1, -2 and -3 are DDP bit for bit. (The gpt family's tests, with DDP against one
// process with the N-times batch: test_distributed.cpp.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "nn/checkpoint.h"
#include "tests/support/distributed_fixture.h"
#include "tests/support/mnist_fixture.h"

using namespace noeira;
using namespace noeira::test;

namespace {

// A short image run: the first `steps` steps of the recipe, the batch given per rank.
CommandResult image_run(int ranks, const std::string& model, int steps, const std::string& args) {
  return train_ranks(ranks, "train --model " + model + " --threads 1 --steps " + std::to_string(steps) +
                                " " + args);
}

// max |a - b| over the tensors of `group` ("param": parameters; "buffer": BatchNorm's
// running statistics).
double max_abs_diff(const Checkpoint& a, const Checkpoint& b, const std::string& group) {
  double worst = 0.0;
  for (const CheckpointTensor& t : b.tensors) {
    if (t.group != group) continue;
    const CheckpointTensor* u = a.find(t.name);
    REQUIRE(u != nullptr);
    REQUIRE(u->bytes.size() == t.bytes.size());
    const auto* x = reinterpret_cast<const float*>(u->bytes.data());
    const auto* y = reinterpret_cast<const float*>(t.bytes.data());
    for (size_t i = 0; i < t.bytes.size() / sizeof(float); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(x[i]) - y[i]));
  }
  return worst;
}

}  // namespace

// Synchronised BatchNorm (nn/batchnorm.h): each rank normalises by the statistics of the
// global batch, so DDP over 2 ranks of 32 rows is one process with 64 rows to fp32
// round-off (sums taken in another order). ResNet-20 training is chaotic (Adam's first
// steps turn a gradient's rounding into a whole update where it is near zero): left to
// run, 1e-7 after one step becomes 2e-3 after five. So the comparison goes step by step:
// step k of the one process starts from the DDP state after k - 1 steps (its checkpoint,
// resumed with the doubled batch) and must land on the DDP state after k steps.
TEST_CASE("resnet20: DDP over 2 ranks is one process with the doubled batch, step by step "
          "(synchronised BatchNorm)", "[distributed][mpi][families][syncbn]") {
  SKIP_WITHOUT_MPIRUN();
  TempDir dir;
  const std::string data = "--dataset cifar10-subset ";
  const auto ckpt = [&](const std::string& name, int k) {
    return (dir / (name + std::to_string(k) + ".ckpt")).string();
  };
  double worst_params = 0.0, worst_buffers = 0.0;
  for (int k = 1; k <= 5; ++k) {
    INFO("step " << k);
    // DDP: k steps from the init (runs repeat bit for bit, so this passes through ddp k-1).
    const std::string ddp = "--batch 32 --zero 0 --check-replicas --save '" + ckpt("ddp", k) + "'";
    const CommandResult r = image_run(2, "resnet20", k, data + ddp);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    // One process, 64 rows: step k from the DDP state after k - 1 steps, its header made
    // a one-process checkpoint's (resuming checks the rank count; the rows are the same).
    std::string resume;
    if (k > 1) {
      Result<Checkpoint> prev = read_checkpoint(ckpt("ddp", k - 1));
      REQUIRE(prev.ok());
      prev->meta.erase("ranks");
      prev->meta["batch"] = 64;
      REQUIRE(write_checkpoint(ckpt("from", k), *prev).ok());
      resume = "--resume '" + ckpt("from", k) + "' ";
    }
    const std::string one = "--batch 64 " + resume + "--save '" + ckpt("one", k) + "'";
    const CommandResult s = image_run(0, "resnet20", k, data + one);
    INFO(s.output);
    REQUIRE(s.exit_code == 0);
    Result<Checkpoint> a = read_checkpoint(ckpt("ddp", k)), b = read_checkpoint(ckpt("one", k));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->meta["step"] == k);
    CHECK(b->meta["step"] == k);
    worst_params = std::max(worst_params, max_abs_diff(*a, *b, "param"));
    worst_buffers = std::max(worst_buffers, max_abs_diff(*a, *b, "buffer"));
  }
  // Printed every run: the measured figure next to the bound.
  WARN("resnet20, 2 ranks x 32 vs one process x 64, 5 steps each from the DDP state: max abs "
       "diff " << worst_params << " (parameters), " << worst_buffers
       << " (running statistics); bound 1e-5");
  CHECK(worst_params < 1e-5);
  CHECK(worst_buffers < 1e-5);
}

TEST_CASE("resnet20: ZeRO-1, -2 and -3 are DDP bit for bit over 2 ranks (10 steps)",
          "[distributed][mpi][families]") {
  SKIP_WITHOUT_MPIRUN();
  TempDir dir;
  std::vector<std::vector<char>> bytes;
  for (int zero = 0; zero <= 3; ++zero) {
    INFO("ZeRO-" << zero);
    const std::string ck = (dir / ("z" + std::to_string(zero) + ".ckpt")).string();
    const CommandResult r = image_run(2, "resnet20", 10, "--dataset cifar10-subset --batch 32 --zero " +
                                                             std::to_string(zero) + " --save '" + ck + "'");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("ZeRO stage " + std::to_string(zero)));
    bytes.push_back(file_bytes(ck));
  }
  for (int zero = 1; zero <= 3; ++zero) {
    INFO("ZeRO-" << zero << " vs DDP");
    CHECK(bytes[static_cast<size_t>(zero)] == bytes[0]);
  }
}

TEST_CASE("mlp, vit-tiny and cifar-cnn train data-parallel, the ranks' parameters equal; a "
          "global batch too large for the data is refused", "[distributed][mpi][families]") {
  SKIP_WITHOUT_MPIRUN();
  for (const char* model : {"mlp", "vit-tiny", "cifar-cnn"}) {
    INFO(model);
    const std::string data = std::string(model) == "mlp" ? "" : "--dataset cifar10-subset ";
    const CommandResult r = image_run(2, model, 8, data + "--batch 32 --zero 1 --check-replicas");
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("global batch 64 rows"));
  }
  const CommandResult big = image_run(2, "mlp", 1, "--zero 0 --batch 40000");
  INFO(big.output);
  CHECK(big.exit_code != 0);
  CHECK_THAT(big.output, Catch::Contains("batch 40000 x 2 ranks exceeds the training set (60000 samples)"));
}
