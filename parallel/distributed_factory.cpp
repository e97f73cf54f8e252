#include "parallel/distributed_factory.h"

namespace noeira {

Result<std::unique_ptr<DistributedAutoregressiveTrainer>> make_distributed_lm_trainer(
    const Recipe& recipe, const DataSplit& data, const TrainerOptions& o, Communicator& comm,
    int zero_stage) {
  Result<LmParts> p = lm_parts(recipe, data, o);
  if (!p) return p.error();
  return DistributedAutoregressiveTrainer::create(std::move(p->model), p->cfg, p->lm,
                                                  data.corpus, comm, zero_stage);
}

}  // namespace noeira
