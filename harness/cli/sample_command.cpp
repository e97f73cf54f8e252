#include "harness/cli/sample_command.h"

#include <memory>

#include "harness/cli/cli.h"
#include "harness/train/sample.h"

namespace noeira {

std::function<int()> add_sample_command(CLI::App& app) {
  auto o = std::make_shared<SampleOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sample", "Generate text from a gpt-family checkpoint (as nanoGPT's sample.py): the "
                "prompt, then --tokens sampled characters");
  cmd->add_option("--checkpoint", o->checkpoint, "A checkpoint of a gpt-family model (train --save)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--prompt", o->prompt, "Text to continue (default: a newline)");
  cmd->add_option("--tokens", o->tokens, "Tokens (characters) to generate")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--temperature", o->sampling.temperature,
                  "Divides the logits: < 1 sharper, > 1 flatter, 0 greedy")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--top-k", o->sampling.top_k, "Keep only the K most likely tokens (0 = all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o->sampling.seed, "Seed of the draws (Philox): same seed, same text")
      ->capture_default_str();
  cmd->add_option("--target", o->target, "cpu, gpu or auto")
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "CPU threads (default: all available)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--data-dir", o->data.data_dir,
                  "Directory holding the model's text (the vocabulary must be the checkpoint's)");
  return [cmd, o]() { return cmd->parsed() ? run_sample(*o) : kNotThisCommand; };
}

}  // namespace noeira
