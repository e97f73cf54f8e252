// The ResNet family (He et al. 2016, CIFAR variant): a stem and head from the convolutional
// layers, and {"type": "resnet_stage", "blocks": 3, "out": 16, "stride": 1} stages named
// layerN, whose blocks (layerN.0, layerN.1, ...) are basic blocks with option-A shortcuts;
// the first block of a stage takes the stage's stride. Each block right after another
// (in its stage, or the previous stage's last) is chained to it (BasicBlock::chain).
#include "models/layer_list.h"
#include "nn/resnet_block.h"

namespace noeira {

namespace {

// The block the model's layers end with: seq's last child, or that stage's last block.
BasicBlock* last_block(const Sequential& seq) {
  if (seq.size() == 0) return nullptr;
  Module* m = seq.children().back().second.get();
  if (auto* stage = dynamic_cast<Sequential*>(m); stage != nullptr && stage->size() > 0)
    m = stage->children().back().second.get();
  return dynamic_cast<BasicBlock*>(m);
}

}  // namespace

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
  BasicBlock* before = last_block(seq);
  for (int64_t b = 0; b < *blocks; ++b) {
    auto block = std::make_unique<BasicBlock>(*out, b == 0 ? *stride : 1);
    if (before != nullptr) BasicBlock::chain(*before, *block);
    before = block.get();
    stage->add(std::to_string(b), std::move(block));
  }
  seq.add(list.next_name("layer"), std::move(stage));
  return true;
}

}  // namespace noeira
