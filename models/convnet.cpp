// The convolutional families' layers (conv2d-mnist, cifar-cnn; ResNet-20's stem and head):
//   {"type": "conv2d", "out": 32, "kernel": 3, "stride": 1, "pad": 0, "bias": true, "act": "relu"}
//   {"type": "maxpool2d" | "avgpool2d", "kernel": 2, "stride": <kernel>, "pad": 0}
//   {"type": "global_avgpool"}, {"type": "flatten"}, {"type": "batchnorm2d"},
//   {"type": "dropout", "p": 0.5}
// named convN, maxpoolN, avgpoolN, gapN, flattenN, bnN, dropoutN.
#include "models/layer_list.h"
#include "nn/batchnorm.h"
#include "nn/conv2d.h"
#include "nn/dropout.h"
#include "nn/flatten.h"
#include "nn/pool.h"

namespace noeira {

Result<bool> add_conv_layer(const nlohmann::json& layer, const std::string& type,
                            LayerList& list, Sequential& seq) {
  if (type == "conv2d") {
    Result<int64_t> out = size_field(layer, "out", -1, list);
    if (!out) return out.error();
    Result<int64_t> kernel = size_field(layer, "kernel", -1, list);
    if (!kernel) return kernel.error();
    Result<int64_t> stride = size_field(layer, "stride", 1, list);
    if (!stride) return stride.error();
    Result<int64_t> pad = size_field(layer, "pad", 0, list, 0);
    if (!pad) return pad.error();
    Result<Act> act = parse_act(layer.value("act", ""));
    if (!act) return list.error(act.error().message);
    seq.add(list.next_name("conv"), std::make_unique<Conv2d>(*out, *kernel, *stride, *pad,
                                                             layer.value("bias", true), *act));
    return true;
  }
  if (type == "maxpool2d" || type == "avgpool2d") {
    Result<int64_t> kernel = size_field(layer, "kernel", -1, list);
    if (!kernel) return kernel.error();
    Result<int64_t> stride = size_field(layer, "stride", *kernel, list);
    if (!stride) return stride.error();
    Result<int64_t> pad = size_field(layer, "pad", 0, list, 0);
    if (!pad) return pad.error();
    if (2 * *pad > *kernel) return list.error("'pad' must be at most half the kernel (as torch)");
    if (type == "maxpool2d")
      seq.add(list.next_name("maxpool"), std::make_unique<MaxPool2d>(*kernel, *stride, *pad));
    else
      seq.add(list.next_name("avgpool"), std::make_unique<AvgPool2d>(*kernel, *stride, *pad));
    return true;
  }
  if (type == "global_avgpool") {
    seq.add(list.next_name("gap"), std::make_unique<GlobalAvgPool>());
    return true;
  }
  if (type == "flatten") {
    seq.add(list.next_name("flatten"), std::make_unique<Flatten>());
    return true;
  }
  if (type == "batchnorm2d") {
    const double eps = layer.value("eps", 1e-5), momentum = layer.value("momentum", 0.1);
    if (!(eps > 0.0) || !(momentum >= 0.0 && momentum <= 1.0))
      return list.error("'eps' must be positive and 'momentum' in [0, 1]");
    seq.add(list.next_name("bn"), std::make_unique<BatchNorm2d>(static_cast<float>(eps),
                                                                static_cast<float>(momentum)));
    return true;
  }
  if (type == "dropout") {
    const double p = layer.value("p", 0.5);
    if (!(p >= 0.0 && p < 1.0)) return list.error("'p' must be in [0, 1)");
    // Masks are keyed by the dropout layer's 0-based index (docs/rng.md).
    const auto index = static_cast<uint32_t>(list.count("dropout"));
    seq.add(list.next_name("dropout"), std::make_unique<Dropout>(static_cast<float>(p), index));
    return true;
  }
  return false;
}

}  // namespace noeira
