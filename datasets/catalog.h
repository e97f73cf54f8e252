// Every image-classification data set by name: what `--dataset` and recipes accept.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "datasets/data_files.h"
#include "datasets/image_dataset.h"
#include "nn/error.h"

namespace noeira {

struct ImageDatasetInfo {
  std::string name;         // "mnist", "fashion-mnist", "cifar10", "cifar10-subset"
  std::string description;  // one line, e.g. "CIFAR-10 (binary), 50000 train / 10000 test"
  std::vector<int64_t> sample_shape;  // known before loading: (28, 28), (3, 32, 32)
};

const std::vector<ImageDatasetInfo>& image_datasets();
std::vector<std::string> image_dataset_names();
// The entry for `name`; an unknown name is an error listing the known ones.
Result<ImageDatasetInfo> find_image_dataset(std::string_view name);

// Loads a data set by name; an unknown name is an error listing the known ones.
Result<ImageSplit> load_image_dataset(std::string_view name, const DataSource& source);

}  // namespace noeira
