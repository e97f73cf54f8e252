// Calls a Sequential makes around each child's forward and backward, for a trainer that
// keeps a layer's state elsewhere between uses: a ZeRO-2/3 rank (parallel/layer_shards.h)
// gathers a layer's parameters before it runs and reduces its gradient bucket as soon as
// its backward is done. Children a hook does not know are no-ops for it.
#pragma once

namespace noeira {

class Module;

class LayerHooks {
 public:
  virtual ~LayerHooks() = default;
  virtual void before_forward(const Module& layer) = 0;
  virtual void before_backward(const Module& layer) = 0;
  virtual void after_backward(const Module& layer) = 0;
};

}  // namespace noeira
