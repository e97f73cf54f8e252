// Parameters are registered while planning: each gets a value slot in the parameter
// arena and a gradient slot at the same offset in the gradient arena, so optimizers
// can treat both as flat arrays.
#pragma once
#include <string>
#include <vector>

#include "nn/memory_plan.h"

namespace noeira {

// How a parameter starts (nn/init.h): weights from the recipe's init, biases and shifts
// at 0, scales (BatchNorm's gamma) at 1.
enum class ParamRole : uint8_t { kWeight, kBias, kScale, kShift };

// Parameters start on multiples of this many elements in the flat arenas: 32 bytes of
// fp32 (values, gradients, optimizer state), 16 bytes of bf16 (the copies).
inline constexpr size_t kParamAlignElems = 8;

struct ParamInfo {
  std::string name;  // e.g. "fc1.weight"
  Slot value;
  Slot grad;
  Slot copy;  // bf16 copy (BF16Policy), refreshed after every optimizer step
  ParamRole role = ParamRole::kWeight;
  int64_t fan_in = 0;
  int64_t fan_out = 0;
  // Its one writer overwrites the whole gradient every step (mark_grad_overwritten), so the
  // trainer need not zero it first.
  bool grad_overwritten = false;
};

// Module state that is saved in checkpoints but not trained (BatchNorm's running
// statistics): a slot in kBuffers, every element starting at `init`.
struct BufferInfo {
  std::string name;  // e.g. "bn1.running_var"
  Slot value;
  float init = 0.0f;
};

// A module's handle to one of its parameters.
struct ParamRef {
  Slot value;
  Slot grad;
  Slot copy;
};

class ParamRegistry {
 public:
  // With low-precision copies on (BF16Policy), every parameter also gets a bf16 copy at
  // half its value's byte offset in kParamCopies, so one flat cast refreshes all of them.
  void set_low_precision_copies(bool on) { copies_ = on; }
  ParamRef add(MemoryPlan& plan, std::string name, const Shape& shape, ParamRole role,
               int64_t fan_in, int64_t fan_out);
  Slot add_buffer(MemoryPlan& plan, std::string name, const Shape& shape, float init);
  // Called by the one op that writes a parameter's gradient when it overwrites all of it
  // every step (a Linear layer's own weight); never for a parameter another op also uses.
  void mark_grad_overwritten(const ParamRef& p);
  const std::vector<ParamInfo>& all() const { return params_; }
  const std::vector<BufferInfo>& buffers() const { return buffers_; }
  int64_t count() const;  // scalar parameters, excluding alignment padding

 private:
  std::vector<ParamInfo> params_;
  std::vector<BufferInfo> buffers_;
  bool copies_ = false;
};

}  // namespace noeira
