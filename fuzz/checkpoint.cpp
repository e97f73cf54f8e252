// Checkpoint files (docs/checkpoint-format.md), single-process and from data-parallel runs
// (parallel/: the same format plus "ranks"): read_checkpoint on the input as a file, then the
// loads a run makes, resuming (TrainerCore::load_checkpoint kResume) and sampling
// (kWeights), into a trainer of fuzz/inputs/gpt-micro.json on fuzz/inputs/micro.txt — the
// model and text the seed checkpoints were written from (fuzz/make-seeds).
// Contract: a Checkpoint whose tensors hold the bytes their shapes and dtypes say and whose
// header fields have their documented types, or an Error naming the file; a load that is
// refused leaves the trainer's parameters as they were. Never a crash, a hang or undefined
// behaviour.
//
// Input: the file, except its last 4 bytes, which the target overwrites with the CRC-32 of
// the rest (as write_checkpoint does), so that mutations get past the checksum; the
// checksum test itself is a unit test (tests/unit/test_checkpoint.cpp).
// Cap: memory follows the file (tensor bytes are copied once): no allocation above 64 MiB,
// RSS below 1.5 GiB for inputs up to 64 KiB.
// libFuzzer flags: -max_len=65536 -malloc_limit_mb=64 -rss_limit_mb=1536 -timeout=10
#include <zlib.h>

#include <cstdlib>

#include "datasets/tinyshakespeare.h"
#include "fuzz/fuzz_support.h"
#include "models/trainer_factory.h"
#include "nn/checkpoint.h"

namespace {

using noeira::AutoregressiveTrainer;

std::unique_ptr<AutoregressiveTrainer> micro_trainer() {
  const std::filesystem::path inputs = std::filesystem::path(NOEIRA_SOURCE_DIR) / "fuzz" / "inputs";
  auto recipe = noeira::load_recipe(inputs / "gpt-micro.json");
  auto corpus = noeira::read_token_corpus(inputs / "micro.txt", "micro.txt");
  if (!recipe || !corpus) {
    std::fprintf(stderr, "fuzz-checkpoint: %s\n",
                 (!recipe ? recipe.error() : corpus.error()).message.c_str());
    std::exit(2);
  }
  noeira::DataSplit data;
  data.corpus = std::move(corpus).value();
  noeira::TrainerOptions o;
  o.threads = 1;
  auto t = noeira::make_lm_trainer(*recipe, data, o);
  if (!t) {
    std::fprintf(stderr, "fuzz-checkpoint: %s\n", t.error().message.c_str());
    std::exit(2);
  }
  return std::move(t).value();
}

// The parameters' bytes (not floats: a loaded checkpoint may hold NaNs, never equal).
std::vector<uint8_t> parameters(const AutoregressiveTrainer& t) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < t.params().all().size(); ++i) {
    const std::vector<float> v = t.param_values(i);
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    bytes.insert(bytes.end(), p, p + v.size() * sizeof(float));
  }
  return bytes;
}

// Fields whose readers (load_checkpoint, sample) take them as this type when present.
void check_header_types(const nlohmann::json& meta) {
  FUZZ_EXPECT(meta.is_object() && !meta.contains("tensors"));
  for (const char* key : {"format", "model", "dataset", "recipe_hash", "amp"})
    FUZZ_EXPECT(!meta.contains(key) || meta[key].is_string());
  for (const char* key : {"seed", "epoch", "step", "batch", "context", "ranks"})
    FUZZ_EXPECT(!meta.contains(key) || meta[key].is_number_integer());
  FUZZ_EXPECT(!meta.contains("ranks") || meta["ranks"].get<int64_t>() >= 1);
  FUZZ_EXPECT(!meta.contains("optimizer") || meta["optimizer"].is_object());
  FUZZ_EXPECT(!meta.contains("vocab") || meta["vocab"].is_array());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<AutoregressiveTrainer> trainer = micro_trainer();
  std::vector<uint8_t> file(data, data + size);
  if (file.size() >= 4) {
    const auto crc = static_cast<uint32_t>(crc32(0L, file.data(), static_cast<uInt>(file.size() - 4)));
    std::memcpy(file.data() + file.size() - 4, &crc, 4);
  }
  const noeira::fuzz::MemFile mem(file);
  auto ck = noeira::read_checkpoint(mem.path());
  if (!ck) {
    FUZZ_EXPECT(!ck.error().message.empty());
    return 0;
  }
  check_header_types(ck->meta);
  for (const noeira::CheckpointTensor& t : ck->tensors) {
    FUZZ_EXPECT(t.shape.rank >= 0 && t.shape.rank <= noeira::Shape::kMaxDims);
    uint64_t elems = 1;
    for (int d = 0; d < t.shape.rank; ++d) {
      FUZZ_EXPECT(t.shape[d] >= 0);
      FUZZ_EXPECT(!__builtin_mul_overflow(elems, static_cast<uint64_t>(t.shape[d]), &elems));
    }
    FUZZ_EXPECT(t.bytes.size() == elems * noeira::dtype_size(t.dtype));
  }

  for (auto mode : {noeira::TrainerCore::LoadMode::kWeights, noeira::TrainerCore::LoadMode::kResume}) {
    const auto before = parameters(*trainer);
    const noeira::Status loaded = trainer->load_checkpoint(mem.path(), mode);
    if (!loaded) FUZZ_EXPECT(!loaded.error().message.empty() && parameters(*trainer) == before);
  }
  return 0;
}
