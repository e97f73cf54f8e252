// CpuOps' convolutions (contracts: kernels/op_list.inc) through the one OnednnConv the backend
// owns (onednn_conv.h): conv2d_plan creates a shape's primitives for its dtype and sizes
// its workspace; the passes find the plan and stop the process when there is none.
// bf16 runs oneDNN's bf16 kernels (fp32 accumulation, bf16 outputs rounded once, fp32
// weight gradients), so nothing is converted through the workspace.
#include <string>
#include <utility>

#include "kernels/conv_dx_epilogue_check.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Sizes the views against the shape: the contract's programming errors.
void expect_conv_views(const char* op, const ConvShape& s, ConstView x, ConstView w,
                       ConstView y) {
  expect_elems(op, s.x_elems(), {x});
  expect_elems(op, s.w_elems(), {w});
  expect_elems(op, s.y_elems(), {y});
}

void check(const char* op, const Status& s) {
  if (!s) cpu_op_failed(op, s.error());
}

}  // namespace

Result<size_t> CpuOps::conv2d_plan(const ConvShape& s, DType dtype) {
  return conv_->workspace_bytes(s, dtype);
}

void CpuOps::conv2d_forward(const ConvShape& s, ConstView x, ConstView w, const float* bias,
                            View y, void* workspace, size_t workspace_bytes) {
  const char* op = "conv2d_forward";
  expect_conv_views(op, s, x, w, y);
  dispatch_float(op, {y, x, w}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    check(op, conv_->forward(s, x.as<T>(), w.as<T>(), bias, y.as<T>(), workspace,
                             workspace_bytes));
  });
}

void CpuOps::conv2d_backward_data(const ConvShape& s, ConstView dy, ConstView w, View dx,
                                  void* workspace, size_t workspace_bytes) {
  const char* op = "conv2d_backward_data";
  expect_conv_views(op, s, dx, w, dy);
  dispatch_float(op, {dx, dy, w}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    check(op, conv_->backward_data(s, dy.as<T>(), w.as<T>(), dx.as<T>(), workspace,
                                   workspace_bytes));
  });
}

void CpuOps::conv2d_backward_weights(const ConvShape& s, ConstView x, ConstView dy, float* dw,
                                     float* db, void* workspace, size_t workspace_bytes) {
  const char* op = "conv2d_backward_weights";
  expect_conv_views(op, s, x, ConstView{}, dy);
  dispatch_float(op, {x, dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    check(op, conv_->backward_weights(s, x.as<T>(), dy.as<T>(), dw, db, workspace,
                                      workspace_bytes));
  });
}

void CpuOps::conv2d_backward(const ConvShape& s, ConstView x, ConstView dy, ConstView w, View dx,
                             const ConvDxEpilogue& dx_epi, float* dw, float* db, void* workspace,
                             size_t workspace_bytes) {
  const char* op = "conv2d_backward";
  expect_conv_views(op, s, x, w, dy);
  expect_elems(op, s.x_elems(), {dx});
  if (std::string p = conv_dx_epilogue_problem(s, dx, dx_epi); !p.empty())
    cpu_op_failed(op, Error{std::move(p)});
  dispatch_float(op, {x, dy, w, dx, dx_epi.residual, dx_epi.relu_post}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    check(op, conv_->backward(s, x.as<T>(), dy.as<T>(), w.as<T>(),
                              dx.empty() ? nullptr : dx.as<T>(), dw, db, workspace,
                              workspace_bytes, dx_epi.residual.as<T>(),
                              dx_epi.relu_post.as<T>()));
  });
}

}  // namespace noeira
