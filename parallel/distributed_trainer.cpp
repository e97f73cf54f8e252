#include "parallel/distributed_trainer.h"

#include <algorithm>
#include <cstring>


namespace noeira {

Result<std::unique_ptr<DistributedAutoregressiveTrainer>> DistributedAutoregressiveTrainer::create(
    std::unique_ptr<Module> model, const TrainerConfig& cfg, const AutoregressiveConfig& lm,
    const TokenCorpus& corpus, Communicator& comm, int zero_stage) {
  if (zero_stage < 0 || zero_stage > 3)
    return make_error("--zero " + std::to_string(zero_stage) +
                      ": ZeRO stages are 0 (DDP), 1 (optimizer state), 2 (+ gradients) and 3 "
                      "(+ parameters)");
  if (cfg.use_train_cuda_graph)
    return make_error("--graph with data parallelism: capturing a step with collectives is not "
                      "implemented yet; drop --graph");
  if (zero_stage == 3 && cfg.amp == BF16Policy)
    return make_error("--zero 3 with --dtype bf16: sharded parameters have no bf16 copies yet; "
                      "use --zero 2 (or --dtype fp32)");
  std::unique_ptr<DistributedAutoregressiveTrainer> t(new DistributedAutoregressiveTrainer());
  t->comm_ = &comm;
  t->zero_ = zero_stage;
  t->param_pad_multiple_ = comm.size();
  t->optimizer_clips_ = false;  // Ops::clip_slice does it, from the reduced slices
  AutoregressiveConfig mine = lm;
  mine.first_row = static_cast<int64_t>(comm.rank()) * cfg.batch;
  t->optim_slice_ = zero_stage >= 1 ? comm.rank() : -1;  // ZeRO-1..3: Adam state for the own slice
  NOEIRA_TRY(t->open(std::move(model), cfg));
  NOEIRA_TRY(comm.attach(*t->backend_.stream));
  NOEIRA_TRY(t->build(mine, corpus));
  return t;
}

// Every stage: the layer buckets; stages 2 and 3 shrink the arenas to a rank's slice and
// windows. Also the exchange's own buffers: the parameter offsets (clipping's segments),
// this rank's and every rank's per-parameter sums of squares, the clip coefficient, and
// the engine's scratch.
Status DistributedAutoregressiveTrainer::plan_shards() {
  padded_ = padded_params_;
  const int64_t N = comm_->size();
  if (padded_ % N != 0)
    return make_error("internal: the parameter arena (" + std::to_string(padded_) +
                      " floats) is not padded to a multiple of " + std::to_string(N));
  Result<std::unique_ptr<LayerShards>> s = LayerShards::plan(*model_, params_, padded_, zero_, *comm_);
  if (!s) return s.error();
  shards_ = std::move(s).value();
  if (zero_ >= 2) {
    const size_t bytes = static_cast<size_t>(shards_->arena_floats()) * sizeof(float);
    plan_.set_bytes(MemCategory::kGrads, bytes);
    if (zero_ >= 3) plan_.set_bytes(MemCategory::kParams, bytes);
  }
  for (const ParamInfo& p : params_.all())
    segments_.push_back(static_cast<int64_t>(p.value.offset / sizeof(float)));
  segments_.push_back(padded_);
  const auto n_params = static_cast<int64_t>(params_.all().size());
  const auto bytes = [](int64_t n, size_t size) { return static_cast<size_t>(n) * size; };
  segments_slot_ = plan_.reserve_bytes(MemCategory::kScalars, bytes(n_params + 1, sizeof(int64_t)));
  sumsq_own_ = plan_.reserve_bytes(MemCategory::kScalars, bytes(n_params, sizeof(double)));
  sumsq_all_ = plan_.reserve_bytes(MemCategory::kScalars, bytes(N * n_params, sizeof(double)));
  coef_ = plan_.reserve_bytes(MemCategory::kScalars, sizeof(float));
  comm_scratch_ = plan_.reserve_bytes(MemCategory::kWorkspace, comm_->scratch_bytes(slice()));
  return {};
}

void DistributedAutoregressiveTrainer::bind_shards() {
  shards_->bind(arenas_, *backend_.stream);
  ctx_->set_hooks(shards_.get());
  backend_.stream->copy_to_device(arenas_.ptr(segments_slot_), segments_.data(),
                                  segments_.size() * sizeof(int64_t));
  comm_->bind_scratch(comm_scratch_.valid() ? arenas_.ptr(comm_scratch_) : nullptr);
}

void DistributedAutoregressiveTrainer::begin_exchange() {
  bytes_before_step_ = comm_->collective_bytes();
}

// The buckets were reduce-scattered into the slices during backward
// (LayerShards::after_backward). Then one scale by 1/N and global-norm clipping from the
// slices: each rank's per-parameter sums of squares, gathered, added in rank order
// (Ops::slice_mean_sumsq, Ops::clip_slice). DDP gathers the gradients back; ZeRO-2/3 point
// the optimizer at the slices.
void DistributedAutoregressiveTrainer::synchronize_gradients() {
  Ops& ops = *backend_.ops;
  const int64_t n = slice(), N = comm_->size();
  float* own = shards_->grad_slice();
  const auto n_params = static_cast<int64_t>(segments_.size()) - 1;
  const float max_norm = static_cast<float>(cfg_.optimizer.grad_clip);
  const bool clip = max_norm > 0.0f;
  comm_->join();
  ops.slice_mean_sumsq(own, comm_->rank() * n, n, static_cast<float>(N),
                       clip ? arenas_.as<int64_t>(segments_slot_) : nullptr, n_params,
                       arenas_.as<double>(sumsq_own_));
  if (clip) {
    comm_->all_gather_bytes(arenas_.ptr(sumsq_own_), arenas_.ptr(sumsq_all_),
                            n_params * static_cast<int64_t>(sizeof(double)));
    comm_->join();
    ops.clip_slice(own, n, arenas_.as<double>(sumsq_all_), N, n_params, max_norm,
                   arenas_.as<float>(coef_));
  }
  if (zero_ == 0) {
    comm_->all_gather(own, static_cast<float*>(arenas_.memory(MemCategory::kGrads)), n);
    comm_->join();
  }
  shards_->window_slices();
}

// ZeRO-1/2: every rank updated its own slice; gather the parameters. ZeRO-3 keeps the slice.
void DistributedAutoregressiveTrainer::synchronize_parameters() {
  if (zero_ == 1 || zero_ == 2) {
    float* p = static_cast<float*>(arenas_.memory(MemCategory::kParams));
    comm_->all_gather(p + comm_->rank() * slice(), p, slice());
    comm_->join();
  }
  step_bytes_ = comm_->collective_bytes() - bytes_before_step_;
}

// ZeRO-3: each rank's slice, copied to the host and gathered there (host engine).
std::vector<float> DistributedAutoregressiveTrainer::parameter_arena_host() const {
  if (zero_ < 3) return AutoregressiveTrainer::parameter_arena_host();
  std::vector<float> whole(static_cast<size_t>(padded_), 0.0f);
  float* own = whole.data() + comm_->rank() * slice();
  backend_.stream->copy_to_host(own, shards_->param_slice(), static_cast<size_t>(slice()) * sizeof(float));
  comm_->host().all_gather(own, whole.data(), slice());
  return whole;
}

void DistributedAutoregressiveTrainer::set_parameter_arena(const std::vector<float>& whole) {
  if (zero_ < 3) return AutoregressiveTrainer::set_parameter_arena(whole);
  backend_.stream->copy_to_device(shards_->param_slice(), whole.data() + comm_->rank() * slice(),
                                  static_cast<size_t>(slice()) * sizeof(float));
}

std::vector<float> DistributedAutoregressiveTrainer::optimizer_state_host(const Slot& s) const {
  if (zero_ == 0) return AutoregressiveTrainer::optimizer_state_host(s);
  std::vector<float> whole(static_cast<size_t>(padded_), 0.0f);
  float* own = whole.data() + comm_->rank() * slice();
  backend_.stream->copy_to_host(own, arenas_.ptr(s), s.bytes);
  comm_->host().all_gather(own, whole.data(), slice());
  return whole;
}

void DistributedAutoregressiveTrainer::set_optimizer_state(const Slot& s,
                                                           const std::vector<float>& whole) {
  if (zero_ == 0) return AutoregressiveTrainer::set_optimizer_state(s, whole);
  backend_.stream->copy_to_device(arenas_.ptr(s), whole.data() + comm_->rank() * slice(), s.bytes);
}

Status DistributedAutoregressiveTrainer::check_replicas() const {
  backend_.stream->synchronize();
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
