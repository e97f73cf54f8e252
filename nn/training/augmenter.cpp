#include "nn/training/augmenter.h"

namespace noeira {

Status Augmenter::plan(MemoryPlan& plan, const Shape& sample, int64_t count) {
  if (sample.rank != 3)
    return make_error("augmentation needs image samples (C, H, W); this data set has " +
                      sample.str() + "; drop the recipe's augment section");
  if (sample[0] > AugmentSpec::kMaxChannels)
    return make_error("augmentation handles up to " + std::to_string(AugmentSpec::kMaxChannels) +
                      " channels; samples are " + sample.str());
  spec_.count = count;
  spec_.channels = sample[0];
  spec_.height = sample[1];
  spec_.width = sample[2];
  out_ = plan.reserve(MemCategory::kDataset, sample.with_batch(count), DType::kF32);
  return {};
}

void Augmenter::run(Ops& ops, const Arenas& arenas, const Slot& pristine, uint64_t seed,
                    uint32_t epoch) const {
  ops.augment_crop_flip(spec_, arenas.as<float>(pristine), arenas.as<float>(out_), seed, epoch);
}

}  // namespace noeira
