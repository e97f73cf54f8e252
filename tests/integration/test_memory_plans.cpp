// bf16 shows its saving: for every recipe, our memory plan under BF16Policy (bf16
// activations and resident images, plus bf16 weight copies) is smaller than the fp32 plan,
// at the recipe's own batch and the data sizes the CPU runs use (MNIST's 60,000 + 10,000
// images, the CIFAR-10 subset's 4,000 + 1,000) — what the run table's plan column and the
// results' runs[].memory.plan_bytes show. Synthetic images of each recipe's shape.
#include <catch2/catch.hpp>

#include <cstdio>

#include "models/trainer_factory.h"

using namespace noeira;

namespace {

DataSplit synthetic_for(const Recipe& r) {
  DataSplit d;
  if (r.family == "gpt") {
    d.corpus.name = "synthetic";
    for (int c = 0; c < 65; ++c) d.corpus.vocab.push_back(static_cast<char>(32 + c));
    const int64_t T = r.gpt.context;
    for (int64_t i = 0; i < 4 * (T + 1) * 4; ++i) d.corpus.train.push_back(static_cast<int32_t>(i % 65));
    for (int64_t i = 0; i < 2 * (T + 1); ++i) d.corpus.val.push_back(static_cast<int32_t>((i * 7) % 65));
    return d;
  }
  auto set = [&](int64_t n) {
    TensorDataset t;
    t.name = "synthetic";
    t.sample_shape = r.input_shape;
    t.count = n;
    t.num_classes = r.num_classes;
    t.x.assign(static_cast<size_t>(n * r.input_shape.numel()), 0.5f);
    for (int64_t i = 0; i < n; ++i) t.labels.push_back(static_cast<int32_t>(i % r.num_classes));
    return t;
  };
  const bool mnist_sized = r.input_shape.numel() == 28 * 28;
  d.train = set(mnist_sized ? 60000 : 4000);
  d.test = set(mnist_sized ? 10000 : 1000);
  d.fill.assign(static_cast<size_t>(r.input_shape.dims[0]), 0.0f);
  return d;
}

size_t plan_bytes(const Recipe& r, const DataSplit& d, AmpPolicy amp, std::string* table) {
  TrainerOptions o;
  o.threads = 1;
  o.amp = amp;
  o.total_steps = 10;
  Result<std::unique_ptr<TrainerCore>> t = make_trainer(r, d, o);
  if (!t) FAIL(r.name << ": " << t.error().message);
  *table = (*t)->plan().describe();
  return (*t)->plan().total_bytes();
}

}  // namespace

TEST_CASE("every recipe's bf16 plan is smaller than its fp32 plan", "[memory][amp][slow]") {
  for (const std::string& name : list_recipes()) {
    const Recipe r = load_recipe_for_model(name).value();
    const DataSplit d = synthetic_for(r);
    std::string fp32_table, bf16_table;
    const size_t fp32 = plan_bytes(r, d, NoAMP, &fp32_table);
    const size_t bf16 = plan_bytes(r, d, BF16Policy, &bf16_table);
    INFO(name << ": fp32 " << fp32 << " bytes\n" << fp32_table << "\nbf16 " << bf16 << " bytes\n" << bf16_table);
    std::printf("%-13s plan fp32 %12zu bytes, bf16 %12zu bytes (%.1f%%)\n", name.c_str(), fp32, bf16,
                100.0 * (static_cast<double>(bf16) / static_cast<double>(fp32) - 1.0));
    CHECK(bf16 < fp32);
  }
}
