#include "models/recipe_schedule.h"

#include <algorithm>

#include "nn/json_input.h"


namespace noeira {

namespace {

Status parse_schedule(const nlohmann::json& v, const std::string& where, ScheduleSpec& s) {
  const std::string at = where + ": optimizer.schedule";
  std::string type = "constant";
  if (v.is_string()) {
    type = v.get<std::string>();
  } else if (v.is_object()) {
    type = v.value("type", "constant");
    if (v.contains("milestone_epochs") && v.contains("milestones"))
      return make_error(at + " gives both milestone_epochs and milestones; keep one");
    if (v.contains("milestone_epochs")) {
      s.milestones = integer_list(v["milestone_epochs"], "milestone_epochs");
    } else if (v.contains("milestones")) {
      s.milestones = integer_list(v["milestones"], "milestones");
      s.milestone_unit_epochs = false;
    }
    s.gamma = v.value("gamma", 0.1);
    s.min_lr = v.value("min_lr", 0.0);
    if (!(s.min_lr >= 0.0)) return make_error(at + ": min_lr must not be negative");
    if (v.contains("warmup_epochs") && v.contains("warmup_steps"))
      return make_error(at + " gives both warmup_epochs and warmup_steps; keep one");
    if (v.contains("warmup_epochs")) {
      s.warmup = integer_field<int64_t>(v, "warmup_epochs");
      s.warmup_unit_epochs = true;
    } else {
      s.warmup = integer_field<int64_t>(v, "warmup_steps", 0);
    }
  } else {
    return make_error(at + " must be \"constant\", \"cosine\" or an object with a \"type\"");
  }
  if (type == "constant") s.kind = ScheduleKind::kConstant;
  else if (type == "cosine") s.kind = ScheduleKind::kCosine;
  else if (type == "multistep") s.kind = ScheduleKind::kMultiStep;
  else return make_error(at + " type '" + type + "' is not constant, cosine or multistep");
  if (s.kind == ScheduleKind::kMultiStep) {
    if (s.milestones.empty())
      return make_error(at + ": multistep needs milestone_epochs (or milestones in steps)");
    if (static_cast<int>(s.milestones.size()) > LrSchedule::kMaxMilestones)
      return make_error(at + ": at most " + std::to_string(LrSchedule::kMaxMilestones) +
                        " milestones");
    if (!std::is_sorted(s.milestones.begin(), s.milestones.end()) || s.milestones.front() <= 0)
      return make_error(at + ": milestones must be positive and increasing");
    if (!(s.gamma > 0.0)) return make_error(at + ": gamma must be positive");
  } else if (!s.milestones.empty()) {
    return make_error(at + ": milestones only apply to type multistep");
  }
  if (s.warmup < 0) return make_error(at + ": the warm-up must not be negative");
  return {};
}

}  // namespace

Status parse_optimizer(const nlohmann::json& o, const std::string& where, OptimizerConfig& out,
                       ScheduleSpec& schedule) {
  const std::string type = o.at("type").get<std::string>();
  if (type == "adam") out.kind = OptimizerKind::kAdam;
  else if (type == "adamw") out.kind = OptimizerKind::kAdamW;
  else if (type == "sgd") out.kind = OptimizerKind::kSgd;
  else return make_error(where + ": optimizer '" + type + "' is not adam, adamw or sgd");
  if (out.kind == OptimizerKind::kSgd) {
    out.sgd.lr = o.at("lr").get<double>();
    out.sgd.momentum = o.value("momentum", 0.9);
    out.sgd.weight_decay = o.value("weight_decay", 0.0);
    out.sgd.nesterov = o.value("nesterov", false);
    if (out.sgd.nesterov && !(out.sgd.momentum > 0.0))
      return make_error(where + ": optimizer.nesterov needs a positive momentum (as torch)");
  } else {
    out.adam.lr = o.at("lr").get<double>();
    const auto betas = o.value("betas", std::vector<double>{0.9, 0.999});
    if (betas.size() != 2) return make_error(where + ": optimizer.betas needs two numbers");
    out.adam.beta1 = betas[0];
    out.adam.beta2 = betas[1];
    out.adam.eps = o.value("eps", 1e-8);
    out.adam.weight_decay = o.value("weight_decay", 0.0);
    out.adam.decoupled = out.kind == OptimizerKind::kAdamW;
    out.decay_min_rank = integer_field<int>(o, "decay_min_rank", 0);
    if (out.decay_min_rank < 0)
      return make_error(where + ": optimizer.decay_min_rank must not be negative");
  }
  out.grad_clip = o.value("grad_clip", 0.0);
  if (!(out.grad_clip >= 0.0))
    return make_error(where + ": optimizer.grad_clip must not be negative (0 = no clipping)");
  return parse_schedule(o.value("schedule", nlohmann::json("constant")), where, schedule);
}

LrSchedule resolve_schedule(const ScheduleSpec& s, int64_t steps_per_epoch, int64_t total_steps) {
  LrSchedule r;
  r.kind = s.kind;
  r.warmup_steps = s.warmup_unit_epochs ? s.warmup * steps_per_epoch : s.warmup;
  if (s.kind == ScheduleKind::kCosine) r.cosine_steps = std::max<int64_t>(total_steps - r.warmup_steps, 1);
  r.gamma = s.gamma;
  r.min_lr = s.min_lr;
  r.n_milestones = static_cast<int>(s.milestones.size());
  for (size_t i = 0; i < s.milestones.size(); ++i)
    r.milestones[i] = s.milestone_unit_epochs ? s.milestones[i] * steps_per_epoch : s.milestones[i];
  return r;
}

void set_schedule(OptimizerConfig& o, const LrSchedule& s) {
  o.adam.schedule = s;
  o.sgd.schedule = s;
}

}  // namespace noeira
