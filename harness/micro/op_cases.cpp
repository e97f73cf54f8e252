// The op cases of matrices, element-wise ops, layer normalisation and attention
// (op_cases.h); the image ops' are in op_cases_image.cpp.
#include "harness/micro/op_cases.h"

#include <string>

#include "harness/micro/op_case_specs.h"

namespace noeira::op_case {

using namespace specs;

namespace {

// (b, h) pairs x the (query, key) pairs a head computes: all T x T, or the causal triangle.
double attention_pairs(int64_t B, int64_t T, int64_t nh, bool causal) {
  const double t = static_cast<double>(T);
  return static_cast<double>(B * nh) * (causal ? t * (t + 1) / 2 : t * t);
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

OpCase act_backward_saved(int64_t n, DType dt) {
  OpCase c{"act_backward_saved", dts(dt) + "/n=" + std::to_string(n), {}, {}, {}, {}};
  Specs s;
  const int dy = s.add(Shape{n}, dt, Fill::kSigned);
  const int dact = s.add(Shape{n}, DType::kF32, Fill::kSigned);
  const int dx = s.add(Shape{n}, dt, Fill::kZero);
  c.buffers = s.v;
  c.call = [=](Ops& ops, const Ptrs& p) {
    ops.act_backward_saved(view(p, dy, dt, n), view(p, dact, DType::kF32, n), view(p, dx, dt, n));
  };
  c.work.bytes = 2 * bytes(n, dt) + bytes(n, DType::kF32);  // dy and dact read, dx written
  return c;
}

OpCase add_relu_backward(int64_t n, DType dt) {
  OpCase c{"add_relu_backward", dts(dt) + "/n=" + std::to_string(n), {}, {}, {}, {}};
  Specs s;
  const int a = s.add(Shape{n}, dt, Fill::kSigned), b = s.add(Shape{n}, dt, Fill::kSigned);
  const int post = s.add(Shape{n}, dt, Fill::kSigned), dx = s.add(Shape{n}, dt, Fill::kZero);
  c.buffers = s.v;
  c.call = [=](Ops& ops, const Ptrs& p) {
    ops.add_relu_backward(view(p, a, dt, n), view(p, b, dt, n), view(p, post, dt, n), view(p, dx, dt, n));
  };
  c.work.bytes = 4 * bytes(n, dt);  // a, b and post read, dx written
  return c;
}

OpCase bias_act(int64_t M, int64_t N, DType dt, Act act, bool bias, bool dact) {
  OpCase c{"bias_act", dts(dt) + "/" + act_name(act) + "/M=" + std::to_string(M) + "/N=" + std::to_string(N) +
                           (bias ? "/bias" : "") + (dact ? "/dact" : ""), {}, {}, {}, {}};
  Specs s;
  // acc apart from y even where the step runs fp32 in place: the same bytes move, and
  // every call reads the same inputs.
  const int acc = s.add(Shape{M, N}, DType::kF32, Fill::kSigned);
  const int b = s.add_if(bias, Shape{N}, DType::kF32, Fill::kSigned);
  const int y = s.add(Shape{M, N}, dt, Fill::kZero);
  const int da = s.add_if(dact, Shape{M, N}, DType::kF32, Fill::kZero);
  c.buffers = s.v;
  c.call = [=](Ops& ops, const Ptrs& p) {
    ops.bias_act(f32(p, acc), f32(p, b), view(p, y, dt, M * N), view(p, da, DType::kF32, M * N), M,
                 N, act);
  };
  c.work.bytes = bytes(M * N, DType::kF32) + (bias ? bytes(N, DType::kF32) : 0) +
                 bytes(M * N, dt) + (dact ? bytes(M * N, DType::kF32) : 0);
  return c;
}

OpCase linear_backward_params(const Ops& ops, int64_t M, int64_t N, int64_t K, DType dt,
                              bool bias, bool overwrite_dw) {
  OpCase c{"linear_backward_params", dts(dt) + "/M=" + std::to_string(M) + "/N=" + std::to_string(N) +
                                         "/K=" + std::to_string(K) + (bias ? "/bias" : "") +
                                         (overwrite_dw ? "" : "/accumulate"),
           {}, {}, {}, {}};
  Specs s;
  const int dz = s.add(Shape{M, N}, dt, Fill::kSigned), x = s.add(Shape{M, K}, dt, Fill::kSigned);
  // dW overwritten (a Linear layer's own weight) or accumulated (the tied head's); db
  // accumulates: every call adds to the last one's sums (the values stay finite).
  const int dW = s.add(Shape{N, K}, DType::kF32, Fill::kZero);
  const int db = s.add_if(bias, Shape{N}, DType::kF32, Fill::kZero);
  const int ws = s.workspace(ops.linear_params_workspace_bytes(N, K, dt));
  c.buffers = s.v;
  c.call = [=](Ops& o, const Ptrs& p) {
    o.linear_backward_params(view(p, dz, dt, M * N), view(p, x, dt, M * K), f32(p, dW), f32(p, db),
                             M, N, K, at(p, ws), overwrite_dw);
  };
  c.work.flops = 2.0 * static_cast<double>(M * N * K);
  c.work.bytes = bytes(M * N + M * K, dt) + (overwrite_dw ? 1 : 2) * bytes(N * K, DType::kF32) +
                 2 * bytes(bias ? N : 0, DType::kF32);
  c.work.bf16_matrix = dt == DType::kBF16;
  return c;
}

OpCase linear_backward_data_dact(int64_t M, int64_t N, int64_t K, DType dt) {
  OpCase c{"linear_backward_data", dts(dt) + "/M=" + std::to_string(M) + "/N=" + std::to_string(N) +
                                       "/K=" + std::to_string(K) + "/dact",
           {}, {}, {}, {}};
  Specs s;
  const int dz = s.add(Shape{M, N}, dt, Fill::kSigned), W = s.add(Shape{N, K}, dt, Fill::kSigned);
  const int dx = s.add(Shape{M, K}, dt, Fill::kZero);
  const int acc = s.add_if(dt != DType::kF32, Shape{M, K}, DType::kF32, Fill::kZero);
  const int dact = s.add(Shape{M, K}, DType::kF32, Fill::kSigned);
  c.buffers = s.v;
  c.call = [=](Ops& o, const Ptrs& p) {
    o.linear_backward_data(view(p, dz, dt, M * N), view(p, W, dt, N * K), view(p, dx, dt, M * K),
                           f32(p, acc), M, N, K, view(p, dact, DType::kF32, M * K));
  };
  // dz, W and dact read, dx written.
  c.work.flops = 2.0 * static_cast<double>(M * N * K);
  c.work.bytes = bytes(M * N + N * K + M * K, dt) + bytes(M * K, DType::kF32);
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

}  // namespace noeira::op_case
