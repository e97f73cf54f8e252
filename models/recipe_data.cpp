#include "models/recipe_data.h"

#include "datasets/mnist.h"

namespace noeira {

namespace {

// x = (u8 / 255 - mean) / std in fp32, the exact operations the twin performs.
TensorDataset normalise(const ImageDataset& d, const Recipe& r) {
  TensorDataset t;
  t.name = d.name;
  t.sample_shape = r.input_shape;
  t.count = d.count;
  t.num_classes = d.num_classes;
  t.x.resize(d.pixels.size());
  const float mean = r.norm_mean, stddev = r.norm_std;
  for (size_t i = 0; i < d.pixels.size(); ++i)
    t.x[i] = (static_cast<float>(d.pixels[i]) / 255.0f - mean) / stddev;
  t.labels = d.labels;
  return t;
}

}  // namespace

Result<DataSplit> load_recipe_data(const Recipe& recipe, const std::string& dataset_override,
                                   const DataSource& source) {
  const std::string name = dataset_override.empty() ? recipe.dataset : dataset_override;
  Result<MnistVariant> variant = parse_mnist_variant(name);
  if (!variant)
    return make_error("dataset '" + name + "' is not available for model " + recipe.name +
                      "; use mnist or fashion-mnist");
  Result<ImageSplit> split = load_mnist(*variant, source);
  if (!split) return split.error();
  int64_t sample = 1;
  for (int64_t d : split->train.sample_shape) sample *= d;
  if (sample != recipe.input_shape.numel())
    return make_error("dataset " + name + " has " + std::to_string(sample) +
                      " values per sample but recipe " + recipe.name + " expects input " +
                      recipe.input_shape.str());
  DataSplit out;
  out.train = normalise(split->train, recipe);
  out.test = normalise(split->test, recipe);
  return out;
}

}  // namespace noeira
