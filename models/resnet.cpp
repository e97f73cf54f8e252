// The ResNet family (He et al. 2016, CIFAR variant): a stem and head from the convolutional
// layers, and {"type": "resnet_stage", "blocks": 3, "out": 16, "stride": 1} stages named
// layerN, whose blocks (layerN.0, layerN.1, ...) are basic blocks with option-A shortcuts;
// the first block of a stage takes the stage's stride.
#include "models/layer_list.h"
#include "nn/resnet_block.h"

namespace noeira {

Result<bool> add_resnet_layer(const nlohmann::json& layer, const std::string& type,
                              LayerList& list, Sequential& seq) {
  if (type != "resnet_stage") return false;
  Result<int64_t> blocks = size_field(layer, "blocks", -1, list);
  if (!blocks) return blocks.error();
  if (*blocks > kMaxRecipeDepth) return list.error(above_limit("'blocks'", *blocks, kMaxRecipeDepth));
  Result<int64_t> out = size_field(layer, "out", -1, list);
  if (!out) return out.error();
  Result<int64_t> stride = size_field(layer, "stride", 1, list);
  if (!stride) return stride.error();
  auto stage = std::make_unique<Sequential>();
  for (int64_t b = 0; b < *blocks; ++b)
    stage->add(std::to_string(b), std::make_unique<BasicBlock>(*out, b == 0 ? *stride : 1));
  seq.add(list.next_name("layer"), std::move(stage));
  return true;
}

}  // namespace noeira
