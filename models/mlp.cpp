// MLP builder: "linear" layers with an optional fused activation, e.g.
//   {"type": "linear", "out": 512, "act": "relu"}  ->  LinearAct(512, relu) named fcN.
#include "models/model_builder.h"
#include "nn/activation.h"
#include "nn/linear.h"
#include "nn/sequential.h"

namespace noeira {

namespace {

Result<Act> parse_act(const std::string& s) {
  if (s.empty() || s == "none") return Act::kNone;
  if (s == "relu") return Act::kReLU;
  if (s == "gelu") return Act::kGELU;
  return make_error("activation '" + s + "' is not relu, gelu or none");
}

}  // namespace

Result<std::unique_ptr<Module>> build_model(const Recipe& recipe) {
  const std::string where = "recipe " + recipe.path.string();
  auto seq = std::make_unique<Sequential>();
  int linear_index = 0;
  try {
    for (const auto& layer : recipe.json.at("layers")) {
      const std::string type = layer.at("type").get<std::string>();
      if (type == "linear") {
        Result<Act> act = parse_act(layer.value("act", ""));
        if (!act) return make_error(where + ": " + act.error().message);
        const int64_t out = layer.at("out").get<int64_t>();
        if (out <= 0) return make_error(where + ": linear 'out' must be positive");
        seq->add("fc" + std::to_string(++linear_index), std::make_unique<Linear>(out, *act));
      } else if (type == "relu" || type == "gelu") {
        seq->add(type + std::to_string(seq->size()),
                 std::make_unique<Activation>(type == "relu" ? Act::kReLU : Act::kGELU));
      } else {
        return make_error(where + ": layer type '" + type +
                          "' is not supported by this build (known: linear, relu, gelu)");
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return make_error(where + ": bad layer entry (" + std::string(e.what()) + ")");
  }
  return std::unique_ptr<Module>(std::move(seq));
}

}  // namespace noeira
