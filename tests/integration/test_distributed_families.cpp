// Every model family trains data-parallel through the same GradientSync
// (parallel/data_parallel_sync.h), run as users run it: `mpirun -np 2 noeira-bench train
// --model M --zero K`, on this machine's two cores (one thread per rank). Rank r takes
// rows r*B .. r*B + B - 1 of each global batch of the epoch's Philox permutation, and
// ZeRO-1, -2 and -3 are DDP bit for bit. (The gpt family's tests, with DDP against one
// process with the N-times batch: test_distributed.cpp.)
#include <catch2/catch.hpp>

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

}  // namespace

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
