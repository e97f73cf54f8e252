// An image-classification data set held in host memory exactly as the file stores it:
// uint8 pixels, one int32 label per sample. models/recipe_data.cpp normalises it once, on
// the host, into the fp32 TensorDataset a trainer uploads once; nothing converts or
// copies per batch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace noeira {

struct ImageDataset {
  std::string name;                   // "mnist", "fashion-mnist", ...
  int64_t count = 0;                  // number of samples
  std::vector<int64_t> sample_shape;  // per-sample dims, e.g. {28, 28}
  int num_classes = 0;
  std::vector<uint8_t> pixels;  // count * prod(sample_shape) bytes, sample-major, raw
  std::vector<int32_t> labels;  // count values in [0, num_classes)
};

struct ImageSplit {
  ImageDataset train, test;
};

}  // namespace noeira
