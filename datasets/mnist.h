// MNIST and Fashion-MNIST: four gzip IDX files each, located or downloaded through
// data_files.h and read through idx.h.
#pragma once
#include <string_view>

#include "datasets/data_files.h"
#include "datasets/image_dataset.h"
#include "nn/error.h"

namespace noeira {

enum class MnistVariant { kMnist, kFashion };

// "mnist" or "fashion-mnist": the data set's name and its directory under a data dir.
std::string_view mnist_variant_name(MnistVariant variant);
Result<MnistVariant> parse_mnist_variant(std::string_view name);

struct MnistFiles {
  DataFile train_images, train_labels, test_images, test_labels;
  std::vector<std::filesystem::path> system_dirs;  // distro packages holding the files
};
MnistFiles mnist_files(MnistVariant variant);

// 60,000 train / 10,000 test samples of 28x28 uint8 pixels, 10 classes.
Result<ImageSplit> load_mnist(MnistVariant variant, const DataSource& source);

}  // namespace noeira
