// Google Benchmark micro-benchmarks of the CPU kernels at the shapes the recipes use, in
// the same binary (`noeira-bench micro`). Benchmarks are registered only when the
// subcommand runs; every argument we do not know goes to Google Benchmark.
#pragma once
#include <string>
#include <vector>

namespace noeira {

// What register_micro_benchmarks did (harness/micro/micro_benchmarks.cpp).
struct MicroRegistration {
  int benchmarks = 0;                 // benchmarks registered
  std::vector<std::string> recipes;   // recipes they were taken from
  std::vector<std::string> skipped;   // "<recipe>: why", for recipes or kernels left out
  std::string backend;                // e.g. "cpu (oneDNN, 2 threads)"
};

// Registers, with benchmark::RegisterBenchmark, for every recipe in models/recipes:
//   gemm/<recipe>/<layer>/{forward_NT,weight_grad_TN,input_grad_NN}/M=../N=../K=..
//   softmax_xent/<recipe>/B=../C=..   (mse/... for regression recipes)
//   adam/<recipe>/n=..                 (sgd/... for SGD recipes)
//   gather_rows/<recipe>/B=../row=../src=..
// all on one CpuOps with `threads` threads (0 = every core this process may use).
// Buffers are planned and allocated once per benchmark, outside the timed loop.
MicroRegistration register_micro_benchmarks(int threads);

// Registers the benchmarks on `threads` threads (0 = all cores) and runs them with
// Google Benchmark, which takes `passthrough` (its flags) as its argv; returns the exit
// code: kExitUsage for flags it does not know.
int run_micro(int threads, const std::vector<std::string>& passthrough);

}  // namespace noeira
