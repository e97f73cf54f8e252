// The MLP family: "linear" layers with an optional fused activation, and stand-alone
// activations, e.g. {"type": "linear", "out": 512, "act": "relu"} -> LinearAct(512, relu)
// named fcN. The convolutional families reuse these layers for their heads.
#include "models/layer_list.h"
#include "nn/activation.h"
#include "nn/batchnorm.h"
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
    const std::string name = list.next_name(type);
    // A ReLU right after a BatchNorm2d runs inside it (nn/batchnorm.h): the same bits, two
    // passes over the activations fewer.
    if (type == "relu" && seq.size() > 0)
      if (auto* bn = dynamic_cast<BatchNorm2d*>(seq.children().back().second.get());
          bn != nullptr && !bn->has_relu()) {
        bn->with_relu();
        return true;
      }
    seq.add(name, std::make_unique<Activation>(type == "relu" ? Act::kReLU : Act::kGELU));
    return true;
  }
  return false;
}

}  // namespace noeira
