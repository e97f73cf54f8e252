// The trainers' checkpoints (docs/checkpoint-format.md): parameters, BatchNorm's running
// statistics and the optimizer state per parameter, with a header that a resume checks.
#include <cstring>

#include "nn/checkpoint.h"
#include "nn/training/trainer_core.h"

namespace noeira {

namespace {

nlohmann::json schedule_json(const LrSchedule& s) {
  switch (s.kind) {
    case ScheduleKind::kCosine: {
      nlohmann::json j = {{"type", "cosine"}, {"steps", s.cosine_steps}, {"warmup_steps", s.warmup_steps}};
      if (s.min_lr != 0.0) j["min_lr"] = s.min_lr;  // only when set: older checkpoints resume
      return j;
    }
    case ScheduleKind::kMultiStep: {
      nlohmann::json m = nlohmann::json::array();
      for (int i = 0; i < s.n_milestones; ++i) m.push_back(s.milestones[i]);
      return {{"type", "multistep"}, {"milestones", m}, {"gamma", s.gamma},
              {"warmup_steps", s.warmup_steps}};
    }
    default: return {{"type", "constant"}, {"warmup_steps", s.warmup_steps}};
  }
}

}  // namespace

nlohmann::json TrainerCore::checkpoint_meta() const {
  const OptimizerConfig& o = cfg_.optimizer;
  nlohmann::json opt = {{"type", optimizer_name(o.kind)}};
  if (o.kind == OptimizerKind::kSgd)
    opt.update({{"lr", o.sgd.lr},
                {"momentum", o.sgd.momentum},
                {"weight_decay", o.sgd.weight_decay},
                {"nesterov", o.sgd.nesterov},
                {"schedule", schedule_json(o.sgd.schedule)}});
  else
    opt.update({{"lr", o.adam.lr},
                {"betas", {o.adam.beta1, o.adam.beta2}},
                {"eps", o.adam.eps},
                {"weight_decay", o.adam.weight_decay},
                {"schedule", schedule_json(o.adam.schedule)}});
  // Only when set, so that checkpoints written before these existed still resume.
  if (o.kind != OptimizerKind::kSgd && o.decay_min_rank > 0)
    opt["decay_min_rank"] = o.decay_min_rank;
  if (o.grad_clip > 0.0) opt["grad_clip"] = o.grad_clip;
  nlohmann::json meta = {{"format", "noeira-checkpoint"},
          {"model", cfg_.model_name},
          {"dataset", dataset_name_},
          {"recipe_hash", json_hash(cfg_.recipe)},
          {"seed", cfg_.seed},
          {"epoch", epoch_},
          {"step", step_},
          {"batch", cfg_.batch},
          {"optimizer", opt},
          {"amp", amp_name(cfg_.amp)}};
  // Data parallelism: each rank trains `batch` rows, so the run's global batch is ranks x
  // batch (only written when more than one, as checkpoints before it existed).
  if (ranks() > 1) meta["ranks"] = ranks();
  // Saved mid-epoch: the batches of the epoch taken (only then, as checkpoints before it).
  const int64_t batch = in_epoch_ ? history_offset_ + (step_ - epoch_first_step_) : resume_batch_;
  if (batch > 0) meta["batch_in_epoch"] = batch;
  meta.update(extra_meta());
  return meta;
}

// Every rank calls it: the sync gathers sharded state from every rank and lets one write.
Status TrainerCore::save_checkpoint(const std::filesystem::path& path) const {
  backend_.stream->synchronize();
  const SyncTarget target = sync_target();
  // A rank that does not write still takes part in each gathering, in the same order.
  auto gather = [&] {
    (void)sync_->parameter_arena_host(target);
    for (const auto& [name, slot] : optimizer_->state()) (void)sync_->optimizer_state_host(target, slot);
  };
  return sync_->save([&] { return write_checkpoint_file(path, target); }, gather);
}

Status TrainerCore::write_checkpoint_file(const std::filesystem::path& path,
                                          const SyncTarget& target) const {
  Checkpoint ck;
  ck.meta = checkpoint_meta();
  // A tensor of `shape` floats, its bytes to be filled by the caller.
  auto add = [&](const std::string& name, const std::string& group,
                 const Shape& shape) -> CheckpointTensor& {
    CheckpointTensor& t = ck.tensors.emplace_back();
    t.name = name;
    t.group = group;
    t.shape = shape;
    t.bytes.resize(static_cast<size_t>(shape.numel()) * sizeof(float));
    return t;
  };
  auto add_slot = [&](const std::string& name, const std::string& group, const Slot& s) {
    CheckpointTensor& t = add(name, group, s.shape);
    backend_.stream->copy_to_host(t.bytes.data(), arenas_.ptr(s), t.bytes.size());
  };
  const std::vector<float> values = sync_->parameter_arena_host(target);
  for (const ParamInfo& p : params_.all()) {
    CheckpointTensor& t = add(p.name, "param", p.value.shape);
    std::memcpy(t.bytes.data(), values.data() + p.value.offset / sizeof(float), t.bytes.size());
  }
  for (const BufferInfo& b : params_.buffers()) add_slot(b.name, "buffer", b.value);
  // Optimizer state is laid out like the parameter arena: store it per parameter.
  for (const auto& [state_name, slot] : optimizer_->state()) {
    const std::vector<float> whole = sync_->optimizer_state_host(target, slot);
    for (const ParamInfo& p : params_.all()) {
      CheckpointTensor& t = add(state_name + "." + p.name, "optim", p.value.shape);
      std::memcpy(t.bytes.data(), whole.data() + p.value.offset / sizeof(float), t.bytes.size());
    }
  }
  return write_checkpoint(path, ck);
}

Status TrainerCore::load_checkpoint(const std::filesystem::path& path, LoadMode mode) {
  const bool resume = mode == LoadMode::kResume;
  Result<Checkpoint> r = read_checkpoint(path);
  if (!r) return r.error();
  const Checkpoint& ck = *r;
  const std::string where = "checkpoint " + path.string();
  const nlohmann::json mine = checkpoint_meta();
  std::vector<std::string> keys = {"model", "dataset", "recipe_hash"};
  if (resume) keys.insert(keys.end(), {"optimizer", "amp"});
  const nlohmann::json extra = extra_meta();  // items() must not outlive it
  for (const auto& [key, value] : extra.items()) keys.push_back(key);
  for (const std::string& key : keys) {
    if (!ck.meta.contains(key) || ck.meta.at(key) != mine.at(key))
      return make_error(where + ": " + key + " is " +
                        (ck.meta.contains(key) ? ck.meta.at(key).dump() : "missing") +
                        " but this run has " + mine.at(key).dump() +
                        (resume ? "; resume with the model, data set, recipe and optimizer it was "
                                  "saved with"
                                : "; use the model, data set and recipe it was saved with"));
  }
  if (resume && ck.meta.value("ranks", 1) != ranks())
    return make_error(where + ": it was made by " + std::to_string(ck.meta.value("ranks", 1)) +
                      " rank(s) (a global batch of that many x " + std::to_string(cfg_.batch) +
                      " rows) and this run has " + std::to_string(ranks()) +
                      "; resume it with mpirun -np " + std::to_string(ck.meta.value("ranks", 1)) +
                      " (or load it for sampling, which any run can)");
  // Check every tensor and the header first, copy afterwards: a refused checkpoint leaves
  // the trainer as it was.
  struct Copy {
    const CheckpointTensor* t;
    void* dst;
  };
  std::vector<Copy> copies;
  auto find = [&](const std::string& name, const Shape& shape) -> Result<const CheckpointTensor*> {
    const CheckpointTensor* t = ck.find(name);
    if (!t) return make_error(where + ": tensor '" + name + "' is missing");
    if (!(t->shape == shape) || t->dtype != DType::kF32)
      return make_error(where + ": tensor '" + name + "' has shape " + t->shape.str() + " " +
                        dtype_name(t->dtype) + ", the model expects " + shape.str() + " f32");
    return t;
  };
  auto plan_copy = [&](const std::string& name, const Slot& s, size_t byte_offset,
                       const Shape& shape) -> Status {
    Result<const CheckpointTensor*> t = find(name, shape);
    if (!t) return t.error();
    copies.push_back({*t, static_cast<char*>(arenas_.ptr(s)) + byte_offset});
    return {};
  };
  // Parameters: assembled as the whole arena on the host (a ZeRO-3 rank keeps a slice of it).
  std::vector<float> values(static_cast<size_t>(padded_params_), 0.0f);
  for (const ParamInfo& p : params_.all()) {
    Result<const CheckpointTensor*> t = find(p.name, p.value.shape);
    if (!t) return t.error();
    std::memcpy(values.data() + p.value.offset / sizeof(float), (*t)->bytes.data(), (*t)->bytes.size());
  }
  for (const BufferInfo& b : params_.buffers())
    NOEIRA_TRY(plan_copy(b.name, b.value, 0, b.value.shape));
  size_t optim_tensors = 0;
  for (const CheckpointTensor& t : ck.tensors) optim_tensors += t.group == "optim" ? 1 : 0;
  // Optimizer state: each buffer assembled as the whole arena, then handed over.
  std::vector<std::pair<Slot, std::vector<float>>> states;
  size_t state_tensors = 0;
  if (resume)
    for (const auto& [state_name, slot] : optimizer_->state()) {
      std::vector<float> whole(static_cast<size_t>(padded_params_), 0.0f);
      for (const ParamInfo& p : params_.all()) {
        Result<const CheckpointTensor*> t = find(state_name + "." + p.name, p.value.shape);
        if (!t) return t.error();
        std::memcpy(whole.data() + p.value.offset / sizeof(float), (*t)->bytes.data(),
                    (*t)->bytes.size());
        ++state_tensors;
      }
      states.emplace_back(slot, std::move(whole));
    }
  if (ck.tensors.size() != params_.all().size() + copies.size() + (resume ? state_tensors : optim_tensors))
    return make_error(where + ": holds tensors this model does not have");
  uint64_t seed = 0;
  int epoch = 0;
  int64_t step = 0;
  try {
    seed = ck.meta.at("seed").get<uint64_t>();
    epoch = ck.meta.at("epoch").get<int>();
    step = ck.meta.at("step").get<int64_t>();
  } catch (const nlohmann::json::exception&) {
    return make_error(where + ": header lacks seed/epoch/step");
  }
  int64_t batch = 0;
  if (const auto b = ck.meta.find("batch_in_epoch"); b != ck.meta.end()) {
    if (!b->is_number_integer() || b->get<int64_t>() < 0 || b->get<int64_t>() >= steps_per_epoch_)
      return make_error(where + ": batch_in_epoch " + b->dump() + " is not a batch of an epoch of " +
                        std::to_string(steps_per_epoch_) + " steps");
    batch = b->get<int64_t>();
  }

  sync_->set_parameter_arena(sync_target(), values);
  for (const Copy& c : copies) backend_.stream->copy_to_device(c.dst, c.t->bytes.data(), c.t->bytes.size());
  for (const auto& [slot, whole] : states) sync_->set_optimizer_state(sync_target(), slot, whole);
  refresh_param_copies();
  if (!resume) return {};
  cfg_.seed = seed;  // the run continues its own RNG streams
  ctx_->set_seed(seed);
  epoch_ = epoch;
  step_ = step;
  resume_batch_ = batch;
  in_epoch_ = false;
  history_offset_ = 0;
  write_counters(batch);
  return {};
}

}  // namespace noeira
