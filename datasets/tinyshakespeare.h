// TinyShakespeare for the character-level GPT: one text file, tokenised by byte, as
// nanoGPT's data/shakespeare_char/prepare.py does it.
//   tinyshakespeare  tinyshakespeare/input.txt (karpathy/char-rnn, 1,115,394 bytes),
//                    downloaded on first use and sha256-checked (data_files.h: locate()).
// The vocabulary is the sorted set of distinct bytes of the whole file (65 for
// TinyShakespeare); a token id is an index into it. train is the first int(n * 0.9)
// tokens, val the rest (1,003,854 / 111,540 for TinyShakespeare).
//
// Bytes, not Unicode characters: prepare.py tokenises Python str characters, which is the
// same thing for an ASCII text such as this one; a UTF-8 text here gets one token per byte.
// So a vocabulary never exceeds 256 entries and every id fits in a byte, by construction.
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/data_files.h"
#include "nn/error.h"
#include "nn/training/token_corpus.h"

namespace noeira {

// "tinyshakespeare/input.txt": its sha256 and URL.
DataFile tinyshakespeare_file();

// The located (or downloaded, verified) file read by read_token_corpus, named
// "tinyshakespeare". Errors as locate()'s (not found, with where it looked; a wrong
// checksum) and read_token_corpus's.
Result<TokenCorpus> load_tinyshakespeare(const DataSource& source);

// Any text file, no checksum (tests, other texts). Every failure is one line naming the
// file and the fix: missing, unreadable, empty, too short to split (fewer than 2 tokens in
// val, which a model needs for one (context, next token) pair: under 11 bytes).
Result<TokenCorpus> read_token_corpus(const std::filesystem::path& path, std::string name);

// How many tokens of an n-token text go to train: int(n * 0.9) as Python computes it (the
// double product truncated), so the split agrees with prepare.py: 1,003,854 of 1,115,394.
int64_t token_train_count(int64_t n);

// The ids of `text`, or an error naming its first byte outside the vocabulary (printable,
// or as \xNN) and that byte's position.
Result<std::vector<int32_t>> encode(const TokenCorpus& corpus, std::string_view text);

// The text of `ids`. An id outside [0, vocab.size()) (never produced by encode or by
// sampling over the vocabulary) decodes as '?'.
std::string decode(const TokenCorpus& corpus, std::span<const int32_t> ids);

// A checkpoint's saved vocabulary against the corpus it is about to be used with: an error
// giving both sizes when they differ, else the first differing character and its index.
Status check_vocab(const std::vector<char>& saved, const TokenCorpus& corpus);

}  // namespace noeira
