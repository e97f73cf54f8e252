#include "models/recipe_data.h"

#include "datasets/catalog.h"
#include "models/family.h"

namespace noeira {

namespace {

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  s += ')';
  return s;
}

// The recipe's mean or std, one per channel of the data set (a single number applies to
// every channel). Channels: the first of (C, H, W); a 2-D image such as MNIST's has one.
Result<std::vector<float>> per_channel(const std::vector<float>& values, const char* key,
                                       const ImageDatasetInfo& d, const Recipe& r) {
  const int64_t channels = d.sample_shape.size() == 3 ? d.sample_shape[0] : 1;
  if (values.size() == 1) return std::vector<float>(static_cast<size_t>(channels), values[0]);
  if (static_cast<int64_t>(values.size()) == channels) return values;
  return make_error("recipe " + r.path.string() + ": dataset.normalize." + key + " has " +
                    std::to_string(values.size()) + " values but data set " + d.name + " has " +
                    std::to_string(channels) + " channel" + (channels == 1 ? "" : "s") +
                    " (samples " + shape_text(d.sample_shape) +
                    "); give one number, or one per channel");
}

// x = (u8 / 255 - mean[c]) / std[c] in fp32, the exact operations the twin performs.
TensorDataset normalise(const ImageDataset& d, const Recipe& r, const std::vector<float>& mean,
                        const std::vector<float>& stddev) {
  TensorDataset t;
  t.name = d.name;
  t.sample_shape = r.input_shape;
  t.count = d.count;
  t.num_classes = d.num_classes;
  t.x.resize(d.pixels.size());
  const size_t channels = mean.size();
  const size_t plane =
      d.count > 0 ? d.pixels.size() / static_cast<size_t>(d.count) / channels : 0;
  size_t i = 0;
  for (int64_t s = 0; s < d.count; ++s)
    for (size_t c = 0; c < channels; ++c) {
      const float m = mean[c], sd = stddev[c];
      for (size_t p = 0; p < plane; ++p, ++i)
        t.x[i] = (static_cast<float>(d.pixels[i]) / 255.0f - m) / sd;
    }
  t.labels = d.labels;
  return t;
}

}  // namespace

Result<DataSplit> load_recipe_data(const Recipe& recipe, const std::string& dataset_override,
                                   const DataSource& source) {
  if (family_traits(recipe).language_model) {
    const std::string name = dataset_override.empty() ? recipe.dataset : dataset_override;
    DataSplit d;
    if (name == "tinyshakespeare") {
      Result<TokenCorpus> c = load_tinyshakespeare(source);
      if (!c) return c.error();
      d.corpus = std::move(c).value();
    } else if (std::filesystem::is_regular_file(name)) {
      Result<TokenCorpus> c = read_token_corpus(name, std::filesystem::path(name).filename().string());
      if (!c) return c.error();
      d.corpus = std::move(c).value();
    } else {
      return make_error("model " + recipe.name + " trains on a text: tinyshakespeare or the "
                        "path of a text file, not '" + name + "'");
    }
    return d;
  }
  const std::string name = dataset_override.empty() ? recipe.dataset : dataset_override;
  // The shapes are checked before loading: a misfit must not cost a download.
  Result<ImageDatasetInfo> info = find_image_dataset(name);
  if (!info) return info.error();
  int64_t sample = 1;
  for (int64_t d : info->sample_shape) sample *= d;
  if (sample != recipe.input_shape.numel())
    return make_error("data set " + name + " has samples of shape " +
                      shape_text(info->sample_shape) + " (" + std::to_string(sample) +
                      " values) but model " + recipe.name + " expects input " +
                      recipe.input_shape.str() + " (" +
                      std::to_string(recipe.input_shape.numel()) +
                      " values); pick a model whose recipe input_shape fits " + name +
                      ", or a data set that fits " + recipe.name);
  Result<std::vector<float>> mean = per_channel(recipe.norm_mean, "mean", *info, recipe);
  if (!mean) return mean.error();
  Result<std::vector<float>> stddev = per_channel(recipe.norm_std, "std", *info, recipe);
  if (!stddev) return stddev.error();

  Result<ImageSplit> split = load_image_dataset(name, source);
  if (!split) return split.error();
  if (split->train.sample_shape != info->sample_shape ||
      split->test.sample_shape != info->sample_shape)
    return make_error("data set " + name + " loaded with samples of shape " +
                      shape_text(split->train.sample_shape) + " / " +
                      shape_text(split->test.sample_shape) + ", not the catalogue's " +
                      shape_text(info->sample_shape) + " (a bug in datasets/catalog.cpp)");
  DataSplit out;
  out.train = normalise(split->train, recipe, *mean, *stddev);
  out.test = normalise(split->test, recipe, *mean, *stddev);
  for (size_t c = 0; c < mean->size(); ++c)
    out.fill.push_back((0.0f / 255.0f - (*mean)[c]) / (*stddev)[c]);
  return out;
}

}  // namespace noeira
