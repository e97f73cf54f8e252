// The walk over a recipe's "layers" list shared by every model family. Children of the
// model's Sequential are named by kind with a 1-based counter per kind ("conv1", "bn1",
// "fc1", "layer1" ...), so parameters get torch's names ("conv1.weight", "bn1.bias",
// "layer1.0.conv1.weight") in list order; the twin (reference/twin) names them the same way.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/common/math.h"
#include "models/recipe.h"
#include "nn/sequential.h"

namespace noeira {

// Builds a list entry into `seq`. Returns false when the family does not know the entry's
// type (the walk then names the family's types in its error), an Error for a bad entry.
class LayerList {
 public:
  explicit LayerList(const Recipe& recipe) : recipe_(recipe) {}
  // "<prefix><n>" with n counting this prefix's uses from 1.
  std::string next_name(const std::string& prefix) { return prefix + std::to_string(++counts_[prefix]); }
  // How many names with this prefix were handed out so far.
  int count(const std::string& prefix) const;
  const Recipe& recipe() const { return recipe_; }
  // An Error "recipe <path>: layer <i> (<type>): <what>".
  Error error(const std::string& what) const;

  using Handler = std::function<Result<bool>(const nlohmann::json& layer, const std::string& type,
                                             LayerList& list, Sequential& seq)>;
  // Walks the list with `handlers` (tried in order); `known` lists the family's types for
  // the error about an unknown one.
  Result<std::unique_ptr<Module>> build(const std::vector<Handler>& handlers,
                                        const std::string& family, const std::string& known);

 private:
  const Recipe& recipe_;
  std::map<std::string, int> counts_;
  size_t index_ = 0;
  std::string type_;
};

// Layer-entry helpers shared by the families.
Result<Act> parse_act(const std::string& s);
// An integer size field from `min` (1: positive, 0: non-negative) to kMaxRecipeSize, or
// `fallback` when absent and fallback >= 0.
Result<int64_t> size_field(const nlohmann::json& layer, const char* key, int64_t fallback,
                           const LayerList& list, int64_t min = 1);

// The families' handlers.
Result<bool> add_mlp_layer(const nlohmann::json& layer, const std::string& type, LayerList& list,
                           Sequential& seq);
Result<bool> add_conv_layer(const nlohmann::json& layer, const std::string& type,
                            LayerList& list, Sequential& seq);
Result<bool> add_resnet_layer(const nlohmann::json& layer, const std::string& type,
                              LayerList& list, Sequential& seq);

}  // namespace noeira
