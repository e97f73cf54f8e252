#include "nn/training/dataset_trainer.h"

#include <vector>

#include "kernels/common/bf16.h"

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

DatasetTrainer::~DatasetTrainer() = default;

Result<std::unique_ptr<DatasetTrainer>> DatasetTrainer::create(std::unique_ptr<Module> model,
                                                               const TrainerConfig& cfg,
                                                               const TensorDataset& train,
                                                               const TensorDataset& test,
                                                               std::unique_ptr<GradientSync> sync) {
  std::unique_ptr<DatasetTrainer> t(new DatasetTrainer());
  NOEIRA_TRY(t->open(std::move(model), cfg, std::move(sync)));
  NOEIRA_TRY(t->build(train, test));
  return t;
}

Status DatasetTrainer::build(const TensorDataset& train, const TensorDataset& test) {
  NOEIRA_TRY(check_dataset(train, "training", cfg_.task));
  NOEIRA_TRY(check_dataset(test, "test", cfg_.task));
  if (!(train.sample_shape == test.sample_shape))
    return make_error("training and test samples differ in shape: " + train.sample_shape.str() +
                      " vs " + test.sample_shape.str());
  // The global batch: every rank's rows of a step.
  const int64_t global = cfg_.batch * ranks();
  const std::string per_rank = ranks() > 1 ? " x " + std::to_string(ranks()) + " ranks" : "";
  if (global > train.count)
    return make_error("batch " + std::to_string(cfg_.batch) + per_rank + " exceeds the training set (" +
                      std::to_string(train.count) + " samples)");
  sample_shape_ = train.sample_shape;
  dataset_name_ = train.name;
  train_count_ = train.count;
  test_count_ = test.count;
  steps_per_epoch_ = epoch_steps(train_count_, global, cfg_.drop_last);
  if (!cfg_.drop_last && train_count_ % global != 0)
    return make_error("drop_last=false needs the training set to be a multiple of the batch" +
                      per_rank + " (fixed-shape steps); set drop_last or change the batch");

  // ---- Plan: walk the model once and size every buffer. ----
  loss_ = make_loss(cfg_.task, cfg_.label_smoothing);
  const DType flow = flow_dtype(cfg_.amp);
  PlanContext pc = plan_context(test_count_ % cfg_.batch);
  Result<Shape> out = plan_model(pc, sample_shape_);
  if (!out) return out.error();
  out_shape_ = *out;
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

  // The input batch is gathered straight into the flow dtype: the boundary cast of
  // BF16Policy happens in the gather.
  batch_x_ = plan_.reserve(MemCategory::kActivations, sample_shape_.with_batch(cfg_.batch), flow);
  batch_y_ = plan_.reserve(MemCategory::kActivations, target_shape_.with_batch(cfg_.batch), tdt);
  // Under BF16Policy the resident images are kept in bf16, rounded once on the host as
  // the gather's boundary cast would round them (kernels/common/bf16.h): the same bits at
  // half the bytes. The augmenter reads and writes fp32, so augmented training images
  // stay fp32 (their gather casts).
  const DType test_dtype = cfg_.amp == BF16Policy ? DType::kBF16 : DType::kF32;
  const DType train_dtype = cfg_.augment ? DType::kF32 : test_dtype;
  train_x_ = plan_.reserve(MemCategory::kDataset, sample_shape_.with_batch(train_count_),
                           train_dtype);
  train_y_ = plan_.reserve(MemCategory::kDataset, target_shape_.with_batch(train_count_), tdt);
  test_x_ = plan_.reserve(MemCategory::kDataset, sample_shape_.with_batch(test_count_),
                          test_dtype);
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
  if (ranks() > 1) {
    rank_rows_ = plan_.reserve(MemCategory::kWorkspace, Shape{steps_per_epoch_}, DType::kI32);
    rank_order_ = plan_.reserve(MemCategory::kWorkspace, Shape{steps_per_epoch_ * cfg_.batch}, DType::kI32);
    zero_counters_ = plan_.reserve(MemCategory::kScalars, Shape{sizeof(StepCounters) / 4}, DType::kI32);
  }
  NOEIRA_TRY(allocate(steps_per_epoch_));
  if (ranks() > 1) {
    std::vector<int32_t> rows(static_cast<size_t>(steps_per_epoch_));
    for (int64_t b = 0; b < steps_per_epoch_; ++b)
      rows[static_cast<size_t>(b)] = static_cast<int32_t>(b * ranks() + gradient_sync().rank());
    backend_.stream->copy_to_device(arenas_.ptr(rank_rows_), rows.data(), rows.size() * sizeof(int32_t));
  }

  upload(train, train_x_, train_y_);
  upload(test, test_x_, test_y_);
  return start();
}

void DatasetTrainer::upload(const TensorDataset& d, const Slot& x, const Slot& y) {
  Stream& stream = *backend_.stream;
  if (x.dtype == DType::kBF16) {
    std::vector<bf16_t> rounded(d.x.size());
    for (size_t i = 0; i < d.x.size(); ++i) rounded[i] = f32_to_bf16(d.x[i]);
    stream.copy_to_device(arenas_.ptr(x), rounded.data(), rounded.size() * sizeof(bf16_t));
  } else {
    stream.copy_to_device(arenas_.ptr(x), d.x.data(), d.x.size() * sizeof(float));
  }
  if (cfg_.task == Task::kClassification)
    stream.copy_to_device(arenas_.ptr(y), d.labels.data(), d.labels.size() * sizeof(int32_t));
  else
    stream.copy_to_device(arenas_.ptr(y), d.targets.data(), d.targets.size() * sizeof(float));
}

void DatasetTrainer::begin_epoch() {
  Ops& ops = *backend_.ops;
  if (augmenter_) augmenter_->run(ops, arenas_, train_x_, cfg_.seed, static_cast<uint32_t>(epoch_));
  ops.shuffle(cfg_.seed, static_cast<uint32_t>(epoch_), train_count_, arenas_.as<int32_t>(perm_),
              arenas_.ptr(shuffle_ws_));
  // Data parallel: this rank's rows of every global batch, in order, so that the step
  // gathers its batch as on one process. The permutation viewed as rows of B indices: the
  // rank's are rows b*N + r (rank_rows_), gathered once per epoch.
  if (ranks() > 1)
    ops.gather_rows(ConstView(arenas_.as<int32_t>(perm_), steps_per_epoch_ * ranks() * cfg_.batch),
                    arenas_.as<int32_t>(rank_rows_), steps_per_epoch_, cfg_.batch,
                    arenas_.as<StepCounters>(zero_counters_),
                    View(arenas_.as<int32_t>(rank_order_), steps_per_epoch_ * cfg_.batch));
  backend_.stream->fill_zero(arenas_.ptr(train_stats_), sizeof(LossStats));
  // batch_in_epoch: 0, or where a checkpoint saved mid-epoch stopped.
  write_counters(resume_batch_);
  history_offset_ = resume_batch_;
  resume_batch_ = 0;
  in_epoch_ = true;
  epoch_first_step_ = step_;
  epoch_seconds_ = 0.0;
}

// (B, sample...) and (B, target...) gathered from the resident data set: this rank's rows
// of the step's global batch; the inputs in the flow dtype (BF16Policy's boundary cast),
// labels as int32, regression targets fp32.
TrainerCore::Batch DatasetTrainer::build_batch() {
  Ops& ops = *backend_.ops;
  const int32_t* order = arenas_.as<int32_t>(ranks() > 1 ? rank_order_ : perm_);
  const Slot& images = augmenter_ ? augmenter_->output() : train_x_;
  ops.gather_rows(arenas_.view(images), order, cfg_.batch, sample_shape_.numel(), ctx_->counters(),
                  arenas_.view(batch_x_));
  ops.gather_rows(arenas_.view(train_y_), order, cfg_.batch, target_shape_.numel(), ctx_->counters(),
                  arenas_.view(batch_y_));
  return {arenas_.view(batch_x_), arenas_.view(batch_y_)};
}

EvalStats DatasetTrainer::evaluate() {
  Ops& ops = *backend_.ops;
  Stream& stream = *backend_.stream;
  Context& ctx = *ctx_;
  LossStats* stats = arenas_.as<LossStats>(eval_stats_);
  stream.fill_zero(stats, sizeof(LossStats));
  ctx.set_training(false);  // BatchNorm's running statistics, no dropout
  const int64_t row = sample_shape_.numel();
  for (int64_t first = 0; first < test_count_; first += cfg_.batch) {
    const int64_t rows = std::min(cfg_.batch, test_count_ - first);
    // Zero-copy: the batch is a view into the resident test set (already bf16 under
    // BF16Policy: the boundary cast was done once, at upload).
    Tensor x = arenas_.view(test_x_, rows);
    x.data = static_cast<char*>(arenas_.ptr(test_x_)) +
             static_cast<size_t>(first * row) * dtype_size(test_x_.dtype);
    if (x.dtype != flow_dtype(cfg_.amp)) {
      const Tensor xb = arenas_.view(batch_x_, rows);
      ops.cast(x, xb);
      x = xb;
    }
    const Tensor out = model_->forward(ctx, x);
    loss_->run(ctx, out, batch_targets(test_y_, first, rows), stats, nullptr, false);
  }
  ctx.set_training(true);
  stream.synchronize();
  return read_stats(eval_stats_);
}

Tensor DatasetTrainer::batch_targets(const Slot& y, int64_t first, int64_t rows) const {
  Tensor t = arenas_.view(y, rows);
  t.data = static_cast<char*>(arenas_.ptr(y)) +
           static_cast<size_t>(first * target_shape_.numel()) * dtype_size(y.dtype);
  return t;
}

}  // namespace noeira
