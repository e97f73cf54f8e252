// Small synthetic data sets and trainers for tests that need no files.
#pragma once
#include <cmath>
#include <memory>
#include <random>

#include "nn/linear.h"
#include "nn/sequential.h"
#include "nn/training/dataset_trainer.h"

namespace noeira::test {

// Classes are the sign pattern of two fixed projections: learnable by a small MLP.
inline TensorDataset synthetic_classification(int64_t n, uint32_t seed) {
  TensorDataset d;
  d.name = "synthetic-classes";
  d.sample_shape = Shape{8};
  d.count = n;
  d.num_classes = 4;
  std::mt19937 g(seed);
  std::normal_distribution<float> z(0.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) {
    float a = 0.0f, b = 0.0f;
    for (int k = 0; k < 8; ++k) {
      const float v = z(g);
      d.x.push_back(v);
      a += (k % 2 ? 1.0f : -0.5f) * v;
      b += (k < 4 ? 1.0f : -1.0f) * v;
    }
    d.labels.push_back((a > 0 ? 1 : 0) + (b > 0 ? 2 : 0));
  }
  return d;
}

// y = (sin(x0) + x1 * x2, x3 - x4): smooth, needs a hidden layer.
inline TensorDataset synthetic_regression(int64_t n, uint32_t seed) {
  TensorDataset d;
  d.name = "synthetic-regression";
  d.sample_shape = Shape{5};
  d.target_shape = Shape{2};
  d.count = n;
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) {
    float x[5];
    for (float& v : x) d.x.push_back(v = u(g));
    d.targets.push_back(std::sin(x[0]) + x[1] * x[2]);
    d.targets.push_back(x[3] - x[4]);
  }
  return d;
}

inline std::unique_ptr<Module> small_mlp(int64_t hidden, int64_t out) {
  auto m = std::make_unique<Sequential>();
  m->add("fc1", std::make_unique<LinearAct>(hidden, Act::kReLU));
  m->add("fc2", std::make_unique<Linear>(out));
  return m;
}

inline TrainerConfig small_config(Task task, uint64_t seed = 1) {
  TrainerConfig c;
  c.threads = 1;
  c.seed = seed;
  c.batch = 32;
  c.task = task;
  c.model_name = "small";
  c.recipe = {{"name", "small"}};
  c.optimizer.adam.lr = 1e-2f;
  return c;
}

inline std::unique_ptr<DatasetTrainer> small_trainer(Task task, uint64_t seed = 1,
                                              OptimizerKind opt = OptimizerKind::kAdam) {
  TrainerConfig c = small_config(task, seed);
  c.optimizer.kind = opt;
  if (opt == OptimizerKind::kSgd) c.optimizer.sgd.lr = 0.05f;
  const bool cls = task == Task::kClassification;
  auto train = cls ? synthetic_classification(1024, 1) : synthetic_regression(1024, 1);
  auto test = cls ? synthetic_classification(256, 2) : synthetic_regression(256, 2);
  auto t = DatasetTrainer::create(small_mlp(32, cls ? 4 : 2), c, train, test);
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(t).value();
}

}  // namespace noeira::test
