#include "datasets/catalog.h"

#include "datasets/cifar10.h"
#include "datasets/mnist.h"

namespace noeira {

const std::vector<ImageDatasetInfo>& image_datasets() {
  static const std::vector<ImageDatasetInfo> all = {
      {"mnist", "MNIST (IDX), 60000 train / 10000 test", {28, 28}},
      {"fashion-mnist", "Fashion-MNIST (IDX), 60000 train / 10000 test", {28, 28}},
      {"cifar10", "CIFAR-10 (binary), 50000 train / 10000 test", {3, 32, 32}},
      {"cifar10-subset", "CIFAR-10's first 4000 train / 1000 test images (shared/data)",
       {3, 32, 32}},
  };
  return all;
}

std::vector<std::string> image_dataset_names() {
  std::vector<std::string> names;
  for (const auto& d : image_datasets()) names.push_back(d.name);
  return names;
}

Result<ImageDatasetInfo> find_image_dataset(std::string_view name) {
  for (const auto& d : image_datasets())
    if (d.name == name) return d;
  std::string known;
  for (const auto& n : image_dataset_names()) known += (known.empty() ? "" : ", ") + n;
  return make_error("unknown data set '" + std::string(name) + "'; known: " + known);
}

Result<ImageSplit> load_image_dataset(std::string_view name, const DataSource& source) {
  if (Result<MnistVariant> v = parse_mnist_variant(name)) return load_mnist(*v, source);
  if (Result<Cifar10Variant> v = parse_cifar10_variant(name)) return load_cifar10(*v, source);
  return find_image_dataset(name).error();
}

}  // namespace noeira
