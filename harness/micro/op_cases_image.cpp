// The op cases of the image ops (op_cases.h): BatchNorm, patches, pooling, ResNet's
// shortcut and convolution.
#include <string>
#include <utility>

#include "harness/micro/op_case_specs.h"
#include "harness/micro/op_cases.h"
#include "kernels/profiling/op_cost.h"

namespace noeira::op_case {

using namespace specs;

namespace {

std::string conv_shape(const ConvShape& s, DType dt) {
  return dts(dt) + "/B=" + std::to_string(s.batch) + "/Cin=" + std::to_string(s.in_channels) +
         "/H=" + std::to_string(s.height) + "/W=" + std::to_string(s.width) +
         "/Cout=" + std::to_string(s.out_channels) + "/k=" + std::to_string(s.kernel_h) +
         "/s=" + std::to_string(s.stride) + "/p=" + std::to_string(s.pad) + (s.has_bias ? "/bias" : "");
}

std::string pool_shape(const PoolShape& s, DType dt) {
  return dts(dt) + "/B=" + std::to_string(s.batch) + "/C=" + std::to_string(s.channels) +
         "/H=" + std::to_string(s.height) + "/W=" + std::to_string(s.width) +
         "/k=" + std::to_string(s.kernel_h) + "/s=" + std::to_string(s.stride) +
         (s.pad ? "/p=" + std::to_string(s.pad) : "");
}

}  // namespace

OpCase batchnorm_forward_train(const Ops& ops, const NormShape& ns, DType dt, const BatchNormHyper& h,
                               bool residual, Act act) {
  const int64_t n = ns.elems(), C = ns.channels;
  const std::string epilogue = std::string(residual ? "/residual" : "") + (act == Act::kReLU ? "/relu" : "") +
                               (act == Act::kGELU ? "/gelu" : "");
  OpCase c{"batchnorm_forward_train", dts(dt) + "/B=" + std::to_string(ns.batch) + "/C=" + std::to_string(C) +
                                          "/S=" + std::to_string(ns.spatial) + epilogue, {}, {}, {}, {}};
  Specs s;
  const int x = s.add(Shape{n}, dt, Fill::kSigned);
  const int r = s.add_if(residual, Shape{n}, dt, Fill::kSigned);
  const int g = s.add(Shape{C}, DType::kF32, Fill::kSigned), b = s.add(Shape{C}, DType::kF32, Fill::kSigned);
  const int y = s.add(Shape{n}, dt, Fill::kZero);
  const int mean = s.add(Shape{C}, DType::kF32, Fill::kZero), inv = s.add(Shape{C}, DType::kF32, Fill::kZero);
  const int rm = s.add(Shape{C}, DType::kF32, Fill::kSigned), rv = s.add(Shape{C}, DType::kF32, Fill::kPositive);
  const int ws = s.workspace(ops.batchnorm_workspace_bytes(ns));
  c.buffers = s.v;
  c.call = [=](Ops& o, const Ptrs& p) {
    const BatchNormEpilogue epi{view(p, r, dt, n), act};
    o.batchnorm_forward_train(ns, view(p, x, dt, n), f32(p, g), f32(p, b), h, view(p, y, dt, n), epi,
                              f32(p, mean), f32(p, inv), f32(p, rm), f32(p, rv), at(p, ws));
  };
  // x, y and the residual once each; gamma, beta read; mean, invstd written; the running
  // statistics read and written.
  c.work.bytes = (residual ? 3 : 2) * bytes(n, dt) + bytes(8 * C, DType::kF32);
  return c;
}

OpCase batchnorm_backward(const Ops& ops, const NormShape& ns, DType dt, bool dx, bool relu) {
  const int64_t n = ns.elems(), C = ns.channels;
  OpCase c{relu ? "batchnorm_relu_backward" : "batchnorm_backward",
           dts(dt) + "/B=" + std::to_string(ns.batch) + "/C=" + std::to_string(C) + "/S=" +
               std::to_string(ns.spatial) + no_dx(dx),
           {}, {}, {}, {}};
  Specs s;
  const int dy = s.add(Shape{n}, dt, Fill::kSigned), x = s.add(Shape{n}, dt, Fill::kSigned);
  const int post = s.add_if(relu, Shape{n}, dt, Fill::kSigned);  // batchnorm_relu_backward's
  const int g = s.add(Shape{C}, DType::kF32, Fill::kSigned);
  const int b = s.add_if(relu, Shape{C}, DType::kF32, Fill::kSigned);
  const int mean = s.add(Shape{C}, DType::kF32, Fill::kSigned), inv = s.add(Shape{C}, DType::kF32, Fill::kPositive);
  const int d = s.add_if(dx, Shape{n}, dt, Fill::kZero);
  const int dg = s.add(Shape{C}, DType::kF32, Fill::kZero), db = s.add(Shape{C}, DType::kF32, Fill::kZero);
  const int ws = s.workspace(ops.batchnorm_workspace_bytes(ns));
  c.buffers = s.v;
  c.call = [=](Ops& o, const Ptrs& p) {
    if (relu)
      o.batchnorm_relu_backward(ns, view(p, dy, dt, n), view(p, post, dt, n), view(p, x, dt, n),
                                f32(p, g), f32(p, b), f32(p, mean), f32(p, inv), view(p, d, dt, n),
                                f32(p, dg), f32(p, db), at(p, ws));
    else
      o.batchnorm_backward(ns, view(p, dy, dt, n), view(p, x, dt, n), f32(p, g), f32(p, mean),
                           f32(p, inv), view(p, d, dt, n), f32(p, dg), f32(p, db), at(p, ws));
  };
  // gamma, mean, invstd (and beta) read; dgamma, dbeta read and written. relu: dy and x as
  // without (relu_post's sign is recomputed from x on the CPU; CUDA reads it, unlisted).
  c.work.bytes = (dx ? 3 : 2) * bytes(n, dt) + bytes((relu ? 8 : 7) * C, DType::kF32);
  return c;
}

OpCase patchify(const PatchShape& ps, DType dt) {
  const int64_t n = ps.elems();
  OpCase c{"patchify",
           dts(dt) + "/B=" + std::to_string(ps.batch) + "/C=" + std::to_string(ps.channels) +
               "/H=" + std::to_string(ps.height) + "/W=" + std::to_string(ps.width) +
               "/p=" + std::to_string(ps.patch),
           {}, {}, {}, {}};
  Specs s;
  const int x = s.add(Shape{n}, dt, Fill::kSigned), y = s.add(Shape{n}, dt, Fill::kZero);
  c.buffers = s.v;
  c.call = [=](Ops& ops, const Ptrs& p) { ops.patchify(ps, view(p, x, dt, n), view(p, y, dt, n)); };
  c.work.bytes = 2 * bytes(n, dt);
  return c;
}

OpCase maxpool2d_forward(const PoolShape& ps, DType dt) {
  OpCase c{"maxpool2d_forward", pool_shape(ps, dt), {}, {}, {}, {}};
  Specs s;
  const int x = s.add(Shape{ps.x_elems()}, dt, Fill::kSigned), y = s.add(Shape{ps.y_elems()}, dt, Fill::kZero);
  const int arg = s.add(Shape{ps.y_elems()}, DType::kI32, Fill::kZero);
  c.buffers = s.v;
  c.call = [=](Ops& o, const Ptrs& p) {
    o.maxpool2d_forward(ps, view(p, x, dt, ps.x_elems()), view(p, y, dt, ps.y_elems()),
                        static_cast<int32_t*>(at(p, arg)));
  };
  c.work.bytes = bytes(ps.x_elems(), dt) + bytes(ps.y_elems(), dt) + bytes(ps.y_elems(), DType::kI32);
  return c;
}

OpCase maxpool2d_backward(const PoolShape& ps, DType dt) {
  OpCase c{"maxpool2d_backward", pool_shape(ps, dt), {}, {}, {}, {}};
  Specs s;
  const int x = s.add(Shape{ps.x_elems()}, dt, Fill::kSigned), dy = s.add(Shape{ps.y_elems()}, dt, Fill::kSigned);
  const int arg = s.add(Shape{ps.y_elems()}, DType::kI32, Fill::kZero);
  const int dx = s.add(Shape{ps.x_elems()}, dt, Fill::kZero);
  c.buffers = s.v;
  // The forward's argmax (its y lands in dy: any values do).
  c.prepare = [=](Ops& o, const Ptrs& p) {
    o.maxpool2d_forward(ps, view(p, x, dt, ps.x_elems()), view(p, dy, dt, ps.y_elems()),
                        static_cast<int32_t*>(at(p, arg)));
  };
  c.call = [=](Ops& o, const Ptrs& p) {
    o.maxpool2d_backward(ps, view(p, dy, dt, ps.y_elems()), static_cast<const int32_t*>(at(p, arg)),
                         view(p, dx, dt, ps.x_elems()));
  };
  c.work.bytes = bytes(ps.y_elems(), dt) + bytes(ps.y_elems(), DType::kI32) + bytes(ps.x_elems(), dt);
  return c;
}

namespace {

// A case that reads one tensor of n_in elements (signed values) and overwrites another of
// n_out; its bytes are both, whole (a stride-2 subsample still touches every cache line).
template <class Run>
OpCase in_out_case(const char* op, std::string shape, int64_t n_in, int64_t n_out, DType dt,
                   Run run) {
  OpCase c{op, std::move(shape), {}, {}, {}, {}};
  Specs s;
  const int in = s.add(Shape{n_in}, dt, Fill::kSigned), out = s.add(Shape{n_out}, dt, Fill::kZero);
  c.buffers = s.v;
  c.call = [=](Ops& o, const Ptrs& p) { run(o, view(p, in, dt, n_in), view(p, out, dt, n_out)); };
  c.work.bytes = bytes(n_in, dt) + bytes(n_out, dt);
  return c;
}

std::string shortcut_shape(const ShortcutShape& s, DType dt) {
  return dts(dt) + "/B=" + std::to_string(s.batch) + "/Cin=" + std::to_string(s.in_channels) +
         "/H=" + std::to_string(s.height) + "/W=" + std::to_string(s.width) +
         "/Cout=" + std::to_string(s.out_channels) + "/s=" + std::to_string(s.stride);
}

}  // namespace

OpCase avgpool2d_forward(const PoolShape& ps, DType dt) {
  return in_out_case("avgpool2d_forward", pool_shape(ps, dt), ps.x_elems(), ps.y_elems(), dt,
                     [ps](Ops& o, View x, View y) { o.avgpool2d_forward(ps, x, y); });
}

OpCase avgpool2d_backward(const PoolShape& ps, DType dt) {
  return in_out_case("avgpool2d_backward", pool_shape(ps, dt), ps.y_elems(), ps.x_elems(), dt,
                     [ps](Ops& o, View dy, View dx) { o.avgpool2d_backward(ps, dy, dx); });
}

OpCase shortcut_forward(const ShortcutShape& ss, DType dt) {
  return in_out_case("shortcut_forward", shortcut_shape(ss, dt), ss.x_elems(), ss.y_elems(), dt,
                     [ss](Ops& o, View x, View y) { o.shortcut_forward(ss, x, y); });
}

OpCase shortcut_backward(const ShortcutShape& ss, DType dt) {
  return in_out_case("shortcut_backward", shortcut_shape(ss, dt), ss.y_elems(), ss.x_elems(), dt,
                     [ss](Ops& o, View dy, View dx) { o.shortcut_backward(ss, dy, dx); });
}

Result<OpCase> conv2d_forward(Ops& ops, const ConvShape& cs, DType dt) {
  Result<size_t> wsb = ops.conv2d_plan(cs, dt);
  if (!wsb) return wsb.error();
  OpCase c{"conv2d_forward", conv_shape(cs, dt), {}, {}, {}, {}};
  Specs s;
  const int x = s.add(Shape{cs.x_elems()}, dt, Fill::kSigned), w = s.add(Shape{cs.w_elems()}, dt, Fill::kSigned);
  const int b = s.add_if(cs.has_bias, Shape{cs.out_channels}, DType::kF32, Fill::kSigned);
  const int y = s.add(Shape{cs.y_elems()}, dt, Fill::kZero);
  const int ws = s.workspace(*wsb);
  const size_t ws_bytes = *wsb;
  c.buffers = s.v;
  c.call = [=](Ops& o, const Ptrs& p) {
    o.conv2d_forward(cs, view(p, x, dt, cs.x_elems()), view(p, w, dt, cs.w_elems()), f32(p, b),
                     view(p, y, dt, cs.y_elems()), at(p, ws), ws_bytes);
  };
  c.work.flops = op_cost::conv_flops(cs);
  c.work.bytes = bytes(cs.x_elems() + cs.w_elems() + cs.y_elems(), dt) +
                 (cs.has_bias ? bytes(cs.out_channels, DType::kF32) : 0);
  c.work.bf16_matrix = dt == DType::kBF16;
  return c;
}

Result<OpCase> conv2d_backward_data(Ops& ops, const ConvShape& cs, DType dt) {
  Result<size_t> wsb = ops.conv2d_plan(cs, dt);
  if (!wsb) return wsb.error();
  OpCase c{"conv2d_backward_data", conv_shape(cs, dt), {}, {}, {}, {}};
  Specs s;
  const int dy = s.add(Shape{cs.y_elems()}, dt, Fill::kSigned), w = s.add(Shape{cs.w_elems()}, dt, Fill::kSigned);
  const int dx = s.add(Shape{cs.x_elems()}, dt, Fill::kZero);
  const int ws = s.workspace(*wsb);
  const size_t ws_bytes = *wsb;
  c.buffers = s.v;
  c.call = [=](Ops& o, const Ptrs& p) {
    o.conv2d_backward_data(cs, view(p, dy, dt, cs.y_elems()), view(p, w, dt, cs.w_elems()),
                           view(p, dx, dt, cs.x_elems()), at(p, ws), ws_bytes);
  };
  c.work.flops = op_cost::conv_flops(cs);
  c.work.bytes = bytes(cs.x_elems() + cs.w_elems() + cs.y_elems(), dt);
  c.work.bf16_matrix = dt == DType::kBF16;
  return c;
}

Result<OpCase> conv2d_backward_relu_grad(Ops& ops, const ConvShape& cs, DType dt) {
  Result<size_t> wsb = ops.conv2d_plan(cs, dt);
  if (!wsb) return wsb.error();
  OpCase c{"conv2d_backward", conv_shape(cs, dt) + "/dx_relu_grad", {}, {}, {}, {}};
  Specs s;
  const int64_t nx = cs.x_elems(), ny = cs.y_elems(), nw = cs.w_elems();
  const int x = s.add(Shape{nx}, dt, Fill::kSigned), dy = s.add(Shape{ny}, dt, Fill::kSigned);
  const int w = s.add(Shape{nw}, dt, Fill::kSigned), dx = s.add(Shape{nx}, dt, Fill::kZero);
  const int res = s.add(Shape{nx}, dt, Fill::kSigned), post = s.add(Shape{nx}, dt, Fill::kSigned);
  const int dw = s.add(Shape{nw}, DType::kF32, Fill::kZero);
  const int db = s.add_if(cs.has_bias, Shape{cs.out_channels}, DType::kF32, Fill::kZero);
  const int ws = s.workspace(*wsb);
  const size_t ws_bytes = *wsb;
  c.buffers = s.v;
  c.call = [=](Ops& o, const Ptrs& p) {
    o.conv2d_backward(cs, view(p, x, dt, nx), view(p, dy, dt, ny), view(p, w, dt, nw),
                      view(p, dx, dt, nx), ConvDxEpilogue{view(p, res, dt, nx), view(p, post, dt, nx)},
                      f32(p, dw), f32(p, db), at(p, ws), ws_bytes);
  };
  // Both passes' FLOPs; x, dy, w, the epilogue's two operands read, dx written, dw (and db)
  // read and written.
  c.work.flops = 2 * op_cost::conv_flops(cs);
  c.work.bytes = bytes(4 * nx + ny + nw, dt) +
                 2 * bytes(nw + (cs.has_bias ? cs.out_channels : 0), DType::kF32);
  c.work.bf16_matrix = dt == DType::kBF16;
  return c;
}

Result<OpCase> conv2d_backward_weights(Ops& ops, const ConvShape& cs, DType dt) {
  Result<size_t> wsb = ops.conv2d_plan(cs, dt);
  if (!wsb) return wsb.error();
  OpCase c{"conv2d_backward_weights", conv_shape(cs, dt), {}, {}, {}, {}};
  Specs s;
  const int x = s.add(Shape{cs.x_elems()}, dt, Fill::kSigned), dy = s.add(Shape{cs.y_elems()}, dt, Fill::kSigned);
  const int dw = s.add(Shape{cs.w_elems()}, DType::kF32, Fill::kZero);
  const int db = s.add_if(cs.has_bias, Shape{cs.out_channels}, DType::kF32, Fill::kZero);
  const int ws = s.workspace(*wsb);
  const size_t ws_bytes = *wsb;
  c.buffers = s.v;
  c.call = [=](Ops& o, const Ptrs& p) {
    o.conv2d_backward_weights(cs, view(p, x, dt, cs.x_elems()), view(p, dy, dt, cs.y_elems()), f32(p, dw),
                              f32(p, db), at(p, ws), ws_bytes);
  };
  // dw and db accumulate: read and written.
  c.work.flops = op_cost::conv_flops(cs);
  c.work.bytes = bytes(cs.x_elems() + cs.y_elems(), dt) +
                 2 * bytes(cs.w_elems() + (cs.has_bias ? cs.out_channels : 0), DType::kF32);
  c.work.bf16_matrix = dt == DType::kBF16;
  return c;
}

}  // namespace noeira::op_case
