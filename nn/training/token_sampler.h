// Picks the next token from a language model's logits as nanoGPT's sample.py does:
// logits / temperature, only the top_k largest kept (ties with the k-th kept too),
// softmax, one draw. The draw is Philox(seed, kSample, stream = token index), so a seed
// gives the same text on every machine and backend whose logits agree.
#pragma once
#include <cstdint>
#include <vector>

namespace noeira {

struct SamplingOptions {
  double temperature = 0.8;  // 0 = greedy (the largest logit, the first on ties)
  int64_t top_k = 200;       // 0 = every token
  uint64_t seed = 0;
};

// The id drawn for generated token number `index` (0-based) from logits (V >= 1).
int32_t sample_token(const std::vector<float>& logits, const SamplingOptions& o, uint32_t index);

}  // namespace noeira
