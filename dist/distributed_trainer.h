// DistributedAutoregressiveTrainer: the AutoregressiveTrainer over N ranks (DESIGN.md
// section 2). Rank r trains rows r*B .. r*B + B - 1 of each step's global batch of N*B
// Philox windows (Ops::batch_windows' first_row), so N ranks see what one process with an
// N-times batch sees. The parameter and gradient arenas are one flat buffer each, padded
// to a multiple of N; rank r owns slice r.
//
// Gradients: summed over ranks with a reduce-scatter (Communicator::reduce_scatter_sum:
// each slice summed on its owner in an order fixed by N), then one scale by 1/N (torch's
// DDP averages the same way), then gathered back (all-gather) — a DDP all-reduce done as
// reduce-scatter + all-gather, so that every ZeRO stage can reuse the same reduction and
// give the same bits. Every rank then clips and updates identical full gradients, so the
// parameters stay identical on every rank without a parameter exchange.
//
// Stage 0 (DDP) runs here; ZeRO-1/2/3 (sharded optimizer state, gradients, parameters) and
// the NCCL engine are not implemented yet and are refused at create.
//
// Checkpoints: every rank holds the whole state; rank 0 writes it after a barrier (the
// format is the single-process one plus "ranks"; resuming needs the same rank count).
#pragma once
#include <memory>
#include <vector>

#include "dist/communicator.h"
#include "nn/training/autoregressive_trainer.h"

namespace noeira {

class DistributedAutoregressiveTrainer final : public AutoregressiveTrainer {
 public:
  // comm outlives the trainer. zero_stage: 0 (DDP) only, for now.
  static Result<std::unique_ptr<DistributedAutoregressiveTrainer>> create(
      std::unique_ptr<Module> model, const TrainerConfig& cfg, const AutoregressiveConfig& lm,
      const TokenCorpus& corpus, Communicator& comm, int zero_stage);

  int ranks() const override { return comm_->size(); }
  // Collective: every rank calls it; rank 0 writes.
  Status save_checkpoint(const std::filesystem::path& path) const override;
  int rank() const { return comm_->rank(); }
  int zero_stage() const { return zero_; }
  Communicator& communicator() const { return *comm_; }
  // Floats in the padded flat parameter buffer, and in one rank's slice of it.
  int64_t padded_params() const { return padded_; }
  int64_t slice() const { return padded_ / comm_->size(); }
  // Collective: an Error naming the ranks whose parameters differ from rank 0's (a hash of
  // the whole parameter arena). Synchronises; for tests (`train --check-replicas`).
  Status check_replicas() const;

 private:
  DistributedAutoregressiveTrainer() = default;
  void synchronize_gradients() override;
  void combine_train_stats(LossStats& stats, std::vector<float>& step_losses) const override;

  Communicator* comm_ = nullptr;
  int zero_ = 0;
  int64_t padded_ = 0;
  std::vector<float> grad_slice_;  // this rank's slice of the summed gradient
};

}  // namespace noeira
