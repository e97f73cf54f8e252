// `noeira-bench sample`: text from a language model's checkpoint (nanoGPT's sample.py).
#pragma once
#include <cstdint>
#include <string>

#include "models/trainer_factory.h"
#include "nn/training/token_sampler.h"

namespace noeira {

struct SampleOptions {
  std::string checkpoint;
  std::string prompt = "\n";
  int64_t tokens = 500;
  SamplingOptions sampling;
  std::string target = "cpu";
  int threads = 0;
  DataOptions data;
};

// Prints the prompt and `tokens` sampled characters; returns the exit code.
int run_sample(const SampleOptions& o);

}  // namespace noeira
