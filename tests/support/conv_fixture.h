// The convolutional recipes and their real data (MNIST, the shared CIFAR-10 subset), loaded
// once per test process from $NOEIRA_DATA, and trainers built from them.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "tests/support/mnist_fixture.h"

namespace noeira::test {

inline const Recipe& recipe_named(const std::string& name) {
  static std::map<std::string, Recipe> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_recipe_for_model(name).value()).first;
  return it->second;
}

// The recipe's data on `dataset` (empty: the recipe's own).
inline const DataSplit& recipe_data(const std::string& model, const std::string& dataset) {
  static std::map<std::string, DataSplit> cache;
  const std::string key = model + "/" + dataset;
  auto it = cache.find(key);
  if (it == cache.end()) {
    DataSource src;
    src.allow_download = false;
    Result<DataSplit> r = load_recipe_data(recipe_named(model), dataset, src);
    if (!r) throw std::runtime_error(r.error().message);
    it = cache.emplace(key, std::move(r).value()).first;
  }
  return it->second;
}

// The first `train` training and `test` test samples.
inline DataSplit head(const DataSplit& d, int64_t train, int64_t test) {
  DataSplit s = d;
  for (auto [set, n] : {std::pair{&s.train, train}, std::pair{&s.test, test}}) {
    set->count = n;
    set->x.resize(static_cast<size_t>(n * set->sample_shape.numel()));
    set->labels.resize(static_cast<size_t>(n));
  }
  return s;
}

inline std::unique_ptr<TrainerCore> conv_trainer(const Recipe& r, const DataSplit& data, uint64_t seed,
                                             int threads, int64_t total_steps = 0) {
  TrainerOptions o;
  o.seed = seed;
  o.threads = threads;
  o.total_steps = total_steps;
  Result<std::unique_ptr<TrainerCore>> t = make_trainer(r, data, o);
  if (!t) FAIL(t.error().message);
  return std::move(t).value();
}

}  // namespace noeira::test
