#include "nn/training/autoregressive_trainer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "nn/training/vocab_json.h"
#include "kernels/common/batch_window.h"

namespace noeira {

AutoregressiveTrainer::~AutoregressiveTrainer() = default;

Result<std::unique_ptr<AutoregressiveTrainer>> AutoregressiveTrainer::create(
    std::unique_ptr<Module> model, const TrainerConfig& cfg, const AutoregressiveConfig& lm,
    const TokenCorpus& corpus, std::unique_ptr<GradientSync> sync) {
  std::unique_ptr<AutoregressiveTrainer> t(new AutoregressiveTrainer());
  NOEIRA_TRY(t->open(std::move(model), cfg, std::move(sync)));
  NOEIRA_TRY(t->build(lm, corpus));
  return t;
}

Status AutoregressiveTrainer::build(const AutoregressiveConfig& lm, const TokenCorpus& corpus) {
  lm_ = lm;
  first_row_ = static_cast<int64_t>(gradient_sync().rank()) * cfg_.batch;
  cfg_.task = Task::kLanguageModel;
  dataset_name_ = corpus.name;
  vocab_ = corpus.vocab;
  T_ = lm_.context;
  V_ = static_cast<int64_t>(vocab_.size());
  n_train_ = static_cast<int64_t>(corpus.train.size());
  n_val_ = static_cast<int64_t>(corpus.val.size());
  const std::string where = "corpus '" + corpus.name + "'";
  if (T_ <= 0) return make_error("the context (tokens per window) must be positive");
  if (lm_.eval_interval <= 0) return make_error("eval_interval must be positive");
  if (lm_.eval_windows < 0) return make_error("eval_windows must not be negative");
  if (V_ == 0) return make_error(where + " has an empty vocabulary");
  if (n_train_ <= T_)
    return make_error(where + ": the training split has " + std::to_string(n_train_) +
                      " tokens, fewer than one window of " + std::to_string(T_) +
                      " + 1; use a longer text or a shorter context");
  n_windows_ = eval_window_count(n_val_, T_, lm_.eval_windows);
  if (n_windows_ == 0)
    return make_error(where + ": the validation split (" + std::to_string(n_val_) +
                      " tokens) holds no window of " + std::to_string(T_) + " + 1 tokens");
  steps_per_epoch_ = lm_.eval_interval;

  // ---- Plan: the model on (T) ids, the loss over (B, T, V) logits. ----
  loss_ = make_loss(Task::kLanguageModel);
  const int64_t tail = n_windows_ % cfg_.batch;  // evaluation's last partial batch
  PlanContext pc = plan_context(tail);
  pc.in_dtype = DType::kI32;
  Result<Shape> out = plan_model(pc, Shape{T_});
  if (!out) return out.error();
  if (out->rank != 2 || (*out)[0] != T_ || (*out)[1] != V_)
    return make_error("the model maps (" + std::to_string(T_) + ") ids to " + out->str() +
                      ", not (T, vocab) = (" + std::to_string(T_) + ", " + std::to_string(V_) +
                      ") logits");
  PlanContext loss_pc = pc;
  loss_pc.in_dtype = model_->out_dtype();
  loss_->plan(loss_pc, *out);

  batch_x_ = plan_.reserve(MemCategory::kActivations, Shape{cfg_.batch, T_}, DType::kI32);
  batch_y_ = plan_.reserve(MemCategory::kActivations, Shape{cfg_.batch, T_}, DType::kI32);
  train_ids_ = plan_.reserve(MemCategory::kDataset, Shape{n_train_}, DType::kI32);
  val_ids_ = plan_.reserve(MemCategory::kDataset, Shape{n_val_}, DType::kI32);
  logits_row_ = plan_.reserve(MemCategory::kWorkspace, Shape{V_}, DType::kF32);
  NOEIRA_TRY(allocate(steps_per_epoch_));
  if (lm_.host_batch) {
    host_train_ = corpus.train;
    host_x_.resize(static_cast<size_t>(cfg_.batch * T_));
    host_y_.resize(host_x_.size());
  }

  Stream& stream = *backend_.stream;
  stream.copy_to_device(arenas_.ptr(train_ids_), corpus.train.data(), corpus.train.size() * 4);
  stream.copy_to_device(arenas_.ptr(val_ids_), corpus.val.data(), corpus.val.size() * 4);
  return start();
}

int64_t AutoregressiveTrainer::interval_steps(int64_t total) const {
  const int64_t to_eval = lm_.eval_interval - step_ % lm_.eval_interval;
  return std::max<int64_t>(0, std::min(to_eval, total - step_));
}

void AutoregressiveTrainer::begin_epoch() {
  backend_.stream->fill_zero(arenas_.ptr(train_stats_), sizeof(LossStats));
  write_counters();  // batch_in_epoch = 0: the loss history restarts
  resume_batch_ = 0;  // the windows follow the step: a mid-interval resume needs nothing
  history_offset_ = 0;
  in_epoch_ = true;
  epoch_first_step_ = step_;
  epoch_seconds_ = 0.0;
}

// The host-batch baseline: the same windows, built on the host and copied in.
void AutoregressiveTrainer::before_step() {
  if (!lm_.host_batch) return;
  fill_batch_windows(host_train_.data(), n_train_, cfg_.seed, static_cast<uint32_t>(step_),
                     cfg_.batch, T_, host_x_.data(), host_y_.data(), first_row_);
  Stream& stream = *backend_.stream;
  stream.copy_to_device(arenas_.ptr(batch_x_), host_x_.data(), host_x_.size() * 4);
  stream.copy_to_device(arenas_.ptr(batch_y_), host_y_.data(), host_y_.size() * 4);
}

// (B, T) inputs and targets: this rank's windows of the step, drawn on the device (the
// host-batch baseline copied them in before the step).
TrainerCore::Batch AutoregressiveTrainer::build_batch() {
  if (!lm_.host_batch)
    backend_.ops->batch_windows(arenas_.as<int32_t>(train_ids_), n_train_, cfg_.seed,
                                ctx_->counters(), cfg_.batch, T_, first_row_,
                                arenas_.as<int32_t>(batch_x_), arenas_.as<int32_t>(batch_y_));
  return {arenas_.view(batch_x_), arenas_.view(batch_y_)};  // (B, T) int32 each
}

// Window k of the validation split starts at k * T, so a batch of consecutive windows is a
// contiguous stretch of it: inputs and targets are views into the resident split.
EvalStats AutoregressiveTrainer::evaluate() {
  Stream& stream = *backend_.stream;
  Context& ctx = *ctx_;
  stream.fill_zero(arenas_.ptr(eval_stats_), sizeof(LossStats));
  ctx.set_training(false);
  int32_t* val = arenas_.as<int32_t>(val_ids_);
  for (int64_t first = 0; first < n_windows_; first += cfg_.batch) {
    const int64_t rows = std::min(cfg_.batch, n_windows_ - first);
    Tensor x = arenas_.view(batch_x_, rows);
    x.data = val + first * T_;
    Tensor y = arenas_.view(batch_y_, rows);
    y.data = val + first * T_ + 1;
    const Tensor logits = model_->forward(ctx, x);
    loss_->run(ctx, logits, y, arenas_.as<LossStats>(eval_stats_), nullptr, false);
  }
  ctx.set_training(true);
  stream.synchronize();
  return read_stats(eval_stats_);
}

std::vector<float> AutoregressiveTrainer::next_token_logits(const std::vector<int32_t>& window) {
  Ops& ops = *backend_.ops;
  Stream& stream = *backend_.stream;
  Context& ctx = *ctx_;
  const auto n = static_cast<int64_t>(window.size());
  if (n < 1 || n > T_) {
    std::fprintf(stderr, "internal: next_token_logits window of %lld tokens (context %lld)\n",
                 static_cast<long long>(n), static_cast<long long>(T_));
    std::abort();
  }
  // Row 0 of the batch buffer: the window, then zeros the causal mask keeps out of it.
  std::vector<int32_t> row(static_cast<size_t>(T_), 0);
  std::copy(window.begin(), window.end(), row.begin());
  stream.copy_to_device(arenas_.ptr(batch_x_), row.data(), row.size() * 4);
  ctx.set_training(false);
  const Tensor logits = model_->forward(ctx, arenas_.view(batch_x_, 1));  // (1, T, V)
  ctx.set_training(true);
  Tensor last = logits;
  last.shape = Shape{V_};
  last.data = static_cast<char*>(logits.data) + static_cast<size_t>((n - 1) * V_) * dtype_size(logits.dtype);
  ops.cast(last, arenas_.view(logits_row_));
  std::vector<float> out(static_cast<size_t>(V_));
  stream.synchronize();
  stream.copy_to_host(out.data(), arenas_.ptr(logits_row_), out.size() * sizeof(float));
  return out;
}

void AutoregressiveTrainer::read_batch(std::vector<int32_t>& inputs,
                                       std::vector<int32_t>& targets) const {
  backend_.stream->synchronize();
  inputs.resize(static_cast<size_t>(cfg_.batch * T_));
  targets.resize(inputs.size());
  backend_.stream->copy_to_host(inputs.data(), arenas_.ptr(batch_x_), inputs.size() * 4);
  backend_.stream->copy_to_host(targets.data(), arenas_.ptr(batch_y_), targets.size() * 4);
}

// The vocabulary as byte values (a JSON string could not hold every byte), the context.
nlohmann::json AutoregressiveTrainer::extra_meta() const {
  return {{"vocab", vocab_to_json(vocab_)}, {"context", T_}};
}

}  // namespace noeira
