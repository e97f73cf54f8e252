// A token corpus resident for an AutoregressiveTrainer: the vocabulary (bytes in id order)
// and the train and validation ids. datasets/ reads one from text (read_token_corpus,
// load_tinyshakespeare); the trainer only needs this.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace noeira {

struct TokenCorpus {
  std::string name;         // "tinyshakespeare", or what read_token_corpus was given
  std::vector<char> vocab;  // sorted distinct bytes (by unsigned value), at most 256
  std::vector<int32_t> train, val;  // ids in [0, vocab.size())
};

}  // namespace noeira
