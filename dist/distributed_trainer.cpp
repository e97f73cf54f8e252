#include "dist/distributed_trainer.h"

#include <algorithm>
#include <cstring>

#include "kernels/common/clip.h"

namespace noeira {

Result<std::unique_ptr<DistributedAutoregressiveTrainer>> DistributedAutoregressiveTrainer::create(
    std::unique_ptr<Module> model, const TrainerConfig& cfg, const AutoregressiveConfig& lm,
    const TokenCorpus& corpus, Communicator& comm, int zero_stage) {
  if (zero_stage < 0 || zero_stage > 3)
    return make_error("--zero " + std::to_string(zero_stage) +
                      ": ZeRO stages are 0 (DDP), 1 (optimizer state), 2 (+ gradients) and 3 "
                      "(+ parameters)");
  if (cfg.device != Device::kCpu)
    return make_error("the distributed trainer runs on the CPU (MPI) only so far; the GPU "
                      "engine (NCCL) is not implemented yet: use --target cpu");
  if (cfg.use_train_cuda_graph) return make_error("--graph needs the GPU engine (NCCL)");
  if (zero_stage == 3 && cfg.amp == BF16Policy)
    return make_error("--zero 3 with --dtype bf16: sharded parameters have no bf16 copies yet; "
                      "use --zero 2 (or --dtype fp32)");
  std::unique_ptr<DistributedAutoregressiveTrainer> t(new DistributedAutoregressiveTrainer());
  t->comm_ = &comm;
  t->zero_ = zero_stage;
  t->param_pad_multiple_ = comm.size();
  t->optimizer_clips_ = false;  // clip_slice does it, from the reduced slices
  AutoregressiveConfig mine = lm;
  mine.first_row = static_cast<int64_t>(comm.rank()) * cfg.batch;
  t->optim_slice_ = zero_stage >= 1 ? comm.rank() : -1;  // ZeRO-1..3: Adam state for the own slice
  NOEIRA_TRY(t->open(std::move(model), cfg));
  NOEIRA_TRY(t->build(mine, corpus));
  for (const ParamInfo& p : t->params_.all())
    t->segments_.push_back(static_cast<int64_t>(p.value.offset / sizeof(float)));
  t->segments_.push_back(t->padded_);
  return t;
}

Status DistributedAutoregressiveTrainer::plan_shards() {
  padded_ = padded_params_;
  if (padded_ % comm_->size() != 0)
    return make_error("internal: the parameter arena (" + std::to_string(padded_) +
                      " floats) is not padded to a multiple of " + std::to_string(comm_->size()));
  if (zero_ < 2) return {};
  Result<std::unique_ptr<LayerShards>> s =
      LayerShards::plan(*model_, params_, padded_, zero_, *comm_);
  if (!s) return s.error();
  shards_ = std::move(s).value();
  const size_t bytes = static_cast<size_t>(shards_->arena_floats()) * sizeof(float);
  plan_.set_bytes(MemCategory::kGrads, bytes);
  if (zero_ >= 3) plan_.set_bytes(MemCategory::kParams, bytes);
  return {};
}

void DistributedAutoregressiveTrainer::bind_shards() {
  if (!shards_) return;
  shards_->bind(arenas_, *backend_.ops);
  ctx_->set_hooks(shards_.get());
}

// torch's clip_grad_norm_ over the whole reduced gradient, computed from the slices.
void DistributedAutoregressiveTrainer::clip_slice(float* own) const {
  const double max_norm = cfg_.optimizer.grad_clip;
  if (!(max_norm > 0.0)) return;
  const int64_t lo = comm_->rank() * slice(), hi = lo + slice();
  const size_t n_params = segments_.size() - 1;
  std::vector<double> sq(n_params, 0.0);
  for (size_t i = 0; i < n_params; ++i) {
    const int64_t a = std::max(lo, segments_[i]), b = std::min(hi, segments_[i + 1]);
    double s = 0.0;
    for (int64_t j = a; j < b; ++j) s += static_cast<double>(own[j - lo]) * own[j - lo];
    sq[i] = s;
  }
  comm_->all_sum(sq.data(), static_cast<int64_t>(n_params));
  double total_sq = 0.0;
  for (double s : sq) total_sq += clip_norm_square(clip_segment_norm(s));
  const float coef = clip_coefficient(clip_total_norm(total_sq), static_cast<float>(max_norm));
  for (int64_t j = 0; j < slice(); ++j) own[j] *= coef;
}

void DistributedAutoregressiveTrainer::begin_exchange() {
  bytes_before_step_ = comm_->collective_bytes();
}

// Sum into the own slice, one scale, clip; DDP then gathers the gradients back. ZeRO-2/3
// reduced each layer's bucket during backward (LayerShards::after_backward) and point the
// optimizer at the slices. The arenas are host memory on the CPU backend, and CPU ops run
// synchronously.
void DistributedAutoregressiveTrainer::synchronize_gradients() {
  const int64_t n = slice();
  float* g = static_cast<float*>(arenas_.memory(MemCategory::kGrads));
  float* own = shards_ ? shards_->grad_slice() : g + comm_->rank() * n;
  if (!shards_) comm_->reduce_scatter_sum(g, own, n);
  const float ranks = static_cast<float>(comm_->size());
  for (int64_t j = 0; j < n; ++j) own[j] /= ranks;
  clip_slice(own);
  if (zero_ == 0) comm_->all_gather(own, g, n);
  if (shards_) shards_->window_slices();
}

// ZeRO-1/2: every rank updated its own slice; gather the parameters. ZeRO-3 keeps the slice.
void DistributedAutoregressiveTrainer::synchronize_parameters() {
  if (zero_ == 1 || zero_ == 2) {
    float* p = static_cast<float*>(arenas_.memory(MemCategory::kParams));
    comm_->all_gather(p + comm_->rank() * slice(), p, slice());
  }
  step_bytes_ = comm_->collective_bytes() - bytes_before_step_;
}

std::vector<float> DistributedAutoregressiveTrainer::parameter_arena_host() const {
  if (zero_ < 3) return AutoregressiveTrainer::parameter_arena_host();
  std::vector<float> whole(static_cast<size_t>(padded_), 0.0f);
  comm_->all_gather(shards_->param_slice(), whole.data(), slice());
  return whole;
}

void DistributedAutoregressiveTrainer::set_parameter_arena(const std::vector<float>& whole) {
  if (zero_ < 3) return AutoregressiveTrainer::set_parameter_arena(whole);
  backend_.ops->copy_to_device(shards_->param_slice(), whole.data() + comm_->rank() * slice(),
                               static_cast<size_t>(slice()) * sizeof(float));
}

std::vector<float> DistributedAutoregressiveTrainer::optimizer_state_host(const Slot& s) const {
  if (zero_ == 0) return AutoregressiveTrainer::optimizer_state_host(s);
  std::vector<float> whole(static_cast<size_t>(padded_), 0.0f);
  float* own = whole.data() + comm_->rank() * slice();
  backend_.ops->copy_to_host(own, arenas_.ptr(s), s.bytes);
  comm_->all_gather(own, whole.data(), slice());
  return whole;
}

void DistributedAutoregressiveTrainer::set_optimizer_state(const Slot& s,
                                                           const std::vector<float>& whole) {
  if (zero_ == 0) return AutoregressiveTrainer::set_optimizer_state(s, whole);
  backend_.ops->copy_to_device(arenas_.ptr(s), whole.data() + comm_->rank() * slice(), s.bytes);
}

Status DistributedAutoregressiveTrainer::check_replicas() const {
  backend_.ops->synchronize();
  // ZeRO-3: the parameters as a forward would gather them from the slices.
  const std::vector<float> values = parameter_arena_host();
  const auto* p = reinterpret_cast<const unsigned char*>(values.data());
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes
  for (size_t i = 0, n = values.size() * sizeof(float); i < n; ++i)
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

// Every rank reaches the barrier and takes part in gathering the sharded state before
// rank 0 writes (the write itself is atomic: a temporary file renamed), and every rank
// learns whether it worked.
Status DistributedAutoregressiveTrainer::save_checkpoint(const std::filesystem::path& path) const {
  comm_->barrier();
  // TrainerCore::save_checkpoint gathers the parameters (ZeRO-3) and the optimizer state
  // (ZeRO-1..3), collectives, in this order on every rank; only rank 0 keeps the file.
  Status s;
  if (comm_->rank() == 0) {
    s = AutoregressiveTrainer::save_checkpoint(path);
  } else {
    (void)parameter_arena_host();
    for (const auto& [name, slot] : optimizer_->state()) (void)optimizer_state_host(slot);
  }
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
