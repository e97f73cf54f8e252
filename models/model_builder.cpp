#include "models/model_builder.h"

#include "models/layer_list.h"

namespace noeira {

Result<std::unique_ptr<Module>> build_model(const Recipe& recipe) {
  LayerList list(recipe);
  const std::string& family = recipe.family;
  if (family == "mlp") return list.build({add_mlp_layer}, family, "linear, relu, gelu");
  const std::string conv_layers =
      "conv2d, maxpool2d, avgpool2d, global_avgpool, flatten, batchnorm2d, dropout, linear, "
      "relu, gelu";
  if (family == "convnet") return list.build({add_conv_layer, add_mlp_layer}, family, conv_layers);
  if (family == "resnet")
    return list.build({add_resnet_layer, add_conv_layer, add_mlp_layer}, family,
                      "resnet_stage, " + conv_layers);
  if (family == "vit") return build_vit(recipe);
  if (family == "gpt")
    return make_error("model " + recipe.name + ": a gpt-family model is built from its "
                      "vocabulary (build_gpt)");
  return make_error("recipe " + recipe.path.string() + ": family '" + family +
                    "' is not mlp, convnet, resnet, vit or gpt");
}

}  // namespace noeira
