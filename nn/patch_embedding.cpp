#include "nn/patch_embedding.h"

namespace noeira {

PatchShape PatchEmbedding::shape(int64_t rows) const {
  return PatchShape{rows, in_[0], in_[1], in_[2], patch_};
}

Shape PatchEmbedding::plan(PlanContext& pc, const Shape& in) {
  const std::string name = pc.where("PatchEmbedding");
  if (in.rank != 3) throw PlanError(name + ": input " + in.str() + " is not an image (C, H, W)");
  if (patch_ <= 0 || width_ <= 0) throw PlanError(name + ": patch and width must be positive");
  if (in[1] % patch_ != 0 || in[2] % patch_ != 0)
    throw PlanError(name + ": image " + in.str() + " does not split into " +
                    std::to_string(patch_) + "x" + std::to_string(patch_) +
                    " patches; pick a patch size dividing H and W");
  in_ = in;
  const PatchShape s = shape(1);
  const Shape patches{s.patches(), s.patch_elems()};  // (N, C p p)
  patches_ = pc.plan.reserve(MemCategory::kActivations, patches.with_batch(pc.batch), pc.in_dtype);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), pc.in_dtype);
  proj_ = std::make_unique<Linear>(width_, Act::kNone, true);
  PlanContext c = pc.child("", pc.input_needs_grad, pc.in_dtype);
  const Shape out = proj_->plan(c, patches);  // (N, width)
  out_dtype_ = proj_->out_dtype();
  return out;
}

Tensor PatchEmbedding::forward(Context& ctx, const Tensor& x) {
  Tensor p = ctx.view(patches_, x.rows());  // (B, N, C p p)
  ctx.ops().patchify(shape(x.rows()), x, p);
  return proj_->forward(ctx, p);
}

Tensor PatchEmbedding::backward(Context& ctx, const Tensor& dy) {
  const Tensor dp = proj_->backward(ctx, dy);  // (B, N, C p p), or empty
  if (!dx_.valid()) return Tensor{};
  Tensor dx = ctx.view(dx_, dp.rows());
  ctx.ops().unpatchify(shape(dp.rows()), dp, dx);
  return dx;
}

}  // namespace noeira
