#include "harness/micro/op_cases.h"

#include <utility>

#include "kernels/profiling/op_cost.h"

namespace noeira::op_case {

namespace {

using Ptrs = std::vector<void*>;

// The buffers of a case, added in order; absent optional operands get index -1.
struct Specs {
  std::vector<BufferSpec> v;
  int add(const Shape& shape, DType dt, Fill fill) {
    v.push_back({shape, dt, fill});
    return static_cast<int>(v.size()) - 1;
  }
  int add_if(bool present, const Shape& shape, DType dt, Fill fill) {
    return present ? add(shape, dt, fill) : -1;
  }
  int workspace(size_t bytes) {
    v.push_back(workspace_spec(bytes));
    return static_cast<int>(v.size()) - 1;
  }
};

void* at(const Ptrs& p, int i) { return i < 0 ? nullptr : p[static_cast<size_t>(i)]; }
float* f32(const Ptrs& p, int i) { return static_cast<float*>(at(p, i)); }
View view(const Ptrs& p, int i, DType dt, int64_t n) { return i < 0 ? View{} : View{at(p, i), dt, n}; }

double bytes(int64_t n, DType dt) { return static_cast<double>(n) * static_cast<double>(dtype_size(dt)); }
std::string dts(DType dt) { return dtype_name(dt); }
std::string act_name(Act a) { return a == Act::kGELU ? "gelu" : a == Act::kReLU ? "relu" : "none"; }
std::string no_dx(bool dx) { return dx ? "" : "/no_dx"; }

// (b, h) pairs x the (query, key) pairs a head computes: all T x T, or the causal triangle.
double attention_pairs(int64_t B, int64_t T, int64_t nh, bool causal) {
  const double t = static_cast<double>(T);
  return static_cast<double>(B * nh) * (causal ? t * (t + 1) / 2 : t * t);
}

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

std::string attention_shape(int64_t B, int64_t T, int64_t C, int64_t nh, bool causal, DType dt) {
  return dts(dt) + (causal ? "/causal" : "/full") + "/B=" + std::to_string(B) +
         "/T=" + std::to_string(T) + "/C=" + std::to_string(C) + "/nh=" + std::to_string(nh);
}

}  // namespace

OpCase act_forward(int64_t n, DType dt, Act act) {
  OpCase c{"act_forward", dts(dt) + "/" + act_name(act) + "/n=" + std::to_string(n), {}, {}, {}, {}};
  Specs s;
  const int x = s.add(Shape{n}, dt, Fill::kSigned), y = s.add(Shape{n}, dt, Fill::kZero);
  c.buffers = s.v;
  c.call = [=](Ops& ops, const Ptrs& p) { ops.act_forward(view(p, x, dt, n), view(p, y, dt, n), act); };
  c.work.bytes = 2 * bytes(n, dt);
  return c;
}

OpCase act_backward(int64_t n, DType dt, Act act, bool pre, bool post) {
  OpCase c{"act_backward", dts(dt) + "/" + act_name(act) + "/n=" + std::to_string(n), {}, {}, {}, {}};
  Specs s;
  const int dy = s.add(Shape{n}, dt, Fill::kSigned);
  const int pr = s.add_if(pre, Shape{n}, dt, Fill::kSigned);
  const int po = s.add_if(post, Shape{n}, dt, Fill::kSigned);
  const int dx = s.add(Shape{n}, dt, Fill::kZero);
  c.buffers = s.v;
  c.call = [=](Ops& ops, const Ptrs& p) {
    ops.act_backward(view(p, dy, dt, n), view(p, pr, dt, n), view(p, po, dt, n), view(p, dx, dt, n), act);
  };
  // dy and dx, and the one input the derivative reads (GELU: pre; ReLU: post).
  const bool reads = act == Act::kGELU ? pre : act == Act::kReLU ? post : false;
  c.work.bytes = (reads ? 3 : 2) * bytes(n, dt);
  return c;
}

OpCase bias_act(int64_t M, int64_t N, DType dt, Act act, bool bias, bool pre) {
  OpCase c{"bias_act", dts(dt) + "/" + act_name(act) + "/M=" + std::to_string(M) + "/N=" + std::to_string(N) +
                           (bias ? "/bias" : ""), {}, {}, {}, {}};
  Specs s;
  // acc apart from y even where the step runs fp32 in place: the same bytes move, and
  // every call reads the same inputs.
  const int acc = s.add(Shape{M, N}, DType::kF32, Fill::kSigned);
  const int b = s.add_if(bias, Shape{N}, DType::kF32, Fill::kSigned);
  const int y = s.add(Shape{M, N}, dt, Fill::kZero);
  const int pr = s.add_if(pre, Shape{M, N}, dt, Fill::kZero);
  c.buffers = s.v;
  c.call = [=](Ops& ops, const Ptrs& p) {
    ops.bias_act(f32(p, acc), f32(p, b), view(p, y, dt, M * N), view(p, pr, dt, M * N), M, N, act);
  };
  c.work.bytes = bytes(M * N, DType::kF32) + (bias ? bytes(N, DType::kF32) : 0) +
                 (pre ? 2 : 1) * bytes(M * N, dt);
  return c;
}

OpCase linear_backward_params(int64_t M, int64_t N, int64_t K, DType dt, bool bias) {
  OpCase c{"linear_backward_params", dts(dt) + "/M=" + std::to_string(M) + "/N=" + std::to_string(N) +
                                         "/K=" + std::to_string(K) + (bias ? "/bias" : ""),
           {}, {}, {}, {}};
  Specs s;
  const int dz = s.add(Shape{M, N}, dt, Fill::kSigned), x = s.add(Shape{M, K}, dt, Fill::kSigned);
  // dW and db accumulate: every call adds to the last one's sums (the values stay finite).
  const int dW = s.add(Shape{N, K}, DType::kF32, Fill::kZero);
  const int db = s.add_if(bias, Shape{N}, DType::kF32, Fill::kZero);
  c.buffers = s.v;
  c.call = [=](Ops& ops, const Ptrs& p) {
    ops.linear_backward_params(view(p, dz, dt, M * N), view(p, x, dt, M * K), f32(p, dW), f32(p, db),
                               M, N, K);
  };
  c.work.flops = 2.0 * static_cast<double>(M * N * K);
  c.work.bytes = bytes(M * N + M * K, dt) + 2 * bytes(N * K + (bias ? N : 0), DType::kF32);
  c.work.bf16_matrix = dt == DType::kBF16;
  return c;
}

OpCase cast(int64_t n, DType from, DType to, bool weights) {
  OpCase c{"cast", dts(from) + "_to_" + dts(to) + "/n=" + std::to_string(n) + (weights ? "/weights" : ""),
           {}, {}, {}, {}};
  Specs s;
  const int x = s.add(Shape{n}, from, Fill::kSigned), y = s.add(Shape{n}, to, Fill::kZero);
  c.buffers = s.v;
  c.call = [=](Ops& ops, const Ptrs& p) { ops.cast(view(p, x, from, n), view(p, y, to, n)); };
  c.work.bytes = bytes(n, from) + bytes(n, to);
  return c;
}

OpCase layernorm_forward(int64_t N, int64_t C, DType dt, bool beta, float eps) {
  OpCase c{"layernorm_forward", dts(dt) + "/N=" + std::to_string(N) + "/C=" + std::to_string(C) +
                                    (beta ? "/bias" : ""), {}, {}, {}, {}};
  Specs s;
  const int x = s.add(Shape{N, C}, dt, Fill::kSigned);
  const int g = s.add(Shape{C}, DType::kF32, Fill::kSigned);
  const int b = s.add_if(beta, Shape{C}, DType::kF32, Fill::kSigned);
  const int y = s.add(Shape{N, C}, dt, Fill::kZero);
  const int mean = s.add(Shape{N}, DType::kF32, Fill::kZero), rstd = s.add(Shape{N}, DType::kF32, Fill::kZero);
  c.buffers = s.v;
  c.call = [=](Ops& ops, const Ptrs& p) {
    ops.layernorm_forward(view(p, x, dt, N * C), f32(p, g), f32(p, b), view(p, y, dt, N * C), f32(p, mean),
                          f32(p, rstd), N, C, eps);
  };
  c.work.bytes = 2 * bytes(N * C, dt) + bytes((beta ? 2 : 1) * C + 2 * N, DType::kF32);
  return c;
}

OpCase layernorm_backward(const Ops& ops, int64_t N, int64_t C, DType dt, bool dx, bool dbeta,
                          bool residual) {
  OpCase c{"layernorm_backward", dts(dt) + "/N=" + std::to_string(N) + "/C=" + std::to_string(C) +
                                     (dbeta ? "/bias" : "") + no_dx(dx) + (residual ? "/residual" : ""),
           {}, {}, {}, {}};
  Specs s;
  const int dy = s.add(Shape{N, C}, dt, Fill::kSigned), x = s.add(Shape{N, C}, dt, Fill::kSigned);
  const int g = s.add(Shape{C}, DType::kF32, Fill::kSigned);
  const int mean = s.add(Shape{N}, DType::kF32, Fill::kSigned);
  const int rstd = s.add(Shape{N}, DType::kF32, Fill::kPositive);
  const int d = s.add_if(dx, Shape{N, C}, dt, Fill::kZero);
  const int res = s.add_if(residual, Shape{N, C}, dt, Fill::kSigned);
  const int dg = s.add(Shape{C}, DType::kF32, Fill::kZero);
  const int db = s.add_if(dbeta, Shape{C}, DType::kF32, Fill::kZero);
  const int ws = s.workspace(ops.layernorm_workspace_bytes(N, C));
  c.buffers = s.v;
  c.call = [=](Ops& o, const Ptrs& p) {
    o.layernorm_backward(view(p, dy, dt, N * C), view(p, x, dt, N * C), f32(p, g), f32(p, mean), f32(p, rstd),
                         view(p, d, dt, N * C), view(p, res, dt, N * C), f32(p, dg), f32(p, db), N, C,
                         at(p, ws));
  };
  // dgamma and dbeta accumulate: read and written.
  c.work.bytes = ((dx ? 3 : 2) + (residual ? 1 : 0)) * bytes(N * C, dt) +
                 bytes(C + 2 * N + (dbeta ? 4 : 2) * C, DType::kF32);
  return c;
}

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

OpCase attention_forward(const Ops& ops, int64_t B, int64_t T, int64_t C, int64_t nh, bool causal, DType dt) {
  OpCase c{"attention_forward", attention_shape(B, T, C, nh, causal, dt), {}, {}, {}, {}};
  const int64_t saved = ops.attention_saved_floats(B, T, nh, dt);
  Specs s;
  const int qkv = s.add(Shape{B, T, 3 * C}, dt, Fill::kSigned), out = s.add(Shape{B, T, C}, dt, Fill::kZero);
  const int att = s.add(Shape{saved}, DType::kF32, Fill::kZero);
  const int ws = s.workspace(ops.attention_workspace_bytes(B, T, C, nh, dt));
  c.buffers = s.v;
  c.call = [=](Ops& o, const Ptrs& p) {
    o.attention_forward(view(p, qkv, dt, B * T * 3 * C), view(p, out, dt, B * T * C), f32(p, att), B, T, C, nh,
                        causal, at(p, ws));
  };
  // q k^T and att v over the visible pairs, hd = C / nh each.
  c.work.flops = 4.0 * attention_pairs(B, T, nh, causal) * static_cast<double>(C / nh);
  c.work.bytes = bytes(4 * B * T * C, dt) + bytes(saved, DType::kF32);
  c.work.bf16_matrix = dt == DType::kBF16;
  return c;
}

OpCase attention_backward(const Ops& ops, int64_t B, int64_t T, int64_t C, int64_t nh, bool causal, DType dt) {
  OpCase c{"attention_backward", attention_shape(B, T, C, nh, causal, dt), {}, {}, {}, {}};
  const int64_t saved = ops.attention_saved_floats(B, T, nh, dt);
  Specs s;
  const int dout = s.add(Shape{B, T, C}, dt, Fill::kSigned), qkv = s.add(Shape{B, T, 3 * C}, dt, Fill::kSigned);
  const int att = s.add(Shape{saved}, DType::kF32, Fill::kZero);
  const int dqkv = s.add(Shape{B, T, 3 * C}, dt, Fill::kZero);
  const int ws = s.workspace(ops.attention_workspace_bytes(B, T, C, nh, dt));
  c.buffers = s.v;
  // The forward fills att (its out lands in dqkv, which backward overwrites).
  c.prepare = [=](Ops& o, const Ptrs& p) {
    o.attention_forward(view(p, qkv, dt, B * T * 3 * C), view(p, dqkv, dt, B * T * C), f32(p, att), B, T, C, nh,
                        causal, at(p, ws));
  };
  c.call = [=](Ops& o, const Ptrs& p) {
    o.attention_backward(view(p, dout, dt, B * T * C), view(p, qkv, dt, B * T * 3 * C), f32(p, att),
                         view(p, dqkv, dt, B * T * 3 * C), B, T, C, nh, causal, at(p, ws));
  };
  // dv = att^T dout, datt = dout v^T, dq = dS k, dk = dS^T q over the visible pairs.
  c.work.flops = 8.0 * attention_pairs(B, T, nh, causal) * static_cast<double>(C / nh);
  c.work.bytes = bytes(7 * B * T * C, dt) + bytes(saved, DType::kF32);
  c.work.bf16_matrix = dt == DType::kBF16;
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
