// Ops::batch_windows on the CPU (the reference the CUDA op is tested against): the same
// windows as the host-batch baseline (fill_batch_windows), targets one token after the
// inputs, starts inside the corpus, a new draw every step, and the twin's starts
// (reference/philox.py windows) token for token.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/common/batch_window.h"
#include "harness/twin/twin.h"
#include "kernels/cpu/cpu_ops.h"
#include "models/install_root.h"
#include "tests/support/run_binary.h"

using namespace noeira;
using namespace noeira::test;

namespace {

std::vector<int32_t> random_corpus(int64_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int32_t> u(0, 50256);
  std::vector<int32_t> c(static_cast<size_t>(n));
  for (int32_t& x : c) x = u(g);
  return c;
}

// Token i is i: each row's first input is its window start.
std::vector<int32_t> identity_corpus(int64_t n) {
  std::vector<int32_t> c(static_cast<size_t>(n));
  std::iota(c.begin(), c.end(), 0);
  return c;
}

struct Batch {
  std::vector<int32_t> inputs, targets;
};

Batch cpu_batch(CpuOps& ops, const std::vector<int32_t>& corpus, uint64_t seed, int64_t step,
                int64_t B, int64_t T, int64_t first_row = 0) {
  Batch b{std::vector<int32_t>(static_cast<size_t>(B * T), -1),
          std::vector<int32_t>(static_cast<size_t>(B * T), -1)};
  const StepCounters counters{step, 0};
  ops.batch_windows(corpus.data(), static_cast<int64_t>(corpus.size()), seed, &counters, B, T,
                    first_row, b.inputs.data(), b.targets.data());
  return b;
}

// A python that can run reference/philox.py (numpy only), looked for as the twin's
// (twin_python_candidates). Empty (and the test skips, or fails under
// NOEIRA_REQUIRE_TWIN=1) when none imports numpy.
std::string python_with_numpy(const std::string& test_name) {
  std::string tried;
  for (const std::string& p : twin_python_candidates("")) {
    std::string cmd = "'";  // built up piecewise: g++ 12 misreports "'" + s (-Wrestrict)
    cmd += p;
    cmd += "' -c 'import numpy'";
    if (run_shell(cmd).exit_code == 0) return p;
    tried += (tried.empty() ? "" : ", ") + p;
  }
  const std::string reason = "no python with numpy for reference/philox.py (tried " + tried + ")";
  if (const char* req = std::getenv("NOEIRA_REQUIRE_TWIN"); req && std::string(req) == "1")
    FAIL("NOEIRA_REQUIRE_TWIN=1 but " << reason);
  std::printf("SKIP [twin] %s: %s\n", test_name.c_str(), reason.c_str());
  std::fflush(stdout);
  return {};
}

}  // namespace

TEST_CASE("batch_windows: the CPU op equals the host-batch baseline", "[batch-windows]") {
  const std::vector<int32_t> corpus = random_corpus(5000, 1);
  const int64_t n = static_cast<int64_t>(corpus.size());
  CpuOps ops(2);
  for (const auto& [B, T] : {std::pair<int64_t, int64_t>{8, 64}, {5, 1}, {3, 4999}, {0, 16}}) {
    for (uint64_t seed : {uint64_t{42}, uint64_t{0x9e3779b97f4a7c15ull}}) {
      for (int64_t step : {int64_t{0}, int64_t{1}, int64_t{77}}) {
        INFO("B " << B << " T " << T << " seed " << seed << " step " << step);
        const Batch op = cpu_batch(ops, corpus, seed, step, B, T);
        std::vector<int32_t> in(static_cast<size_t>(B * T)), tg(static_cast<size_t>(B * T));
        fill_batch_windows(corpus.data(), n, seed, static_cast<uint32_t>(step), B, T, in.data(),
                           tg.data());
        CHECK(op.inputs == in);
        CHECK(op.targets == tg);
      }
    }
  }
}

TEST_CASE("batch_windows: targets follow the inputs by one token inside the corpus",
          "[batch-windows]") {
  const int64_t n = 1000, B = 16, T = 32;
  const std::vector<int32_t> corpus = identity_corpus(n);
  CpuOps ops(1);
  const uint64_t seed = 3;
  const Batch b = cpu_batch(ops, corpus, seed, 9, B, T);
  for (int64_t r = 0; r < B; ++r) {
    const int64_t start = b.inputs[static_cast<size_t>(r * T)];
    INFO("row " << r << " start " << start);
    CHECK(start == batch_window_start(seed, 9, static_cast<uint32_t>(r), n, T));
    CHECK(start >= 0);
    CHECK(start < n - T);  // the last target, corpus[start + T], is inside the corpus
    for (int64_t t = 0; t < T; ++t) {
      CHECK(b.inputs[static_cast<size_t>(r * T + t)] == start + t);
      CHECK(b.targets[static_cast<size_t>(r * T + t)] == start + t + 1);
    }
  }
  // The smallest corpus: n = T + 1 holds one window, which every row takes.
  const Batch one = cpu_batch(ops, identity_corpus(T + 1), seed, 4, 3, T);
  for (int64_t r = 0; r < 3; ++r) CHECK(one.inputs[static_cast<size_t>(r * T)] == 0);
}

TEST_CASE("batch_windows: each step draws new windows; the step is taken as uint32",
          "[batch-windows]") {
  const std::vector<int32_t> corpus = random_corpus(100000, 2);
  CpuOps ops(1);
  const int64_t B = 8, T = 16;
  const Batch s0 = cpu_batch(ops, corpus, 5, 0, B, T);
  const Batch s1 = cpu_batch(ops, corpus, 5, 1, B, T);
  const Batch s2 = cpu_batch(ops, corpus, 5, 2, B, T);
  CHECK(s0.inputs != s1.inputs);
  CHECK(s1.inputs != s2.inputs);
  CHECK(s0.inputs != s2.inputs);
  // Same step, same windows; another seed, other windows.
  CHECK(cpu_batch(ops, corpus, 5, 1, B, T).inputs == s1.inputs);
  CHECK(cpu_batch(ops, corpus, 6, 1, B, T).inputs != s1.inputs);
  // Rows of one step differ from each other.
  CHECK(std::vector<int32_t>(s0.inputs.begin(), s0.inputs.begin() + T) !=
        std::vector<int32_t>(s0.inputs.begin() + T, s0.inputs.begin() + 2 * T));
  // Steps past 2^32 wrap (the Philox stream word is 32 bits).
  CHECK(cpu_batch(ops, corpus, 5, (int64_t{1} << 32) + 1, B, T).inputs == s1.inputs);
}

TEST_CASE("batch_windows: one thread and many give the same batch", "[batch-windows]") {
  const std::vector<int32_t> corpus = random_corpus(300000, 3);
  CpuOps one(1), many(4);
  const int64_t B = 64, T = 2048;  // above the op's threading threshold
  const Batch a = cpu_batch(one, corpus, 11, 3, B, T);
  const Batch b = cpu_batch(many, corpus, 11, 3, B, T);
  CHECK(a.inputs == b.inputs);
  CHECK(a.targets == b.targets);
}

TEST_CASE("batch_windows: the starts equal the twin's (reference/philox.py windows)",
          "[batch-windows][twin]") {
  const std::string python = python_with_numpy(Catch::getResultCapture().getCurrentTestName());
  if (python.empty()) return;
  const std::string script = (install_root() / "reference" / "philox.py").string();
  const int64_t rows = 13;  // not a multiple of 4: a partial last Philox block
  struct Case {
    uint64_t seed;
    int64_t step, n, T;
  };
  const Case cases[] = {{0, 0, 1000, 64},
                        {1337, 5, 1115394, 256},
                        {0x9e3779b97f4a7c15ull, 123456, 300000, 128},
                        {0xffffffffffffffffull, 4294967295, 70000, 1023}};
  CpuOps ops(1);
  for (const Case& c : cases) {
    INFO("seed " << c.seed << " step " << c.step << " n " << c.n << " T " << c.T);
    std::string cmd = "'";  // built up piecewise: g++ 12 misreports "'" + s (-Wrestrict)
    cmd += python;
    cmd += "' '" + script + "' windows " + std::to_string(c.seed) + " " +
           std::to_string(c.step) + " " + std::to_string(rows) + " " + std::to_string(c.n) +
           " " + std::to_string(c.T);
    const CommandResult res = run_shell(cmd);
    INFO(res.output);
    REQUIRE(res.exit_code == 0);
    std::istringstream in(res.output);
    std::vector<int64_t> twin;
    for (int64_t v; in >> v;) twin.push_back(v);
    REQUIRE(twin.size() == static_cast<size_t>(rows));
    // Ours: the shared function and the op itself (identity corpus: input 0 = start).
    const Batch b = cpu_batch(ops, identity_corpus(c.n), c.seed, c.step, rows, c.T);
    for (int64_t r = 0; r < rows; ++r) {
      INFO("row " << r);
      CHECK(batch_window_start(c.seed, static_cast<uint32_t>(c.step), static_cast<uint32_t>(r),
                               c.n, c.T) == twin[static_cast<size_t>(r)]);
      CHECK(b.inputs[static_cast<size_t>(r * c.T)] == twin[static_cast<size_t>(r)]);
    }
  }
}

TEST_CASE("batch_windows: a rank's rows first_row.. are those rows of the global batch",
          "[batch-windows]") {
  // Data parallelism: N ranks of B rows each draw what one process of N * B rows draws.
  const std::vector<int32_t> corpus = random_corpus(5000, 12);
  const int64_t B = 3, T = 16, N = 4;
  CpuOps ops(2);
  const Batch global = cpu_batch(ops, corpus, 21, 7, N * B, T);
  for (int64_t r = 0; r < N; ++r) {
    INFO("rank " << r);
    const Batch part = cpu_batch(ops, corpus, 21, 7, B, T, r * B);
    const auto first = static_cast<std::ptrdiff_t>(r * B * T);
    CHECK(std::equal(part.inputs.begin(), part.inputs.end(), global.inputs.begin() + first));
    CHECK(std::equal(part.targets.begin(), part.targets.end(), global.targets.begin() + first));
    std::vector<int32_t> in(static_cast<size_t>(B * T)), tg(in.size());
    fill_batch_windows(corpus.data(), static_cast<int64_t>(corpus.size()), 21, 7, B, T, in.data(),
                       tg.data(), r * B);
    CHECK(in == part.inputs);
    CHECK(tg == part.targets);
  }
}
