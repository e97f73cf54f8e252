#include "nn/training/trainer.h"

#include <chrono>
#include <cstring>


namespace noeira {

namespace {

Status check_dataset(const TensorDataset& d, const char* role, Task task) {
  const std::string where = std::string(role) + " set '" + d.name + "'";
  if (d.count <= 0) return make_error(where + " is empty");
  if (static_cast<int64_t>(d.x.size()) != d.count * d.sample_shape.numel())
    return make_error(where + ": feature array does not match count x sample shape");
  if (task == Task::kClassification && static_cast<int64_t>(d.labels.size()) != d.count)
    return make_error(where + ": label count does not match sample count");
  if (task == Task::kRegression &&
      static_cast<int64_t>(d.targets.size()) != d.count * d.target_shape.numel())
    return make_error(where + ": target array does not match count x target shape");
  return {};
}

}  // namespace

Trainer::~Trainer() = default;

Result<std::unique_ptr<Trainer>> Trainer::create(std::unique_ptr<Module> model,
                                                 const TrainerConfig& cfg,
                                                 const TensorDataset& train,
                                                 const TensorDataset& test) {
  std::unique_ptr<Trainer> t(new Trainer());
  t->cfg_ = cfg;
  t->model_ = std::move(model);
  Result<Backend> b = make_backend(cfg.device, cfg.threads);
  if (!b) return b.error();
  t->backend_ = std::move(b).value();
  NOEIRA_TRY(t->build(train, test));
  return t;
}

Status Trainer::build(const TensorDataset& train, const TensorDataset& test) {
  NOEIRA_TRY(check_dataset(train, "training", cfg_.task));
  NOEIRA_TRY(check_dataset(test, "test", cfg_.task));
  if (!(train.sample_shape == test.sample_shape))
    return make_error("training and test samples differ in shape: " + train.sample_shape.str() +
                      " vs " + test.sample_shape.str());
  if (cfg_.batch <= 0) return make_error("batch must be positive");
  if (cfg_.batch > train.count)
    return make_error("batch " + std::to_string(cfg_.batch) + " exceeds the training set (" +
                      std::to_string(train.count) + " samples)");
  sample_shape_ = train.sample_shape;
  dataset_name_ = train.name;
  train_count_ = train.count;
  test_count_ = test.count;
  steps_per_epoch_ = epoch_steps(train_count_, cfg_.batch, cfg_.drop_last);
  if (!cfg_.drop_last && train_count_ % cfg_.batch != 0)
    return make_error("drop_last=false needs the training set to be a multiple of the batch "
                      "(fixed-shape steps); set drop_last or change the batch");

  const bool bf16 = cfg_.amp == BF16Policy;
  if (bf16 && !backend_.ops->supports_bf16())
    return make_error("--dtype bf16: the " + backend_.description +
                      " backend has no bf16 ops in this build; use --dtype fp32");

  // ---- Plan: walk the model once and size every buffer. ----
  loss_ = make_loss(cfg_.task);
  const DType flow = flow_dtype(cfg_.amp);
  int64_t scratch_elems = 0;
  size_t workspace_bytes = 0;
  params_.set_low_precision_copies(bf16);
  PlanContext pc{plan_, params_, cfg_.batch, false, "", cfg_.amp, flow, &scratch_elems,
                 backend_.ops.get(), &workspace_bytes, test_count_ % cfg_.batch};
  try {
    out_shape_ = model_->plan(pc, sample_shape_);
  } catch (const PlanError& e) {
    return make_error(e.what());
  }
  PlanContext loss_pc = pc;
  loss_pc.in_dtype = model_->out_dtype();
  loss_->plan(loss_pc, out_shape_);
  target_shape_ = loss_->target_shape(out_shape_);
  const DType tdt = loss_->target_dtype();
  if (cfg_.task == Task::kClassification && train.num_classes > out_shape_[out_shape_.rank - 1])
    return make_error("the model has " + std::to_string(out_shape_[out_shape_.rank - 1]) +
                      " outputs but the data set has " + std::to_string(train.num_classes) +
                      " classes");
  if (cfg_.task == Task::kRegression && !(train.target_shape == target_shape_))
    return make_error("regression targets have shape " + train.target_shape.str() +
                      " but the model outputs " + out_shape_.str());

  optimizer_ = std::make_unique<Optimizer>(cfg_.optimizer);
  optimizer_->plan(plan_, plan_.bytes(MemCategory::kParams));

  // The input batch is gathered straight into the flow dtype: the boundary cast of
  // BF16Policy happens in the gather.
  batch_x_ = plan_.reserve(MemCategory::kActivations, sample_shape_.with_batch(cfg_.batch), flow);
  if (scratch_elems > 0)
    scratch_ = plan_.reserve(MemCategory::kWorkspace, Shape{scratch_elems}, DType::kF32);
  workspace_ = plan_.reserve_bytes(MemCategory::kWorkspace, workspace_bytes);
  batch_y_ = plan_.reserve(MemCategory::kActivations, target_shape_.with_batch(cfg_.batch), tdt);
  train_x_ = plan_.reserve(MemCategory::kDataset, sample_shape_.with_batch(train_count_),
                           DType::kF32);
  train_y_ = plan_.reserve(MemCategory::kDataset, target_shape_.with_batch(train_count_), tdt);
  test_x_ = plan_.reserve(MemCategory::kDataset, sample_shape_.with_batch(test_count_),
                          DType::kF32);
  test_y_ = plan_.reserve(MemCategory::kDataset, target_shape_.with_batch(test_count_), tdt);
  if (cfg_.augment) {
    augmenter_ = std::make_unique<Augmenter>(*cfg_.augment);
    NOEIRA_TRY(augmenter_->plan(plan_, sample_shape_, train_count_));
  }
  perm_ = plan_.reserve(MemCategory::kWorkspace, Shape{train_count_}, DType::kI32);
  Result<size_t> shuffle_bytes = backend_.ops->shuffle_workspace_bytes(train_count_);
  if (!shuffle_bytes)
    return make_error("training set '" + train.name + "': " + shuffle_bytes.error().message);
  shuffle_ws_ = plan_.reserve_bytes(MemCategory::kWorkspace, *shuffle_bytes);
  // The backend's reduction scratch (bias_grad's partial sums on the GPU), bound below.
  const size_t reduction_bytes = backend_.ops->reduction_workspace_bytes();
  const Slot reduction_ws = plan_.reserve_bytes(MemCategory::kWorkspace, reduction_bytes);
  counters_ = plan_.reserve(MemCategory::kScalars, Shape{sizeof(StepCounters) / 4}, DType::kI32);
  train_stats_ = plan_.reserve(MemCategory::kScalars, Shape{sizeof(LossStats) / 4}, DType::kI32);
  eval_stats_ = plan_.reserve(MemCategory::kScalars, Shape{sizeof(LossStats) / 4}, DType::kI32);
  loss_history_ = plan_.reserve(MemCategory::kScalars, Shape{steps_per_epoch_}, DType::kF32);

  if (bf16 && plan_.bytes(MemCategory::kParamCopies) * 2 != plan_.bytes(MemCategory::kParams))
    return make_error("internal: bf16 weight copies do not mirror the parameter arena");

  // ---- Allocate once; nothing allocates after this line. ----
  Result<Arenas> a = Arenas::allocate(plan_, *backend_.allocator);
  if (!a) return a.error();
  arenas_ = std::move(a).value();
  ctx_ = std::make_unique<Context>(*backend_.ops, arenas_, counters_, scratch_, workspace_,
                                   cfg_.seed);
  if (reduction_ws.valid())
    NOEIRA_TRY(
        backend_.ops->bind_reduction_workspace(arenas_.ptr(reduction_ws), reduction_bytes));

  upload(train, train_x_, train_y_);
  upload(test, test_x_, test_y_);
  initialise_params();
  initialise_buffers();
  refresh_param_copies();
  write_counters();

  // Timers before capture: CUPTI records only what runs after it is enabled.
  for (DeviceTimerKind k : cfg_.device_timers) {
    TimerSlot t{k, nullptr, ""};
    t.timer = backend_.ops->make_device_timer(k, &t.why);
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
// step) are read from the device counters, so one graph serves every step.
Status Trainer::capture_step() {
  Ops& ops = *backend_.ops;
  if (!ops.supports_graphs())
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
    if (!saved.back().empty()) ops.copy_to_host(saved.back().data(), arenas_.base(c), saved.back().size());
  }
  enqueue_step();
  ops.synchronize();
  for (size_t i = 0; i < saved.size(); ++i)
    if (!saved[i].empty()) ops.copy_to_device(arenas_.base(kept[i]), saved[i].data(), saved[i].size());
  write_counters();
  ops.synchronize();
  NOEIRA_TRY(ops.begin_capture());
  enqueue_step();
  Result<std::unique_ptr<StepGraph>> g = ops.end_capture();
  if (!g) return make_error("capturing the training step failed: " + g.error().message);
  graph_ = std::move(g).value();
  return {};
}

DeviceStepTimer* Trainer::device_timer(DeviceTimerKind kind, std::string* why) const {
  for (const TimerSlot& t : timers_)
    if (t.kind == kind) {
      if (!t.timer && why) *why = t.why;
      return t.timer.get();
    }
  if (why) *why = "not requested";
  return nullptr;
}

void Trainer::upload(const TensorDataset& d, const Slot& x, const Slot& y) {
  Ops& ops = *backend_.ops;
  ops.copy_to_device(arenas_.ptr(x), d.x.data(), d.x.size() * sizeof(float));
  if (cfg_.task == Task::kClassification)
    ops.copy_to_device(arenas_.ptr(y), d.labels.data(), d.labels.size() * sizeof(int32_t));
  else
    ops.copy_to_device(arenas_.ptr(y), d.targets.data(), d.targets.size() * sizeof(float));
}

void Trainer::initialise_params() {
  const auto& all = params_.all();
  for (size_t i = 0; i < all.size(); ++i) {
    const std::vector<float> w = init_values(all[i], static_cast<uint32_t>(i), cfg_.seed, cfg_.init);
    backend_.ops->copy_to_device(arenas_.ptr(all[i].value), w.data(), w.size() * sizeof(float));
  }
}

// Module buffers (BatchNorm's running statistics) start at their declared values.
void Trainer::initialise_buffers() {
  for (const BufferInfo& b : params_.buffers()) {
    const std::vector<float> v(static_cast<size_t>(b.value.shape.numel()), b.init);
    backend_.ops->copy_to_device(arenas_.ptr(b.value), v.data(), v.size() * sizeof(float));
  }
}

// BF16Policy: the bf16 weight copies follow the fp32 masters (one flat cast; the copy
// arena has the parameter arena's layout at half the size).
void Trainer::refresh_param_copies() {
  if (cfg_.amp != BF16Policy) return;
  const auto n = static_cast<int64_t>(plan_.bytes(MemCategory::kParams) / sizeof(float));
  backend_.ops->cast(ConstView{arenas_.base(MemCategory::kParams), DType::kF32, n},
                     View{arenas_.base(MemCategory::kParamCopies), DType::kBF16, n});
}

void Trainer::write_counters() {
  const StepCounters c{step_, 0};
  backend_.ops->copy_to_device(arenas_.ptr(counters_), &c, sizeof c);
}

void Trainer::begin_epoch() {
  Ops& ops = *backend_.ops;
  if (augmenter_) augmenter_->run(ops, arenas_, train_x_, cfg_.seed, static_cast<uint32_t>(epoch_));
  ops.shuffle(cfg_.seed, static_cast<uint32_t>(epoch_), train_count_, arenas_.as<int32_t>(perm_),
              arenas_.ptr(shuffle_ws_));
  ops.fill_zero(arenas_.ptr(train_stats_), sizeof(LossStats));
  write_counters();  // batch_in_epoch = 0
  epoch_first_step_ = step_;
  epoch_seconds_ = 0.0;
}

void Trainer::train_step() {
  if (graph_)
    graph_->replay();
  else
    enqueue_step();
  ++step_;
}

void Trainer::enqueue_step() {
  Ops& ops = *backend_.ops;
  Context& ctx = *ctx_;
  // (B, sample...) and (B, target...) gathered from the resident data set; the inputs in
  // the flow dtype (BF16Policy's boundary cast), labels as int32, regression targets fp32.
  const int32_t* perm = arenas_.as<int32_t>(perm_);
  const Slot& images = augmenter_ ? augmenter_->output() : train_x_;
  ctx.set_training(true);
  ops.gather_rows(arenas_.view(images), perm, cfg_.batch, sample_shape_.numel(),
                  ctx.counters(), arenas_.view(batch_x_));
  ops.gather_rows(arenas_.view(train_y_), perm, cfg_.batch, target_shape_.numel(),
                  ctx.counters(), arenas_.view(batch_y_));
  ops.fill_zero(arenas_.base(MemCategory::kGrads), plan_.bytes(MemCategory::kGrads));
  const Tensor out = model_->forward(ctx, arenas_.view(batch_x_));
  const Tensor dout = loss_->run(ctx, out, arenas_.view(batch_y_),
                                 arenas_.as<LossStats>(train_stats_),
                                 arenas_.as<float>(loss_history_), true);
  model_->backward(ctx, dout);
  optimizer_->step(ctx);
  refresh_param_copies();
  ops.advance(ctx.counters());
}

EpochStats Trainer::end_epoch(bool evaluate_test) {
  Ops& ops = *backend_.ops;
  ops.synchronize();
  EpochStats s;
  s.epoch = ++epoch_;
  s.steps = step_ - epoch_first_step_;
  LossStats st{};
  ops.copy_to_host(&st, arenas_.ptr(train_stats_), sizeof st);
  s.train_loss = st.count ? st.loss_sum / static_cast<double>(st.count) : 0.0;
  s.train_top1 = st.count ? 100.0 * static_cast<double>(st.correct) / static_cast<double>(st.count)
                          : 0.0;
  s.step_losses.resize(static_cast<size_t>(s.steps));
  ops.copy_to_host(s.step_losses.data(), arenas_.ptr(loss_history_),
                   s.step_losses.size() * sizeof(float));
  s.seconds = epoch_seconds_;
  if (evaluate_test) s.test = evaluate();
  return s;
}

void Trainer::synchronize() { backend_.ops->synchronize(); }

EpochStats Trainer::train_epoch(const std::function<void(int64_t, int64_t)>& on_step) {
  begin_epoch();
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < steps_per_epoch_; ++i) {
    train_step();
    if (on_step) on_step(i + 1, steps_per_epoch_);
  }
  backend_.ops->synchronize();
  epoch_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return end_epoch();
}

std::vector<EpochStats> Trainer::train(int epochs,
                                       const std::function<void(const EpochStats&)>& on_epoch,
                                       const std::function<void(int64_t, int64_t)>& on_step) {
  std::vector<EpochStats> out;
  while (epoch_ < epochs) {
    out.push_back(train_epoch(on_step));
    if (on_epoch) on_epoch(out.back());
  }
  return out;
}

EvalStats Trainer::evaluate() {
  Ops& ops = *backend_.ops;
  Context& ctx = *ctx_;
  LossStats* stats = arenas_.as<LossStats>(eval_stats_);
  ops.fill_zero(stats, sizeof(LossStats));
  ctx.set_training(false);  // BatchNorm's running statistics, no dropout
  const int64_t row = sample_shape_.numel();
  for (int64_t first = 0; first < test_count_; first += cfg_.batch) {
    const int64_t rows = std::min(cfg_.batch, test_count_ - first);
    // Zero-copy: the batch is a view into the resident test set (cast into the
    // bf16 input buffer under BF16Policy, the same boundary cast training does).
    Tensor x = arenas_.view(test_x_, rows);
    x.data = arenas_.as<float>(test_x_) + first * row;
    if (cfg_.amp == BF16Policy) {
      const Tensor xb = arenas_.view(batch_x_, rows);
      ops.cast(x, xb);
      x = xb;
    }
    const Tensor out = model_->forward(ctx, x);
    loss_->run(ctx, out, batch_targets(test_y_, first, rows), stats, nullptr, false);
  }
  ctx.set_training(true);
  ops.synchronize();
  LossStats st{};
  ops.copy_to_host(&st, stats, sizeof st);
  EvalStats e;
  e.count = st.count;
  e.loss = st.count ? st.loss_sum / static_cast<double>(st.count) : 0.0;
  e.top1 = cfg_.task == Task::kClassification && st.count
               ? 100.0 * static_cast<double>(st.correct) / static_cast<double>(st.count)
               : 0.0;
  return e;
}

Tensor Trainer::batch_targets(const Slot& y, int64_t first, int64_t rows) const {
  Tensor t = arenas_.view(y, rows);
  t.data = static_cast<char*>(arenas_.ptr(y)) +
           static_cast<size_t>(first * target_shape_.numel()) * dtype_size(y.dtype);
  return t;
}

std::vector<float> Trainer::param_values(size_t index) const {
  const ParamInfo& p = params_.all().at(index);
  std::vector<float> v(static_cast<size_t>(p.value.shape.numel()));
  backend_.ops->copy_to_host(v.data(), arenas_.ptr(p.value), v.size() * sizeof(float));
  return v;
}

}  // namespace noeira
