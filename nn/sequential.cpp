#include "nn/sequential.h"

namespace noeira {

Sequential& Sequential::add(std::string name, std::unique_ptr<Module> m) {
  children_.emplace_back(std::move(name), std::move(m));
  return *this;
}

Shape Sequential::plan(PlanContext& pc, const Shape& in) {
  Shape s = in;
  DType dt = pc.in_dtype;
  child_params_.clear();
  for (size_t i = 0; i < children_.size(); ++i) {
    const size_t first = pc.params.all().size();
    // Only the first child's input is ours; every later input is a child's output.
    PlanContext c = pc.child(children_[i].first, i == 0 ? pc.input_needs_grad : true, dt);
    s = children_[i].second->plan(c, s);
    dt = children_[i].second->out_dtype();
    child_params_.emplace_back(first, pc.params.all().size());
  }
  out_dtype_ = dt;
  return s;
}

Tensor Sequential::forward(Context& ctx, const Tensor& x) {
  Tensor h = x;
  for (auto& [name, m] : children_) {
    if (ctx.hooks()) ctx.hooks()->before_forward(*m);
    h = m->forward(ctx, h);
  }
  return h;
}

Tensor Sequential::backward(Context& ctx, const Tensor& dy) {
  Tensor g = dy;
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
    if (ctx.hooks()) ctx.hooks()->before_backward(*it->second);
    g = it->second->backward(ctx, g);
    if (ctx.hooks()) ctx.hooks()->after_backward(*it->second);
  }
  return g;
}

}  // namespace noeira
