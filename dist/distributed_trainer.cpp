#include "dist/distributed_trainer.h"

namespace noeira {

Result<std::unique_ptr<DistributedAutoregressiveTrainer>> DistributedAutoregressiveTrainer::create(
    std::unique_ptr<Module> model, const TrainerConfig& cfg, const AutoregressiveConfig& lm,
    const TokenCorpus& corpus, Communicator& comm, int zero_stage) {
  if (zero_stage != 0)
    return make_error("--zero " + std::to_string(zero_stage) +
                      ": ZeRO stages 1-3 are not implemented yet; use --zero 0 (DDP)");
  if (cfg.device != Device::kCpu)
    return make_error("the distributed trainer runs on the CPU (MPI) only so far; the GPU "
                      "engine (NCCL) is not implemented yet: use --target cpu");
  if (cfg.use_train_cuda_graph) return make_error("--graph needs the GPU engine (NCCL)");
  std::unique_ptr<DistributedAutoregressiveTrainer> t(new DistributedAutoregressiveTrainer());
  t->comm_ = &comm;
  t->zero_ = zero_stage;
  t->param_pad_multiple_ = comm.size();
  AutoregressiveConfig mine = lm;
  mine.first_row = static_cast<int64_t>(comm.rank()) * cfg.batch;
  NOEIRA_TRY(t->open(std::move(model), cfg));
  NOEIRA_TRY(t->build(mine, corpus));
  t->padded_ = static_cast<int64_t>(t->plan_.bytes(MemCategory::kGrads) / sizeof(float));
  if (t->padded_ % comm.size() != 0)
    return make_error("internal: the gradient arena (" + std::to_string(t->padded_) +
                      " floats) is not padded to a multiple of " + std::to_string(comm.size()));
  t->grad_slice_.resize(static_cast<size_t>(t->slice()));
  return t;
}

// DDP: sum (reduce-scatter, owner-first order), one scale, all-gather. The gradient arena
// is host memory on the CPU backend; the ops before it have finished (CPU ops are
// synchronous).
void DistributedAutoregressiveTrainer::synchronize_gradients() {
  float* g = static_cast<float*>(arenas_.base(MemCategory::kGrads));
  const int64_t n = slice();
  comm_->reduce_scatter_sum(g, grad_slice_.data(), n);
  const float ranks = static_cast<float>(comm_->size());
  for (float& v : grad_slice_) v /= ranks;
  comm_->all_gather(grad_slice_.data(), g, n);
}

Status DistributedAutoregressiveTrainer::check_replicas() const {
  backend_.ops->synchronize();
  const auto* p = static_cast<const unsigned char*>(arenas_.base(MemCategory::kParams));
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes
  for (size_t i = 0, n = plan_.bytes(MemCategory::kParams); i < n; ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  // Each rank's two 32-bit halves in its own places; the sum gathers them exactly.
  const int N = comm_->size(), r = comm_->rank();
  std::vector<double> all(static_cast<size_t>(2 * N), 0.0);
  all[static_cast<size_t>(2 * r)] = static_cast<double>(h >> 32);
  all[static_cast<size_t>(2 * r + 1)] = static_cast<double>(h & 0xffffffffu);
  comm_->all_sum(all.data(), 2 * N);
  std::string differ;
  for (int k = 1; k < N; ++k)
    if (all[static_cast<size_t>(2 * k)] != all[0] || all[static_cast<size_t>(2 * k + 1)] != all[1])
      differ += (differ.empty() ? "" : ", ") + std::to_string(k);
  if (!differ.empty())
    return make_error("after step " + std::to_string(step_) + " the parameters of rank(s) " +
                      differ + " differ from rank 0's");
  return {};
}

// Every rank reaches the barrier before rank 0 writes (the write itself is atomic: a
// temporary file renamed), and every rank learns whether it worked.
Status DistributedAutoregressiveTrainer::save_checkpoint(const std::filesystem::path& path) const {
  comm_->barrier();
  Status s;
  if (comm_->rank() == 0) s = AutoregressiveTrainer::save_checkpoint(path);
  double failed = s ? 0.0 : 1.0;
  comm_->all_sum(&failed, 1);
  if (!s) return s;
  if (failed != 0.0) return make_error("rank 0 could not write the checkpoint " + path.string());
  return {};
}

// The training loss over every rank's rows; per step, the mean of the ranks' batch means
// (the global batch's mean: every rank has the same number of rows).
void DistributedAutoregressiveTrainer::combine_train_stats(LossStats& stats,
                                                           std::vector<float>& step_losses) const {
  std::vector<double> v(3 + step_losses.size());
  v[0] = stats.loss_sum;
  v[1] = static_cast<double>(stats.correct);
  v[2] = static_cast<double>(stats.count);
  for (size_t i = 0; i < step_losses.size(); ++i) v[3 + i] = step_losses[i];
  comm_->all_sum(v.data(), static_cast<int64_t>(v.size()));
  stats.loss_sum = v[0];
  stats.correct = static_cast<int64_t>(v[1]);
  stats.count = static_cast<int64_t>(v[2]);
  for (size_t i = 0; i < step_losses.size(); ++i)
    step_losses[i] = static_cast<float>(v[3 + i] / comm_->size());
}

}  // namespace noeira
