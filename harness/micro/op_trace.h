// The op calls of one training step of a recipe, found by running the step without
// computing anything: the model is planned as a trainer plans it (same batch, AMP policy,
// input dtype), its buffers are address space only, and forward then backward run on an
// Ops that records each call the micro-benchmarks time (harness/micro/op_cases.h) and
// computes nothing. Plans and size queries go to the real backend, so its primitives for
// every traced shape exist before any benchmark runs.
#pragma once
#include <string>
#include <vector>

#include "harness/micro/op_cases.h"
#include "models/recipe.h"
#include "nn/amp.h"

namespace noeira {

struct StepOps {
  std::vector<OpCase> cases;  // distinct (op, shape) in first-call order
  std::vector<int> calls;     // calls per step of each
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
