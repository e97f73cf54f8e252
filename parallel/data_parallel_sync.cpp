#include "parallel/data_parallel_sync.h"

#include <algorithm>
#include <cstdio>
#include <cstring>


namespace noeira {

Result<std::unique_ptr<DataParallelSync>> DataParallelSync::create(Communicator& comm, int zero_stage) {
  if (zero_stage < 0 || zero_stage > 3)
    return make_error("--zero " + std::to_string(zero_stage) +
                      ": ZeRO stages are 0 (DDP), 1 (optimizer state), 2 (+ gradients) and 3 "
                      "(+ parameters)");
  std::unique_ptr<DataParallelSync> s(new DataParallelSync());
  s->comm_ = &comm;
  s->zero_ = zero_stage;
  return s;
}

Status DataParallelSync::check(const TrainerConfig& cfg) const {
  if (cfg.use_train_cuda_graph)
    return make_error("--graph with data parallelism: capturing a step with collectives is not "
                      "implemented yet; drop --graph");
  if (zero_ == 3 && cfg.amp == BF16Policy)
    return make_error("--zero 3 with --dtype bf16: sharded parameters have no bf16 copies yet; "
                      "use --zero 2 (or --dtype fp32)");
  return {};
}

// Every stage: the layer buckets; stages 2 and 3 shrink the arenas to a rank's slice and
// windows. Also the exchange's own buffers: the parameter offsets (clipping's segments),
// this rank's and every rank's per-parameter sums of squares, the clip coefficient, and
// the engine's scratch.
Status DataParallelSync::plan(SyncTarget& t) {
  max_norm_ = static_cast<float>(t.config.optimizer.grad_clip);
  padded_ = t.padded_params;
  MemoryPlan& plan_ = t.plan;
  const int64_t N = comm_->size();
  if (padded_ % N != 0)
    return make_error("internal: the parameter arena (" + std::to_string(padded_) +
                      " floats) is not padded to a multiple of " + std::to_string(N));
  Result<std::unique_ptr<LayerShards>> s = LayerShards::plan(t.model, t.params, padded_, zero_, *comm_);
  if (!s) return s.error();
  shards_ = std::move(s).value();
  if (zero_ >= 2) {
    const size_t bytes = static_cast<size_t>(shards_->arena_floats()) * sizeof(float);
    plan_.set_bytes(MemCategory::kGrads, bytes);
    if (zero_ >= 3) plan_.set_bytes(MemCategory::kParams, bytes);
  }
  segments_.clear();
  for (const ParamInfo& p : t.params.all())
    segments_.push_back(static_cast<int64_t>(p.value.offset / sizeof(float)));
  segments_.push_back(padded_);
  const auto n_params = static_cast<int64_t>(t.params.all().size());
  const auto bytes = [](int64_t n, size_t size) { return static_cast<size_t>(n) * size; };
  segments_slot_ = plan_.reserve_bytes(MemCategory::kScalars, bytes(n_params + 1, sizeof(int64_t)));
  sumsq_own_ = plan_.reserve_bytes(MemCategory::kScalars, bytes(n_params, sizeof(double)));
  sumsq_all_ = plan_.reserve_bytes(MemCategory::kScalars, bytes(N * n_params, sizeof(double)));
  coef_ = plan_.reserve_bytes(MemCategory::kScalars, sizeof(float));
  comm_scratch_ = plan_.reserve_bytes(MemCategory::kWorkspace, comm_->scratch_bytes(slice()));
  rank_sum_doubles_ = N > 1 ? t.cross_rank_doubles : 0;
  if (rank_sum_doubles_ > 0)
    rank_gather_ = plan_.reserve_bytes(MemCategory::kWorkspace,
                                       bytes(N * rank_sum_doubles_, sizeof(double)));
  return {};
}

void DataParallelSync::bind(SyncTarget& t) {
  arenas_ = t.arenas;
  ops_ = t.ops;
  stream_ = t.stream;
  shards_->bind(*arenas_, *stream_);
  t.context->set_hooks(shards_.get());
  stream_->copy_to_device(arenas_->ptr(segments_slot_), segments_.data(),
                       segments_.size() * sizeof(int64_t));
  comm_->bind_scratch(comm_scratch_.valid() ? arenas_->ptr(comm_scratch_) : nullptr);
}

// Every rank's n doubles gathered rank-major, then added in rank order on every rank.
void DataParallelSync::sum(const double* in, double* out, int64_t n) {
  if (n > rank_sum_doubles_) {  // a programming error: a module asked more than it planned
    std::fprintf(stderr, "noeira: internal error: a sum over ranks of %lld doubles, %lld planned\n",
                 static_cast<long long>(n), static_cast<long long>(rank_sum_doubles_));
    comm_->abort(1);
  }
  double* all = arenas_->as<double>(rank_gather_);  // (N, n)
  comm_->all_gather_bytes(in, all, n * static_cast<int64_t>(sizeof(double)));
  comm_->join();
  ops_->sum_over_ranks(all, comm_->size(), n, out);
}

void DataParallelSync::begin_step() {
  bytes_before_step_ = comm_->collective_bytes();
}

// The buckets were reduce-scattered into the slices during backward
// (LayerShards::after_backward). Then one scale by 1/N and global-norm clipping from the
// slices: each rank's per-parameter sums of squares, gathered, added in rank order
// (Ops::slice_mean_sumsq, Ops::clip_slice). DDP gathers the gradients back; ZeRO-2/3 point
// the optimizer at the slices.
void DataParallelSync::after_backward() {
  Ops& ops = *ops_;
  const int64_t n = slice(), N = comm_->size();
  float* own = shards_->grad_slice();
  const auto n_params = static_cast<int64_t>(segments_.size()) - 1;
  const bool clip = max_norm_ > 0.0f;
  comm_->join();
  ops.slice_mean_sumsq(own, comm_->rank() * n, n, static_cast<float>(N),
                       clip ? arenas_->as<int64_t>(segments_slot_) : nullptr, n_params,
                       arenas_->as<double>(sumsq_own_));
  if (clip) {
    comm_->all_gather_bytes(arenas_->ptr(sumsq_own_), arenas_->ptr(sumsq_all_),
                            n_params * static_cast<int64_t>(sizeof(double)));
    comm_->join();
    ops.clip_slice(own, n, arenas_->as<double>(sumsq_all_), N, n_params, max_norm_,
                   arenas_->as<float>(coef_));
  }
  if (zero_ == 0) {
    comm_->all_gather(own, static_cast<float*>(arenas_->memory(MemCategory::kGrads)), n);
    comm_->join();
  }
  shards_->window_slices();
}

// ZeRO-1/2: every rank updated its own slice; gather the parameters. ZeRO-3 keeps the slice.
void DataParallelSync::after_step() {
  if (zero_ == 1 || zero_ == 2) {
    float* p = static_cast<float*>(arenas_->memory(MemCategory::kParams));
    comm_->all_gather(p + comm_->rank() * slice(), p, slice());
    comm_->join();
  }
  step_bytes_ = comm_->collective_bytes() - bytes_before_step_;
}

// ZeRO-3: each rank's slice, copied to the host and gathered there (host engine).
// The whole flat parameter buffer on the host: the arena, or (ZeRO-3) every rank's slice,
// gathered on the host engine (collective).
std::vector<float> DataParallelSync::whole_parameters(Stream& stream, const Arenas& arenas) const {
  std::vector<float> whole(static_cast<size_t>(padded_), 0.0f);
  if (zero_ < 3) {
    stream.copy_to_host(whole.data(), arenas.memory(MemCategory::kParams), whole.size() * sizeof(float));
    return whole;
  }
  float* own = whole.data() + comm_->rank() * slice();
  stream.copy_to_host(own, shards_->param_slice(), static_cast<size_t>(slice()) * sizeof(float));
  comm_->host().all_gather(own, whole.data(), slice());
  return whole;
}

std::vector<float> DataParallelSync::parameter_arena_host(const SyncTarget& t) const {
  return whole_parameters(*t.stream, *t.arenas);
}

void DataParallelSync::set_parameter_arena(const SyncTarget& t, const std::vector<float>& whole) const {
  if (zero_ < 3) return GradientSync::set_parameter_arena(t, whole);
  t.stream->copy_to_device(shards_->param_slice(), whole.data() + comm_->rank() * slice(),
                        static_cast<size_t>(slice()) * sizeof(float));
}

std::vector<float> DataParallelSync::optimizer_state_host(const SyncTarget& t, const Slot& s) const {
  if (zero_ == 0) return GradientSync::optimizer_state_host(t, s);
  std::vector<float> whole(static_cast<size_t>(padded_), 0.0f);
  float* own = whole.data() + comm_->rank() * slice();
  t.stream->copy_to_host(own, t.arenas->ptr(s), s.bytes);
  comm_->host().all_gather(own, whole.data(), slice());
  return whole;
}

void DataParallelSync::set_optimizer_state(const SyncTarget& t, const Slot& s,
                                           const std::vector<float>& whole) const {
  if (zero_ == 0) return GradientSync::set_optimizer_state(t, s, whole);
  t.stream->copy_to_device(t.arenas->ptr(s), whole.data() + comm_->rank() * slice(), s.bytes);
}

Status DataParallelSync::check_replicas(int64_t step) const {
  stream_->synchronize();
  // ZeRO-3: the parameters as a forward would gather them from the slices.
  const std::vector<float> values = whole_parameters(*stream_, *arenas_);
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
    return make_error("after step " + std::to_string(step) + " the parameters of rank(s) " +
                      differ + " differ from rank 0's");
  return {};
}

// Every rank reaches the barrier and takes part in gathering the sharded state before
// rank 0 writes (the write itself is atomic: a temporary file renamed), and every rank
// learns whether it worked.
Status DataParallelSync::save(const std::function<Status()>& write,
                              const std::function<void()>& gather) const {
  comm_->barrier();
  Status s;
  if (comm_->rank() == 0)
    s = write();
  else
    gather();
  double failed = s ? 0.0 : 1.0;
  comm_->all_sum(&failed, 1);
  if (!s) return s;
  if (failed != 0.0) return make_error("rank 0 could not write the checkpoint");
  return {};
}

// The training loss over every rank's rows; per step, the mean of the ranks' batch means
// (the global batch's mean: every rank has the same number of rows).
void DataParallelSync::combine_train_stats(LossStats& stats, std::vector<float>& step_losses) const {
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
