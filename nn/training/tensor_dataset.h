// A data set ready for training: float features and int32 labels (classification) or
// float targets (regression), on the host. The DatasetTrainer uploads it once.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/tensor.h"

namespace noeira {

struct TensorDataset {
  std::string name;
  Shape sample_shape;            // per-sample input, e.g. (784)
  int64_t count = 0;
  std::vector<float> x;          // count * sample_shape.numel()
  std::vector<int32_t> labels;   // classification: count
  Shape target_shape;            // regression: per-sample target
  std::vector<float> targets;    // regression: count * target_shape.numel()
  int num_classes = 0;
};

}  // namespace noeira
