#include "nn/optimizer.h"

#include <algorithm>

namespace noeira {

const char* optimizer_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdamW: return "adamw";
    case OptimizerKind::kSgd: return "sgd";
  }
  return "?";
}

Optimizer::Optimizer(OptimizerConfig cfg, OptimizerShard shard, bool clip)
    : cfg_(cfg), shard_(shard), clip_(clip) {
  cfg_.adam.decoupled = cfg_.kind == OptimizerKind::kAdamW;
}

void Optimizer::plan(MemoryPlan& plan, const ParamRegistry& params, Ops& ops) {
  n_ = static_cast<int64_t>(plan.bytes(MemCategory::kParams) / sizeof(float));
  n_params_ = static_cast<int64_t>(params.all().size());
  if (shard_.count < 0) shard_ = OptimizerShard{0, n_};
  shard_.first = std::clamp<int64_t>(shard_.first, 0, n_);
  shard_.count = std::clamp<int64_t>(shard_.count, 0, n_ - shard_.first);
  s0_ = plan.reserve(MemCategory::kOptimState, Shape{shard_.count}, DType::kF32);
  if (cfg_.kind != OptimizerKind::kSgd)
    s1_ = plan.reserve(MemCategory::kOptimState, Shape{shard_.count}, DType::kF32);
  // Constant tables, not state: kScalars is uploaded once and never checkpointed.
  if (cfg_.kind != OptimizerKind::kSgd && cfg_.decay_min_rank > 0 && cfg_.adam.weight_decay != 0.0)
    decay_mask_ = plan.reserve(MemCategory::kScalars, Shape{n_}, DType::kF32);
  if (clip_ && cfg_.grad_clip > 0.0) {
    segments_ = plan.reserve(MemCategory::kScalars, Shape{2 * (n_params_ + 1)}, DType::kI32);
    norm_ = plan.reserve(MemCategory::kScalars, Shape{1}, DType::kF32);
    clip_ws_ = plan.reserve_bytes(MemCategory::kWorkspace, ops.clip_workspace_bytes(n_params_));
  }
}

void Optimizer::upload_tables(Stream& stream, const Arenas& arenas,
                              const ParamRegistry& params) const {
  if (decay_mask_.valid()) {
    // Padding between parameters is 0 (its gradient is always 0 anyway).
    std::vector<float> mask(static_cast<size_t>(n_), 0.0f);
    for (const ParamInfo& p : params.all()) {
      if (p.value.shape.rank < cfg_.decay_min_rank) continue;
      const auto first = static_cast<size_t>(p.value.offset / sizeof(float));
      std::fill_n(mask.begin() + static_cast<std::ptrdiff_t>(first), p.value.shape.numel(), 1.0f);
    }
    stream.copy_to_device(arenas.ptr(decay_mask_), mask.data(), mask.size() * sizeof(float));
  }
  if (segments_.valid()) {
    // Parameter i is [seg[i], seg[i+1]): its values and the padding after it (zeros).
    std::vector<int64_t> seg;
    for (const ParamInfo& p : params.all())
      seg.push_back(static_cast<int64_t>(p.value.offset / sizeof(float)));
    seg.push_back(n_);
    stream.copy_to_device(arenas.ptr(segments_), seg.data(), seg.size() * sizeof(int64_t));
  }
}

void Optimizer::step(Context& ctx) {
  float* p = static_cast<float*>(ctx.arenas().base(MemCategory::kParams)) + shard_.first;
  float* g = static_cast<float*>(ctx.arenas().base(MemCategory::kGrads)) + shard_.first;
  if (segments_.valid())  // only unsharded: the segments cover the whole arena
    ctx.ops().clip_grad_norm(g, static_cast<const int64_t*>(ctx.arenas().ptr(segments_)),
                             n_params_, static_cast<float>(cfg_.grad_clip), ctx.f32(norm_),
                             clip_ws_.valid() ? ctx.arenas().ptr(clip_ws_) : nullptr);
  if (cfg_.kind == OptimizerKind::kSgd) {
    ctx.ops().sgd(p, g, ctx.f32(s0_), shard_.count, cfg_.sgd, ctx.counters());
  } else {
    AdamHyper h = cfg_.adam;
    h.decay_mask = decay_mask_.valid() ? ctx.f32(decay_mask_) + shard_.first : nullptr;
    ctx.ops().adam(p, g, ctx.f32(s0_), ctx.f32(s1_), shard_.count, h, ctx.counters());
  }
}

const float* Optimizer::grad_norm(const Arenas& arenas) const {
  return norm_.valid() ? arenas.as<float>(norm_) : nullptr;
}

std::vector<std::pair<std::string, Slot>> Optimizer::state() const {
  if (cfg_.kind == OptimizerKind::kSgd) return {{"sgd.momentum", s0_}};
  return {{"adam.m", s0_}, {"adam.v", s1_}};
}

}  // namespace noeira
