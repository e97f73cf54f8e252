// Google Benchmark micro-benchmarks of the CPU kernels at the shapes the recipes use, in
// the same binary (`noeira-bench micro`). Benchmarks are registered only when the
// subcommand runs; every argument we do not know goes to Google Benchmark.
#pragma once
#include <string>
#include <vector>

#include "harness/micro/micro_roofline.h"

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
// and the other ops of one traced training step, fp32 and bf16 (harness/micro/
// op_benchmarks.h: <op>/<recipes>/<dtype>/<shape>):
//   act_forward, act_backward, act_backward_saved, add_relu_backward, bias_act (a Linear
//   layer's activation; .../dact: its derivative saved too),
//   linear_backward_params (weight and bias gradients), linear_backward_data (times the
//   layer before's saved derivative: .../dact), layernorm_forward,
//   layernorm_backward, batchnorm_forward_train, batchnorm_backward, attention_forward,
//   attention_backward, maxpool2d_forward, maxpool2d_backward, conv2d_forward,
//   conv2d_backward_data, conv2d_backward_weights, conv2d_backward (with a dx epilogue:
//   .../dx_relu_grad), cast (the bf16 weight refresh too)
// all on one CpuOps with `threads` threads (0 = every core this process may use), each
// reporting bytes_per_second, FLOP/s (matrix work) and roofline_pct against `roofline`
// (harness/micro/micro_roofline.h). Buffers are planned and allocated once per benchmark,
// outside the timed loop.
MicroRegistration register_micro_benchmarks(int threads, const MicroRoofline& roofline);

// Measures this CPU's roofline on `threads` threads (0 = all cores; skipped when only
// listing) and prints it, registers the benchmarks and runs them with Google Benchmark,
// which takes `passthrough` (its flags) as its argv; returns the exit code: kExitUsage for
// flags it does not know.
int run_micro(int threads, const std::vector<std::string>& passthrough);

}  // namespace noeira
