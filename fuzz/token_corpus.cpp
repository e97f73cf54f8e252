// A text corpus against a checkpoint's vocabulary, as `noeira-bench sample` and the gpt
// family use them (datasets/tinyshakespeare.h, datasets/vocab_json.h): read_token_corpus
// on a text file, vocab_from_json on a checkpoint's "vocab", check_vocab of one against the
// other, encode and decode of a prompt with either. Contract: a corpus whose vocabulary is
// its sorted distinct bytes and whose ids index it, a vocabulary of strictly ascending
// bytes, encode/decode round trips, or an Error; never a crash or undefined behaviour.
//
// Input: three parts (fuzz_support.h: split_parts): the text file, the checkpoint's
// "vocab" as JSON text, the prompt. Cap: memory follows the input (4 bytes of ids per
// byte of text): no allocation above 32 MiB, RSS below 1 GiB for inputs up to 64 KiB.
// libFuzzer flags: -max_len=65536 -malloc_limit_mb=32 -rss_limit_mb=1024 -timeout=10
#include <algorithm>

#include "datasets/tinyshakespeare.h"
#include "nn/training/vocab_json.h"
#include "fuzz/fuzz_support.h"
#include "nn/json_input.h"

namespace {

using noeira::TokenCorpus;

// encode then decode gives the prompt back, or encode names a byte outside the vocabulary.
void check_round_trip(const TokenCorpus& corpus, std::string_view prompt) {
  auto ids = noeira::encode(corpus, prompt);
  if (!ids) {
    const bool outside = std::any_of(prompt.begin(), prompt.end(), [&](char c) {
      return std::find(corpus.vocab.begin(), corpus.vocab.end(), c) == corpus.vocab.end();
    });
    FUZZ_EXPECT(outside && !ids.error().message.empty());
    return;
  }
  FUZZ_EXPECT(ids->size() == prompt.size());
  FUZZ_EXPECT(noeira::decode(corpus, *ids) == prompt);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = noeira::fuzz::split_parts(noeira::fuzz::Bytes(data, size), 3);
  const std::string_view prompt = noeira::fuzz::text_of(parts[2]);

  const noeira::fuzz::MemFile text(parts[0]);
  auto corpus = noeira::read_token_corpus(text.path(), "fuzz");
  if (corpus) {
    const auto& v = corpus->vocab;
    FUZZ_EXPECT(!v.empty() && v.size() <= 256);
    FUZZ_EXPECT(std::adjacent_find(v.begin(), v.end(), [](char a, char b) {
                  return static_cast<unsigned char>(a) >= static_cast<unsigned char>(b);
                }) == v.end());
    FUZZ_EXPECT(corpus->train.size() + corpus->val.size() == parts[0].size());
    FUZZ_EXPECT(corpus->val.size() >= 2);
    for (const auto* split : {&corpus->train, &corpus->val})
      for (int32_t id : *split) FUZZ_EXPECT(id >= 0 && static_cast<size_t>(id) < v.size());
    check_round_trip(*corpus, prompt);
  } else {
    FUZZ_EXPECT(!corpus.error().message.empty());
  }

  auto json = noeira::parse_json_input(noeira::fuzz::text_of(parts[1]));
  if (!json) return 0;
  auto saved = noeira::vocab_from_json(*json);
  if (!saved) {
    FUZZ_EXPECT(!saved.error().message.empty());
    return 0;
  }
  FUZZ_EXPECT(noeira::vocab_from_json(noeira::vocab_to_json(*saved)).value() == *saved);
  if (corpus) {
    const noeira::Status same = noeira::check_vocab(*saved, *corpus);
    FUZZ_EXPECT(static_cast<bool>(same) == (*saved == corpus->vocab));
  }
  // sample's corpus when the checkpoint's vocabulary is all it has.
  TokenCorpus vocab_only;
  vocab_only.name = "checkpoint";
  vocab_only.vocab = *saved;
  check_round_trip(vocab_only, prompt);
  return 0;
}
