// The op calls of one training step of a recipe, found by running the step without
// computing anything: the model is planned as a trainer plans it (same batch, AMP policy,
// input dtype), its buffers are address space only, and forward then backward run on an
// Ops that records each call the micro-benchmarks time (harness/micro/op_cases.h, and the
// GEMMs by their parameter's name) and computes nothing. Plans and size queries go to the real backend, so its primitives for
// every traced shape exist before any benchmark runs.
#pragma once
#include <string>
#include <vector>

#include "harness/micro/op_cases.h"
#include "models/recipe.h"
#include "nn/amp.h"

namespace noeira {

// A matrix product of the step, named by the parameter it reads or writes (the
// GEMMs of micro_benchmarks.cpp: Linear layers and the tied LM head).
struct GemmCall {
  size_t param = 0;   // the parameter's registration index
  std::string layer;  // its name without ".weight", e.g. "fc1" ("?" if none)
  std::string what;   // forward_NT, weight_grad_TN, input_grad_NN
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0;
  float beta = 0.0f;  // 1: C accumulates
  DType dtype = DType::kF32;
};

struct StepOps {
  std::vector<OpCase> cases;    // distinct (op, shape) in first-call order
  std::vector<int> calls;       // calls per step of each
  std::vector<GemmCall> gemms;  // in call order
  Shape out;                    // the model's output per sample
  int64_t params = 0;           // floats of the parameter arena (what the optimizer runs over)
};

// A gpt-family model is built from its vocabulary, which only its data set knows;
// tinyshakespeare's (datasets/tinyshakespeare.h) stands in: it sizes the embedding and the
// LM head, none of the traced ops.
inline constexpr int64_t kMicroVocab = 65;

// One step's calls under `amp`, plus the trainer's per-step bf16 weight refresh (a cast
// of the whole parameter arena) under BF16Policy. An Error for a recipe that cannot be
// planned (or a traced shape the backend cannot run).
Result<StepOps> trace_training_step(const Recipe& r, AmpPolicy amp, Ops& backend);

}  // namespace noeira
