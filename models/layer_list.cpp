#include "models/layer_list.h"

namespace noeira {

int LayerList::count(const std::string& prefix) const {
  const auto it = counts_.find(prefix);
  return it == counts_.end() ? 0 : it->second;
}

Error LayerList::error(const std::string& what) const {
  return Error{"recipe " + recipe_.path.string() + ": layer " + std::to_string(index_ + 1) +
               " (" + type_ + "): " + what};
}

Result<std::unique_ptr<Module>> LayerList::build(const std::vector<Handler>& handlers,
                                                 const std::string& family,
                                                 const std::string& known) {
  auto seq = std::make_unique<Sequential>();
  const std::string where = "recipe " + recipe_.path.string();
  try {
    const auto& layers = recipe_.json.at("layers");
    for (index_ = 0; index_ < layers.size(); ++index_) {
      const auto& layer = layers[index_];
      type_ = layer.at("type").get<std::string>();
      bool taken = false;
      for (const Handler& h : handlers) {
        Result<bool> r = h(layer, type_, *this, *seq);
        if (!r) return r.error();
        if ((taken = *r)) break;
      }
      if (!taken)
        return error("not a layer of the " + family + " family (known: " + known + ")");
    }
  } catch (const nlohmann::json::exception& e) {
    return make_error(where + ": bad layer entry " + std::to_string(index_ + 1) + " (" +
                      std::string(e.what()) + ")");
  }
  return std::unique_ptr<Module>(std::move(seq));
}

Result<Act> parse_act(const std::string& s) {
  if (s.empty() || s == "none") return Act::kNone;
  if (s == "relu") return Act::kReLU;
  if (s == "gelu") return Act::kGELU;
  return make_error("activation '" + s + "' is not relu, gelu or none");
}

Result<int64_t> size_field(const nlohmann::json& layer, const char* key, int64_t fallback,
                           const LayerList& list, int64_t min) {
  if (!layer.contains(key)) {
    if (fallback >= 0) return fallback;
    return list.error(std::string("needs '") + key + "'");
  }
  const std::string name = std::string("'") + key + "'";
  if (!layer[key].is_number_integer() || layer[key].get<int64_t>() < min)
    return list.error(name + " must be a " + (min > 0 ? "positive" : "non-negative") + " integer");
  const int64_t v = layer[key].get<int64_t>();
  if (v > kMaxRecipeSize) return list.error(above_limit(name, v, kMaxRecipeSize));
  return v;
}

}  // namespace noeira
