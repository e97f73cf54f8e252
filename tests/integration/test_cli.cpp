// The command line: bad input gives a clear message and exit 2; train works end to end.
#include <catch2/catch.hpp>

#include "tests/support/mnist_fixture.h"
#include "tests/support/run_binary.h"

using namespace noeira::test;

TEST_CASE("Bad command-line arguments exit 2 with a clear message", "[cli]") {
  struct Case {
    const char* args;
    const char* says;
  };
  const Case cases[] = {
      {"", "A subcommand is required"},
      {"frobnicate", "frobnicate"},
      {"train --epochs -3", "--epochs"},
      {"train --epochs many", "--epochs"},
      {"train --threads -1", "--threads"},
      {"train --dataset cifar100", "--dataset"},
      {"train --target tpu", "--target"},
      {"train --model nosuchmodel", "unknown model 'nosuchmodel'"},
      {"train --resume /nonexistent/x.ckpt", "--resume"},
      {"train --bogus-flag", "--bogus-flag"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run_bench(c.args);
    INFO("noeira-bench " << c.args << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains(c.says));
  }
}

TEST_CASE("--help explains the subcommands and options", "[cli]") {
  const CommandResult top = run_bench("--help");
  CHECK(top.exit_code == 0);
  CHECK_THAT(top.output, Catch::Contains("train") && Catch::Contains("list") &&
                             Catch::Contains("env"));
  const CommandResult train = run_bench("train --help");
  CHECK(train.exit_code == 0);
  CHECK_THAT(train.output, Catch::Contains("--data-dir") && Catch::Contains("--resume"));
}

TEST_CASE("list and env describe models and the machine", "[cli]") {
  const CommandResult list = run_bench("list");
  CHECK(list.exit_code == 0);
  CHECK_THAT(list.output, Catch::Contains("mlp") && Catch::Contains("fashion-mnist"));
  const CommandResult env = run_bench("env --no-probe");
  CHECK(env.exit_code == 0);
  CHECK_THAT(env.output, Catch::Contains("cpu_model") && Catch::Contains("blas"));
#if !defined(NOEIRA_WITH_CUDA)
  CHECK_THAT(env.output, Catch::Contains("built without CUDA"));
#endif
}

TEST_CASE("train with a data directory that lacks the files names the file and exits 1",
          "[cli]") {
  TempDir empty;
  const CommandResult r = run_shell(std::string("NOEIRA_DATA='") + empty.path().string() +
                                    "' HOME='" + empty.path().string() + "' '" +
                                    bench_binary() + "' train --epochs 1 --data-dir '" +
                                    empty.path().string() + "' --save '" +
                                    (empty / "out.ckpt").string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("train-images-idx3-ubyte.gz"));
  CHECK_FALSE(std::filesystem::exists(empty / "out.ckpt"));
}

TEST_CASE("train runs an epoch, saves, and resumes from the checkpoint", "[cli][mnist][slow]") {
  TempDir dir;
  const std::string ckpt = (dir / "e1.ckpt").string();
  const CommandResult r = run_bench("train --epochs 1 --threads 1 --seed 3 --save '" + ckpt + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("epoch 1/1") && Catch::Contains("test top1") &&
                           Catch::Contains("memory plan") && Catch::Contains("saved checkpoint"));
  const CommandResult again = run_bench("train --epochs 1 --resume '" + ckpt + "'");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.output, Catch::Contains("nothing to do"));
  const CommandResult bad = run_bench("train --epochs 2 --dataset fashion-mnist --resume '" + ckpt + "'");
  INFO(bad.output);
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("dataset"));
}

TEST_CASE("fetch-data: finds the data sets, names what it cannot get, makes no folder",
          "[cli][datasets]") {
  // The shared data (NOEIRA_DATA as ctest sets it): everything the tests need is there.
  const CommandResult ok = run_bench("fetch-data");
  INFO(ok.output);
  if (ok.exit_code == 0) {
    CHECK_THAT(ok.output, Catch::Contains("mnist") && Catch::Contains("tinyshakespeare") &&
                              Catch::Contains("cifar10-subset") && Catch::Contains(" ok ("));
  } else {
    WARN("some data set is missing here: " << ok.output);
  }
  // An empty data directory and cache: the CIFAR-10 subset is published nowhere, so it is
  // named as missing (exit 1) with the fix, and nothing is created in either directory.
  TempDir dir;
  std::filesystem::create_directories(dir / "data");
  std::filesystem::create_directories(dir / "home");
  const CommandResult missing = run_shell(
      "env NOEIRA_DATA='" + (dir / "data").string() + "' HOME='" + (dir / "home").string() +
      "' XDG_CACHE_HOME= '" + bench_binary() + "' fetch-data --datasets cifar10-subset");
  INFO(missing.output);
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.output, Catch::Contains("cifar10-subset") && Catch::Contains("MISSING") &&
                                 Catch::Contains("NOEIRA_DATA"));
  CHECK(std::filesystem::is_empty(dir / "data"));
  CHECK(std::filesystem::is_empty(dir / "home"));
  const CommandResult bad = run_bench("fetch-data --datasets imagenet");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("unknown data set 'imagenet'"));
}
