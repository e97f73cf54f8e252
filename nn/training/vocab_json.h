// A token corpus's vocabulary as a checkpoint stores it (docs/checkpoint-format.md,
// "vocab"): a JSON list of byte values in id order, since a JSON string cannot hold every
// byte. The checkpoint is outside input, so reading it checks everything a vocabulary
// made by read_token_corpus is.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/error.h"

namespace noeira {

nlohmann::json vocab_to_json(const std::vector<char>& vocab);

// The bytes of `list`, or an error saying what is wrong: not a list, empty, an element
// that is not an integer in 0-255, or values not strictly ascending (read_token_corpus
// sorts its vocabulary, so a repeat or a disorder means the list was not written by us).
Result<std::vector<char>> vocab_from_json(const nlohmann::json& list);

}  // namespace noeira
