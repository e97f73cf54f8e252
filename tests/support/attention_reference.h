// Self-attention for the CPU tests: a double-precision reference (causal or not) and a
// runner for CpuOps' attention_forward + attention_backward in fp32 or bf16 storage.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/support/image_reference.h"

namespace noeira::test::attention_ref {

using namespace noeira;
using image_ref::Vec;
using Dvec = std::vector<double>;

struct AttRef {
  Dvec out, att, dqkv;
};

// Double-precision attention on qkv (B, T, 3C), causal or not; backward from dout when
// given.
inline AttRef attention_ref(const Dvec& qkv, const Dvec* dout, int64_t B, int64_t T, int64_t C,
                            int64_t nh, bool causal) {
  const int64_t hd = C / nh;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  AttRef r;
  r.out.assign(static_cast<size_t>(B * T * C), 0.0);
  r.att.assign(static_cast<size_t>(B * nh * T * T), 0.0);
  r.dqkv.assign(qkv.size(), 0.0);
  auto visible = [&](int64_t i) { return causal ? i + 1 : T; };  // keys [0, visible(i))
  auto at = [&](int64_t b, int64_t t, int which, int64_t h, int64_t d) {
    return static_cast<size_t>((b * T + t) * 3 * C + which * C + h * hd + d);
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < nh; ++h) {
      double* att = r.att.data() + (b * nh + h) * T * T;
      for (int64_t i = 0; i < T; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < visible(i); ++j) {
          double s = 0.0;
          for (int64_t d = 0; d < hd; ++d) s += qkv[at(b, i, 0, h, d)] * qkv[at(b, j, 1, h, d)];
          att[i * T + j] = s * scale;
          mx = std::max(mx, s * scale);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < visible(i); ++j) sum += att[i * T + j] = std::exp(att[i * T + j] - mx);
        for (int64_t j = 0; j < visible(i); ++j) att[i * T + j] /= sum;
        for (int64_t j = 0; j < visible(i); ++j)
          for (int64_t d = 0; d < hd; ++d)
            r.out[(b * T + i) * C + h * hd + d] += att[i * T + j] * qkv[at(b, j, 2, h, d)];
      }
      if (dout == nullptr) continue;
      for (int64_t i = 0; i < T; ++i) {
        Dvec datt(static_cast<size_t>(T), 0.0);
        double rs = 0.0;
        for (int64_t j = 0; j < visible(i); ++j) {
          for (int64_t d = 0; d < hd; ++d)
            datt[j] += (*dout)[(b * T + i) * C + h * hd + d] * qkv[at(b, j, 2, h, d)];
          rs += datt[j] * att[i * T + j];
        }
        for (int64_t j = 0; j < visible(i); ++j) {
          const double ds = att[i * T + j] * (datt[j] - rs) * scale;
          for (int64_t d = 0; d < hd; ++d) {
            r.dqkv[at(b, i, 0, h, d)] += ds * qkv[at(b, j, 1, h, d)];
            r.dqkv[at(b, j, 1, h, d)] += ds * qkv[at(b, i, 0, h, d)];
            r.dqkv[at(b, j, 2, h, d)] += att[i * T + j] * (*dout)[(b * T + i) * C + h * hd + d];
          }
        }
      }
    }
  return r;
}

struct AttOut {
  Vec out, att, dqkv;
};

template <class T>
AttOut run_attention(int threads, const Vec& qkv, const Vec& dout, int64_t B, int64_t T_,
                     int64_t C, int64_t nh, bool causal) {
  CpuOps ops(threads);
  std::vector<T> q(qkv.size()), go(dout.size()), out(dout.size()), dq(qkv.size());
  for (size_t i = 0; i < qkv.size(); ++i) store_f32(q[i], qkv[i]);
  for (size_t i = 0; i < dout.size(); ++i) store_f32(go[i], dout[i]);
  AttOut o;
  o.att.assign(static_cast<size_t>(B * nh * T_ * T_), -1.0f);
  std::vector<char> ws(ops.attention_workspace_bytes(B, T_, C, nh, DTypeOf<T>::value));
  const int64_t n3 = B * T_ * 3 * C, n = B * T_ * C;
  ops.attention_forward(ConstView(q.data(), n3), View(out.data(), n), o.att.data(), B, T_, C, nh,
                        causal, ws.data());
  ops.attention_backward(ConstView(go.data(), n), ConstView(q.data(), n3), o.att.data(),
                         View(dq.data(), n3), B, T_, C, nh, causal, ws.data());
  for (const T& v : out) o.out.push_back(load_f32(v));
  for (const T& v : dq) o.dqkv.push_back(load_f32(v));
  return o;
}

}  // namespace noeira::test::attention_ref
