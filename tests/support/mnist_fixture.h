// MNIST for the integration tests, loaded once per test process from $NOEIRA_DATA.
#pragma once
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "models/trainer_factory.h"
#include "tests/support/temp_dir.h"

namespace noeira::test {

inline const Recipe& mlp_recipe() {
  static const Recipe r = load_recipe_for_model("mlp").value();
  return r;
}

inline const DataSplit& mnist() {
  static const DataSplit d = [] {
    DataSource src;
    src.allow_download = false;
    Result<DataSplit> r = load_recipe_data(mlp_recipe(), "", src);
    if (!r) throw std::runtime_error(r.error().message);
    return std::move(r).value();
  }();
  return d;
}

// The first `n` training samples: determinism tests do not need all 60000.
inline DataSplit mnist_subset(int64_t n) {
  DataSplit s = mnist();
  s.train.count = n;
  s.train.x.resize(static_cast<size_t>(n * s.train.sample_shape.numel()));
  s.train.labels.resize(static_cast<size_t>(n));
  return s;
}

inline std::vector<char> file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace noeira::test
