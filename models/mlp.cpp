// The MLP family: "linear" layers with an optional fused activation, and stand-alone
// activations, e.g. {"type": "linear", "out": 512, "act": "relu"} -> LinearAct(512, relu)
// named fcN. The convolutional families reuse these layers for their heads.
#include "models/layer_list.h"
#include "nn/activation.h"
#include "nn/linear.h"

namespace noeira {

Result<bool> add_mlp_layer(const nlohmann::json& layer, const std::string& type, LayerList& list,
                           Sequential& seq) {
  if (type == "linear") {
    Result<Act> act = parse_act(layer.value("act", ""));
    if (!act) return list.error(act.error().message);
    Result<int64_t> out = size_field(layer, "out", -1, list);
    if (!out) return out.error();
    seq.add(list.next_name("fc"), std::make_unique<Linear>(*out, *act, layer.value("bias", true)));
    return true;
  }
  if (type == "relu" || type == "gelu") {
    seq.add(list.next_name(type),
            std::make_unique<Activation>(type == "relu" ? Act::kReLU : Act::kGELU));
    return true;
  }
  return false;
}

}  // namespace noeira
