// The gpt family's data-parallel trainer from its recipe: models/trainer_factory.h's parts
// over the ranks of a communicator.
#pragma once
#include <memory>

#include "models/trainer_factory.h"
#include "parallel/distributed_trainer.h"

namespace noeira {

// The gpt family over the ranks of comm (data parallel, ZeRO stage zero_stage).
Result<std::unique_ptr<DistributedAutoregressiveTrainer>> make_distributed_lm_trainer(
    const Recipe& recipe, const DataSplit& data, const TrainerOptions& o, Communicator& comm,
    int zero_stage);

}  // namespace noeira
