// The compute ops every module, loss and optimizer calls (DESIGN.md section 2b), declared
// from the one list kernels/op_list.inc, where each op's contract is stated. kernels/cpu
// implements them (oneDNN, loops), kernels/cuda too (cuBLASLt, cuDNN, our kernels), one
// file per op each. What is not compute (copies, waiting, capture, timers, the reduction
// workspace) is the backend's Stream (kernels/stream.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/error.h"
#include "kernels/common/image_shapes.h"
#include "kernels/common/math.h"
#include "kernels/common/norm.h"
#include "kernels/view.h"

namespace noeira {

// Per-trainer step state, resident on the device. Kernels read batch offset and Adam
// step from here so a captured step can be replayed unchanged (DESIGN.md section 2).
struct StepCounters {
  int64_t step;            // optimizer steps taken so far
  int64_t batch_in_epoch;  // index of the current batch within the epoch
};

// Loss/accuracy accumulators, resident on the device, read back at epoch ends.
struct LossStats {
  double loss_sum;  // sum of per-sample losses
  int64_t correct;  // top-1 hits (classification)
  int64_t count;    // samples seen
};

// What a BatchNorm forward does after normalising, in the same pass (ResNet's basic block:
// relu(bn1(x)) and relu(bn2(x) + shortcut), nn/resnet_block.cpp): y = act(bn(x) + residual).
// residual: empty, or (B, C, S) in x's dtype; act: kNone or kReLU. Each step is rounded to
// the storage dtype as the separate ops (add, act_forward) store it, so the fused pass
// gives their bits and saves their passes over memory. The residual must not overlap y.
struct BatchNormEpilogue {
  ConstView residual;
  Act act = Act::kNone;
};

// How conv2d_backward writes dx (ResNet's chained blocks, nn/resnet_block.h): as the
// convolution's d(input), or (relu_post not empty) that plus residual taken through the
// ReLU whose output was relu_post: dx = add_relu_grad(d(input), residual, relu_post)
// (kernels/common/math.h), the bits of conv2d_backward then add_relu_backward, without
// their pass over dx. residual and relu_post: both or neither, x's elements and dtype, not
// overlapping dx.
struct ConvDxEpilogue {
  ConstView residual;
  ConstView relu_post;
  bool empty() const { return relu_post.empty(); }
};

class Ops {
 public:
  virtual ~Ops() = default;
#define NOEIRA_OP(ret, name, params, args) virtual ret name params = 0;
#define NOEIRA_QUERY(ret, name, params, args) virtual ret name params const = 0;
#include "kernels/op_list.inc"
};

}  // namespace noeira
