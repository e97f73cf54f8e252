// The Augmenter (DESIGN.md section 2): before each epoch's steps, a random crop (with
// padding) and horizontal flip of every training image, from the pristine resident set
// into a second resident copy that the epoch's batches are gathered from. It runs eagerly
// between epochs, like the shuffle, so a captured step reads it on replay unchanged; the
// pristine set is never written. Draws: Philox(seed, augment, epoch, sample)
// (kernels/common/augment.h), mirrored bit for bit by the twin.
#pragma once
#include "kernels/ops.h"
#include "nn/memory_plan.h"

namespace noeira {

class Augmenter {
 public:
  explicit Augmenter(const AugmentSpec& spec) : spec_(spec) {}
  // Reserves the augmented copy: `count` samples of shape (C, H, W). An Error for samples
  // that are not images or have more channels than AugmentSpec holds fill values for.
  Status plan(MemoryPlan& plan, const Shape& sample, int64_t count);
  // Overwrites the copy with epoch `epoch`'s crops and flips of `pristine` (n, C, H, W).
  void run(Ops& ops, const Arenas& arenas, const Slot& pristine, uint64_t seed,
           uint32_t epoch) const;
  // The augmented copy (the batches' source).
  const Slot& output() const { return out_; }
  const AugmentSpec& spec() const { return spec_; }

 private:
  AugmentSpec spec_;
  Slot out_;
};

}  // namespace noeira
