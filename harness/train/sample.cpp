#include "harness/train/sample.h"

#include <cstdio>
#include <memory>

#include "nn/training/vocab_json.h"
#include "harness/exit_codes.h"
#include "harness/cli/cli_options.h"
#include "models/family.h"
#include "models/trainer_factory.h"
#include "nn/checkpoint.h"
#include "nn/training/token_sampler.h"

namespace noeira {

namespace {

// A corpus that carries only a vocabulary: the trainer plans and uploads a corpus, and
// sampling never reads it, so a few windows of token ids stand in for the text.
TokenCorpus vocabulary_only_corpus(const std::string& name, const std::vector<char>& vocab,
                                   int64_t context) {
  TokenCorpus c;
  c.name = name;
  c.vocab = vocab;
  const int64_t n = 2 * (context + 1) + 1;
  for (int64_t i = 0; i < n; ++i)
    c.train.push_back(static_cast<int32_t>(i % static_cast<int64_t>(vocab.size())));
  c.val = c.train;
  return c;
}

}  // namespace

int run_sample(const SampleOptions& o) {
  Result<Checkpoint> ck = read_checkpoint(o.checkpoint);
  if (!ck) return report_error(ck.error().message, kExitFailure);
  const std::string model = ck->meta.value("model", "");
  Result<Recipe> recipe = load_recipe_for_model(model);
  if (!recipe) return report_error("checkpoint " + o.checkpoint + ": " + recipe.error().message, kExitFailure);
  if (!family_traits(*recipe).language_model)
    return report_error("checkpoint " + o.checkpoint + " is of model " + model + " (" +
                            recipe->family + " family), not a language model; sample needs a "
                            "checkpoint of a gpt-family model, e.g. from `noeira-bench train "
                            "--model gpt-tiny --save F`",
                        kExitUsage);
  Result<Device> device = resolve_target(o.target);
  if (!device) return report_error(device.error().message, kExitUsage);
  // The model is built around the vocabulary the checkpoint stores: no data set needed
  // (as nanoGPT's sample.py with its meta.pkl). With --dataset, or for a checkpoint without
  // one, the corpus is loaded and its vocabulary must be the checkpoint's.
  std::vector<char> saved;
  if (ck->meta.contains("vocab")) {
    Result<std::vector<char>> vocab = vocab_from_json(ck->meta.at("vocab"));
    if (!vocab)
      return report_error("checkpoint " + o.checkpoint + ": " + vocab.error().message, kExitFailure);
    saved = std::move(vocab).value();
  }
  Result<DataSplit> data = DataSplit{};
  if (!saved.empty() && o.data.dataset.empty()) {
    data->corpus = vocabulary_only_corpus(ck->meta.value("dataset", ""), saved,
                                          recipe->gpt.context);
  } else {
    data = load_recipe_data(*recipe, o.data.dataset, make_data_source(o.data));
    if (!data) return report_error(data.error().message, kExitFailure);
    if (Status s = check_vocab(saved, data->corpus); !s)
      return report_error("checkpoint " + o.checkpoint + ": " + s.error().message, kExitFailure);
  }
  Result<std::vector<int32_t>> prompt = encode(data->corpus, o.prompt);
  if (!prompt) return report_error("--prompt: " + prompt.error().message, kExitUsage);
  if (prompt->empty()) return report_error("--prompt: give at least one character", kExitUsage);

  TrainerOptions to;
  to.device = *device;
  to.threads = o.threads;
  Result<std::unique_ptr<AutoregressiveTrainer>> made = make_lm_trainer(*recipe, *data, to);
  if (!made) return report_error(made.error().message, kExitFailure);
  AutoregressiveTrainer& t = **made;
  if (Status s = t.load_checkpoint(o.checkpoint, TrainerCore::LoadMode::kWeights); !s)
    return report_error(s.error().message, kExitFailure);
  std::fprintf(stderr, "sampling %lld tokens from %s (model %s, step %lld), temperature %g, "
               "top-k %lld, seed %llu\n",
               static_cast<long long>(o.tokens), o.checkpoint.c_str(), model.c_str(),
               static_cast<long long>(ck->meta.value("step", int64_t{0})), o.sampling.temperature,
               static_cast<long long>(o.sampling.top_k),
               static_cast<unsigned long long>(o.sampling.seed));

  // The last `context` tokens condition the next one, as nanoGPT crops idx_cond.
  std::vector<int32_t> ids = *prompt;
  std::fputs(o.prompt.c_str(), stdout);
  for (int64_t i = 0; i < o.tokens; ++i) {
    const size_t n = std::min(ids.size(), static_cast<size_t>(t.context()));
    const std::vector<int32_t> window(ids.end() - static_cast<std::ptrdiff_t>(n), ids.end());
    const int32_t next = sample_token(t.next_token_logits(window), o.sampling, static_cast<uint32_t>(i));
    ids.push_back(next);
    std::fputs(decode(data->corpus, {&ids.back(), 1}).c_str(), stdout);
    std::fflush(stdout);
  }
  std::fputs("\n", stdout);
  return kExitOk;
}

}  // namespace noeira
