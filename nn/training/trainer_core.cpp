#include "nn/training/trainer_core.h"

#include <algorithm>
#include <chrono>

#include "kernels/profiling/profiling_ops.h"

namespace noeira {

TrainerCore::~TrainerCore() = default;

Status TrainerCore::open(std::unique_ptr<Module> model, const TrainerConfig& cfg,
                         std::unique_ptr<GradientSync> sync) {
  cfg_ = cfg;
  model_ = std::move(model);
  sync_ = sync ? std::move(sync) : std::make_unique<LocalSync>();
  NOEIRA_TRY(sync_->check(cfg_));
  Result<Backend> b = make_backend(cfg.device, cfg.threads);
  if (!b) return b.error();
  backend_ = std::move(b).value();
  if (cfg_.op_profiler) {
    NOEIRA_TRY(cfg_.op_profiler->attach(*backend_.stream));
    backend_.ops = std::make_unique<ProfilingOps>(std::move(backend_.ops), *cfg_.op_profiler);
  }
  if (cfg_.batch <= 0) return make_error("batch must be positive");
  if (cfg_.amp == BF16Policy && !backend_.ops->supports_bf16())
    return make_error("--dtype bf16: the " + backend_.description +
                      " backend cannot run bf16 ops here (on the CPU, oneDNN needs AVX-512 for "
                      "bf16 matmuls); use --dtype fp32");
  params_.set_low_precision_copies(cfg_.amp == BF16Policy);
  return sync_->attach(*backend_.stream);
}

// The sync's const methods only read what they are given; planning and binding (non-const
// callers) may write.
SyncTarget TrainerCore::sync_target() const {
  auto* self = const_cast<TrainerCore*>(this);
  SyncTarget t{*model_, params_, cfg_, self->plan_, padded_params_};
  t.cross_rank_doubles = cross_rank_doubles_;
  if (ctx_) {
    t.arenas = &self->arenas_;
    t.ops = backend_.ops.get();
    t.stream = backend_.stream.get();
    t.context = ctx_.get();
  }
  return t;
}

PlanContext TrainerCore::plan_context(int64_t tail_rows) {
  forward_flops_ = 0.0;
  return PlanContext{plan_,      params_,          cfg_.batch,          false,
                     "",         cfg_.amp,         flow_dtype(cfg_.amp), &scratch_elems_,
                     backend_.ops.get(), &workspace_bytes_, tail_rows, &forward_flops_,
                     &cross_rank_doubles_};
}

Result<Shape> TrainerCore::plan_model(PlanContext& pc, const Shape& in) {
  try {
    return model_->plan(pc, in);
  } catch (const PlanError& e) {
    return make_error(e.what());
  }
}

Status TrainerCore::allocate(int64_t history) {
  Ops& ops = *backend_.ops;
  Stream& stream = *backend_.stream;
  // Padding floats at the end of the parameter arenas (zero, never read by a module).
  const int64_t n = static_cast<int64_t>(plan_.bytes(MemCategory::kParams) / sizeof(float));
  const int64_t multiple = sync_->pad_multiple();
  const int64_t pad = (multiple - n % multiple) % multiple;
  padded_params_ = n + pad;
  if (pad > 0) {
    plan_.reserve(MemCategory::kParams, Shape{pad}, DType::kF32, sizeof(float));
    plan_.reserve(MemCategory::kGrads, Shape{pad}, DType::kF32, sizeof(float));
    if (cfg_.amp == BF16Policy)
      plan_.reserve(MemCategory::kParamCopies, Shape{pad}, DType::kBF16, 2);
  }
  OptimizerShard shard;
  if (const int64_t own = sync_->optimizer_slice(); own >= 0) {
    const int64_t slice = (n + pad) / multiple;
    shard = OptimizerShard{own * slice, slice};
  }
  optimizer_ = std::make_unique<Optimizer>(cfg_.optimizer, shard, sync_->optimizer_clips());
  optimizer_->plan(plan_, params_, ops);
  if (scratch_elems_ > 0)
    scratch_ = plan_.reserve(MemCategory::kWorkspace, Shape{scratch_elems_}, DType::kF32);
  workspace_ = plan_.reserve_bytes(MemCategory::kWorkspace, workspace_bytes_);
  // Synchronised modules' buffer, only when the sync sums over ranks (one process: none).
  if (sync_->cross_rank_sum() && cross_rank_doubles_ > 0)
    cross_rank_ = plan_.reserve_bytes(MemCategory::kWorkspace,
                                      static_cast<size_t>(cross_rank_doubles_) * sizeof(double));
  // The backend's reduction scratch (bias_grad's partial sums on the GPU), bound below.
  reduction_bytes_ = stream.reduction_workspace_bytes();
  reduction_ws_ = plan_.reserve_bytes(MemCategory::kWorkspace, reduction_bytes_);
  counters_ = plan_.reserve(MemCategory::kScalars, Shape{sizeof(StepCounters) / 4}, DType::kI32);
  train_stats_ = plan_.reserve(MemCategory::kScalars, Shape{sizeof(LossStats) / 4}, DType::kI32);
  eval_stats_ = plan_.reserve(MemCategory::kScalars, Shape{sizeof(LossStats) / 4}, DType::kI32);
  loss_history_ = plan_.reserve(MemCategory::kScalars, Shape{history}, DType::kF32);
  if (cfg_.amp == BF16Policy &&
      plan_.bytes(MemCategory::kParamCopies) * 2 != plan_.bytes(MemCategory::kParams))
    return make_error("internal: bf16 weight copies do not mirror the parameter arena");
  {
    SyncTarget t = sync_target();
    NOEIRA_TRY(sync_->plan(t));
  }
  grad_zeroing_ = gradient_zero_ranges(params_, plan_.bytes(MemCategory::kGrads),
                                       sync_->gradients_in_place());

  // ---- Allocate once; nothing allocates after this line. ----
  Result<Arenas> a = Arenas::allocate(plan_, *backend_.allocator);
  if (!a) return a.error();
  arenas_ = std::move(a).value();
  ctx_ = std::make_unique<Context>(ops, stream, arenas_, counters_, scratch_, workspace_,
                                   cfg_.seed);
  if (reduction_ws_.valid())
    NOEIRA_TRY(stream.bind_reduction_workspace(arenas_.ptr(reduction_ws_), reduction_bytes_));
  SyncTarget t = sync_target();
  sync_->bind(t);
  if (cross_rank_.valid()) ctx_->set_cross_rank_sum(sync_->cross_rank_sum(), cross_rank_);
  return {};
}

Status TrainerCore::start() {
  initialise_params();
  initialise_buffers();
  optimizer_->upload_tables(*backend_.stream, arenas_, params_);
  refresh_param_copies();
  write_counters();
  // Timers before capture: CUPTI records only what runs after it is enabled.
  for (DeviceTimerKind k : cfg_.device_timers) {
    TimerSlot t{k, nullptr, ""};
    t.timer = backend_.stream->make_device_timer(k, &t.why);
    timers_.push_back(std::move(t));
  }
  if (cfg_.use_train_cuda_graph) {
    Status captured = capture_step();
    if (!captured) {
      if (!cfg_.graph_fallback) return captured;
      graph_fallback_reason_ = captured.error().message;
    }
  }
  return {};
}

// Records one whole training step into a graph. Per-step values (batch offset, Adam
// step, the batch windows) are read from the device counters, so one graph serves every step.
Status TrainerCore::capture_step() {
  Stream& stream = *backend_.stream;
  if (!stream.supports_graphs())
    return make_error("CUDA-graph capture needs the gpu target (this trainer runs on " +
                      backend_.description + "); drop --graph or use --target gpu");
  // One eager step first, undone afterwards: it loads every kernel and fills the GEMM
  // algorithm cache, so nothing lazy happens during capture, and the run's results stay
  // those of an eager run.
  std::vector<std::vector<char>> saved;
  const MemCategory kept[] = {MemCategory::kParams, MemCategory::kParamCopies,
                              MemCategory::kOptimState, MemCategory::kBuffers};
  for (MemCategory c : kept) {
    saved.emplace_back(plan_.bytes(c));
    if (!saved.back().empty())
      stream.copy_to_host(saved.back().data(), arenas_.memory(c), saved.back().size());
  }
  before_step();
  enqueue_step();
  stream.synchronize();
  for (size_t i = 0; i < saved.size(); ++i)
    if (!saved[i].empty())
      stream.copy_to_device(arenas_.memory(kept[i]), saved[i].data(), saved[i].size());
  write_counters();
  stream.synchronize();
  NOEIRA_TRY(stream.begin_capture());
  enqueue_step();
  Result<std::unique_ptr<StepGraph>> g = stream.end_capture();
  if (!g) return make_error("capturing the training step failed: " + g.error().message);
  graph_ = std::move(g).value();
  return {};
}

DeviceStepTimer* TrainerCore::device_timer(DeviceTimerKind kind, std::string* why) const {
  for (const TimerSlot& t : timers_)
    if (t.kind == kind) {
      if (!t.timer && why) *why = t.why;
      return t.timer.get();
    }
  if (why) *why = "not requested";
  return nullptr;
}

void TrainerCore::initialise_params() {
  const auto& all = params_.all();
  std::vector<float> whole(static_cast<size_t>(padded_params_), 0.0f);
  for (size_t i = 0; i < all.size(); ++i) {
    const std::vector<float> w = init_values(all[i], static_cast<uint32_t>(i), cfg_.seed, cfg_.init);
    std::copy(w.begin(), w.end(), whole.begin() + static_cast<int64_t>(all[i].value.offset / sizeof(float)));
  }
  sync_->set_parameter_arena(sync_target(), whole);
}


// Module buffers (BatchNorm's running statistics) start at their declared values.
void TrainerCore::initialise_buffers() {
  for (const BufferInfo& b : params_.buffers()) {
    const std::vector<float> v(static_cast<size_t>(b.value.shape.numel()), b.init);
    backend_.stream->copy_to_device(arenas_.ptr(b.value), v.data(), v.size() * sizeof(float));
  }
}

// BF16Policy: the bf16 weight copies follow the fp32 masters (one flat cast; the copy
// arena has the parameter arena's layout at half the size).
void TrainerCore::refresh_param_copies() {
  if (cfg_.amp != BF16Policy) return;
  backend_.ops->cast(ConstView{arenas_.memory(MemCategory::kParams), DType::kF32, padded_params_},
                     View{arenas_.memory(MemCategory::kParamCopies), DType::kBF16, padded_params_});
}

void TrainerCore::write_counters(int64_t batch_in_epoch) {
  const StepCounters c{step_, batch_in_epoch};
  backend_.stream->copy_to_device(arenas_.ptr(counters_), &c, sizeof c);
}

void TrainerCore::enqueue_step() {
  Ops& ops = *backend_.ops;
  Context& ctx = *ctx_;
  ctx.set_training(true);
  {
    // Every gradient but those their op overwrites (gradient_zeroing.h).
    size_t grad_bytes = 0;
    for (const ByteRange& r : grad_zeroing_) grad_bytes += r.bytes;
    ProfiledCall zero(cfg_.op_profiler, "fill_zero", OpCost{0, static_cast<double>(grad_bytes)});
    auto* grads = static_cast<std::byte*>(arenas_.memory(MemCategory::kGrads));
    for (const ByteRange& r : grad_zeroing_) backend_.stream->fill_zero(grads + r.offset, r.bytes);
  }
  const Batch batch = build_batch();
  sync_->begin_step();
  const Tensor out = model_->forward(ctx, batch.inputs);
  const Tensor dout = loss_->run(ctx, out, batch.targets, arenas_.as<LossStats>(train_stats_),
                                 arenas_.as<float>(loss_history_), true);
  model_->backward(ctx, dout);
  sync_->after_backward();
  optimizer_->step(ctx);
  sync_->after_step();
  refresh_param_copies();
  ops.advance(ctx.counters());
}

void TrainerCore::train_step() {
  before_step();
  if (graph_)
    graph_->replay();
  else
    enqueue_step();
  ++step_;
}

EvalStats TrainerCore::read_stats(const Slot& slot) const {
  LossStats st{};
  backend_.stream->copy_to_host(&st, arenas_.ptr(slot), sizeof st);
  return stats_of(st, cfg_.task);
}

EvalStats TrainerCore::stats_of(const LossStats& st, Task task) {
  EvalStats e;
  e.count = st.count;
  e.loss = st.count ? st.loss_sum / static_cast<double>(st.count) : 0.0;
  e.top1 = task == Task::kClassification && st.count
               ? 100.0 * static_cast<double>(st.correct) / static_cast<double>(st.count)
               : 0.0;
  return e;
}

EpochStats TrainerCore::end_epoch(bool evaluate_test) {
  Stream& stream = *backend_.stream;
  stream.synchronize();
  EpochStats s;
  epoch_ = epochs_after_end();
  s.epoch = epoch_;
  s.steps = step_ - epoch_first_step_;
  LossStats st{};
  stream.copy_to_host(&st, arenas_.ptr(train_stats_), sizeof st);
  s.step_losses.resize(static_cast<size_t>(s.steps));
  stream.copy_to_host(s.step_losses.data(), arenas_.as<float>(loss_history_) + history_offset_,
                      s.step_losses.size() * sizeof(float));
  in_epoch_ = false;
  history_offset_ = 0;
  sync_->combine_train_stats(st, s.step_losses);
  const EvalStats train = stats_of(st, cfg_.task);
  s.train_loss = train.loss;
  s.train_top1 = train.top1;
  s.seconds = epoch_seconds_;
  if (evaluate_test) s.test = evaluate();
  return s;
}

void TrainerCore::synchronize() { backend_.stream->synchronize(); }

std::optional<EpochStats> TrainerCore::run_epoch(
    const std::function<void(int64_t, int64_t)>& on_step, const std::function<bool()>& stop) {
  begin_epoch();
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = history_offset_; i < steps_per_epoch_; ++i) {
    train_step();
    if (on_step) on_step(i + 1, steps_per_epoch_);
    if (stop && i + 1 < steps_per_epoch_ && stop()) return std::nullopt;
  }
  backend_.stream->synchronize();
  epoch_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return end_epoch();
}

EpochStats TrainerCore::train_epoch(const std::function<void(int64_t, int64_t)>& on_step) {
  return *run_epoch(on_step, {});
}

std::vector<EpochStats> TrainerCore::train(int epochs,
                                           const std::function<void(const EpochStats&)>& on_epoch,
                                           const std::function<void(int64_t, int64_t)>& on_step,
                                           const std::function<bool()>& stop) {
  std::vector<EpochStats> out;
  while (epoch_ < epochs) {
    std::optional<EpochStats> e = run_epoch(on_step, stop);
    if (!e) break;
    out.push_back(std::move(*e));
    if (on_epoch) on_epoch(out.back());
    if (stop && epoch_ < epochs && stop()) break;
  }
  return out;
}

std::vector<float> TrainerCore::param_values(size_t index) const {
  const ParamInfo& p = params_.all().at(index);
  const std::vector<float> whole = sync_->parameter_arena_host(sync_target());
  const auto first = whole.begin() + static_cast<int64_t>(p.value.offset / sizeof(float));
  return std::vector<float>(first, first + p.value.shape.numel());
}

}  // namespace noeira
