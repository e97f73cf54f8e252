// The data a recipe trains on, loaded from files and turned into normalised floats
// shaped as the recipe's input.
#pragma once
#include <string>
#include <vector>

#include "datasets/data_files.h"
#include "datasets/tinyshakespeare.h"
#include "models/recipe.h"
#include "nn/training/tensor_dataset.h"

namespace noeira {

struct DataSplit {
  TensorDataset train, test;  // every family but gpt
  TokenCorpus corpus;         // the gpt family: the tokenised text, train and val splits
  // Per channel: the normalised value of a zero pixel, (0 - mean[c]) / std[c] — what the
  // Augmenter's padding holds.
  std::vector<float> fill;
};

// The gpt family reads a token corpus (tinyshakespeare, or with a dataset_override that
// is a path to a text file, that text). Otherwise `dataset_override` (may be empty) replaces the recipe's dataset, e.g. fashion-mnist or
// cifar10-subset (datasets/catalog.h names them all). The data set's values per sample
// must equal the recipe's input_shape; dataset.normalize applies per channel.
Result<DataSplit> load_recipe_data(const Recipe& recipe, const std::string& dataset_override,
                                   const DataSource& source);

}  // namespace noeira
