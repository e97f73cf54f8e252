// `noeira-bench micro`: Google Benchmark micro-benchmarks of the CPU kernels at the
// shapes the recipes use, in the same binary. Benchmarks are registered only when the
// subcommand runs; every argument we do not know goes to Google Benchmark.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace noeira {

// Returns a function that runs the parsed command and gives its exit code (kNotThisCommand
// when the subcommand was not given): 0, or 2 for unrecognized Google Benchmark flags.
std::function<int()> add_micro_command(CLI::App& app);

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

}  // namespace noeira
