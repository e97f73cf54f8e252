// Data-parallel runs as users start them: `mpirun -np N noeira-bench ...`, on this
// machine's two cores (--oversubscribe --bind-to none, one thread per rank; as root Open
// MPI also needs --allow-run-as-root), and the comparisons the tests make of their
// checkpoints.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "nn/checkpoint.h"
#include "tests/support/run_binary.h"
#include "tests/support/temp_dir.h"

namespace noeira::test {

// This build's MPI engine and an mpirun to start ranks (scripts/setup installs both; the
// GPU bundle builds without MPI).
inline bool have_mpirun() {
#if defined(NOEIRA_WITH_MPI)
  return run_shell("command -v mpirun").exit_code == 0;
#else
  return false;
#endif
}

// mpirun as the tests need it on a small machine (not what users type).
inline std::string mpirun(int ranks) {
  return "mpirun -np " + std::to_string(ranks) +
         " --oversubscribe --bind-to none --allow-run-as-root '" + bench_binary() + "' ";
}

// `noeira-bench <args>` on `ranks` MPI ranks, or as one plain process for 0.
inline CommandResult train_ranks(int ranks, const std::string& args) {
  return ranks == 0 ? run_bench(args) : run_shell(mpirun(ranks) + args + " 2>&1");
}

// max over parameters of max |a - b| / max |b|.
inline double max_rel_deviation(const Checkpoint& a, const Checkpoint& b) {
  double worst = 0.0;
  for (const CheckpointTensor& t : b.tensors) {
    if (t.group != "param") continue;
    const CheckpointTensor* u = a.find(t.name);
    REQUIRE(u != nullptr);
    REQUIRE(u->bytes.size() == t.bytes.size());
    const auto* x = reinterpret_cast<const float*>(u->bytes.data());
    const auto* y = reinterpret_cast<const float*>(t.bytes.data());
    const size_t n = t.bytes.size() / sizeof(float);
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; ++i) {
      diff = std::max(diff, std::abs(static_cast<double>(x[i]) - y[i]));
      scale = std::max(scale, std::abs(static_cast<double>(y[i])));
    }
    worst = std::max(worst, scale > 0.0 ? diff / scale : diff);
  }
  return worst;
}

}  // namespace noeira::test

#define SKIP_WITHOUT_MPIRUN()                                                            \
  if (!noeira::test::have_mpirun()) {                                                    \
    WARN("SKIP: no MPI in this build or no mpirun (scripts/setup installs Open MPI)");   \
    return;                                                                              \
  }
