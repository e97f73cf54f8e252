// The checkpoint file format (docs/checkpoint-format.md): magic, version, a JSON
// header, raw tensors, CRC-32. This layer reads and writes files; the trainers (nn/training) decide
// what goes in them.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/error.h"
#include "nn/tensor.h"

namespace noeira {

inline constexpr char kCheckpointMagic[8] = {'N', 'O', 'E', 'I', 'R', 'A', 'C', 'K'};
inline constexpr uint32_t kCheckpointVersion = 1;

struct CheckpointTensor {
  std::string name;
  std::string group;  // "param" or "optim"
  DType dtype = DType::kF32;
  Shape shape;
  std::vector<uint8_t> bytes;
};

struct Checkpoint {
  nlohmann::json meta;  // model, recipe_hash, seed, epoch, step, optimizer, amp
  std::vector<CheckpointTensor> tensors;
  const CheckpointTensor* find(const std::string& name) const;
};

// Writes PATH.tmp.<pid>, then renames it over PATH: no reader sees a partial file.
Status write_checkpoint(const std::filesystem::path& path, const Checkpoint& ckpt);
// Validates magic, version, header, sizes and CRC; every error names the file.
Result<Checkpoint> read_checkpoint(const std::filesystem::path& path);

// FNV-1a 64 of a JSON document's canonical dump, as 16 hex digits.
std::string json_hash(const nlohmann::json& j);

}  // namespace noeira
