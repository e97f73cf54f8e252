// CpuOps' causal self-attention core (contract: kernels/ops.h). Plain loops per (batch,
// head), which OpenMP spreads; one thread computes a whole head in a fixed order, so 1 and
// N threads agree bit for bit. Each thread copies its head's q, k, v (and dout) into fp32
// scratch in the workspace (threads slabs of attention_ws_floats), so bf16 storage is
// read once and every sum below is in fp32.
//
// Orders and precision (the CUDA backend and the twin compare against these), hd = C / nh,
// scale = float(1 / sqrt(double(hd))), sums in fp32 in ascending index order:
//   forward, row i:   s_j = (sum_d q_i[d] k_j[d]) * scale for j <= i (the fp32 product
//                     rounded, then times fp32 scale: the twin's (q @ k^T) * scale);
//                     mx = max_j s_j; e_j = expf(s_j - mx); sum = sum_j e_j (j order);
//                     att_ij = e_j / sum; att_ij = 0 for j > i;
//                     out_i[d] = sum_{j <= i} att_ij v_j[d] (j order), rounded once.
//   backward, row i:  datt_ij = sum_d dout_i[d] v_j[d]; r_i = sum_{j <= i} datt_ij att_ij;
//                     dS_ij = (att_ij * (datt_ij - r_i)) * scale (j <= i, else 0);
//                     dq_i[d] = sum_{j <= i} dS_ij k_j[d] (j order);
//                     dk_j[d] = sum_{i >= j} dS_ij q_i[d] (i order);
//                     dv_j[d] = sum_{i >= j} att_ij dout_i[d] (i order); rounded once.
#include <omp.h>

#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Scratch floats per thread: q, k, v, dout, dq, dk, dv (T x hd each) and one row of T.
int64_t attention_ws_floats(int64_t T, int64_t hd) { return 7 * T * hd + T; }

float attention_scale(int64_t hd) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
}

// Copies head h of batch b's block `which` (0 q, 1 k, 2 v) of qkv (B, T, 3C) into dst (T, hd).
template <class S>
void load_head(const S* qkv, int64_t b, int64_t h, int which, int64_t T, int64_t C, int64_t hd,
               float* dst) {
  for (int64_t t = 0; t < T; ++t) {
    const S* src = qkv + (b * T + t) * 3 * C + which * C + h * hd;
    for (int64_t d = 0; d < hd; ++d) dst[t * hd + d] = load_f32(src[d]);
  }
}

template <class S>
void attention_forward_impl(int threads, const S* qkv, S* out, float* att_all, int64_t B,
                            int64_t T, int64_t C, int64_t nh, float* ws) {
  const int64_t hd = C / nh;
  const float scale = attention_scale(hd);
  const int64_t per_thread = attention_ws_floats(T, hd);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bh = 0; bh < B * nh; ++bh) {
    const int64_t b = bh / nh, h = bh % nh;
    float* q = ws + static_cast<int64_t>(omp_get_thread_num()) * per_thread;
    float* k = q + T * hd;
    float* v = k + T * hd;
    float* o = v + T * hd;
    load_head(qkv, b, h, 0, T, C, hd, q);
    load_head(qkv, b, h, 1, T, C, hd, k);
    load_head(qkv, b, h, 2, T, C, hd, v);
    float* att = att_all + bh * T * T;
    for (int64_t i = 0; i < T; ++i) {
      float* a = att + i * T;
      const float* qi = q + i * hd;
      float mx = -INFINITY;
      for (int64_t j = 0; j <= i; ++j) {
        const float* kj = k + j * hd;
        float s = 0.0f;
        for (int64_t d = 0; d < hd; ++d) s += qi[d] * kj[d];
        s *= scale;
        a[j] = s;
        mx = s > mx ? s : mx;
      }
      float sum = 0.0f;
      for (int64_t j = 0; j <= i; ++j) {
        a[j] = expf(a[j] - mx);
        sum += a[j];
      }
      for (int64_t j = 0; j <= i; ++j) a[j] /= sum;
      for (int64_t j = i + 1; j < T; ++j) a[j] = 0.0f;
      float* oi = o + i * hd;
      for (int64_t d = 0; d < hd; ++d) oi[d] = 0.0f;
      for (int64_t j = 0; j <= i; ++j) {
        const float* vj = v + j * hd;
        for (int64_t d = 0; d < hd; ++d) oi[d] += a[j] * vj[d];
      }
      S* dst = out + (b * T + i) * C + h * hd;
      for (int64_t d = 0; d < hd; ++d) store_f32(dst[d], oi[d]);
    }
  }
}

template <class S>
void attention_backward_impl(int threads, const S* dout, const S* qkv, const float* att_all,
                             S* dqkv, int64_t B, int64_t T, int64_t C, int64_t nh, float* ws) {
  const int64_t hd = C / nh;
  const float scale = attention_scale(hd);
  const int64_t per_thread = attention_ws_floats(T, hd);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bh = 0; bh < B * nh; ++bh) {
    const int64_t b = bh / nh, h = bh % nh;
    float* q = ws + static_cast<int64_t>(omp_get_thread_num()) * per_thread;
    float* k = q + T * hd;
    float* v = k + T * hd;
    float* go = v + T * hd;
    float* dq = go + T * hd;
    float* dk = dq + T * hd;
    float* dv = dk + T * hd;
    float* ds = dv + T * hd;  // one row of dS
    load_head(qkv, b, h, 0, T, C, hd, q);
    load_head(qkv, b, h, 1, T, C, hd, k);
    load_head(qkv, b, h, 2, T, C, hd, v);
    for (int64_t t = 0; t < T; ++t) {
      const S* src = dout + (b * T + t) * C + h * hd;
      for (int64_t d = 0; d < hd; ++d) go[t * hd + d] = load_f32(src[d]);
    }
    for (int64_t e = 0; e < 3 * T * hd; ++e) dq[e] = 0.0f;  // dq, dk, dv
    const float* att = att_all + bh * T * T;
    for (int64_t i = 0; i < T; ++i) {
      const float* a = att + i * T;
      const float* goi = go + i * hd;
      const float* qi = q + i * hd;
      float r = 0.0f;
      for (int64_t j = 0; j <= i; ++j) {
        const float* vj = v + j * hd;
        float s = 0.0f;
        for (int64_t d = 0; d < hd; ++d) s += goi[d] * vj[d];
        ds[j] = s;  // datt_ij for now
        r += s * a[j];
      }
      for (int64_t j = 0; j <= i; ++j) ds[j] = (a[j] * (ds[j] - r)) * scale;
      float* dqi = dq + i * hd;
      for (int64_t j = 0; j <= i; ++j) {
        const float* kj = k + j * hd;
        float* dkj = dk + j * hd;
        float* dvj = dv + j * hd;
        for (int64_t d = 0; d < hd; ++d) {
          dqi[d] += ds[j] * kj[d];
          dkj[d] += ds[j] * qi[d];
          dvj[d] += a[j] * goi[d];
        }
      }
    }
    for (int64_t t = 0; t < T; ++t) {
      S* dst = dqkv + (b * T + t) * 3 * C + h * hd;
      for (int64_t d = 0; d < hd; ++d) {
        store_f32(dst[d], dq[t * hd + d]);
        store_f32(dst[C + d], dk[t * hd + d]);
        store_f32(dst[2 * C + d], dv[t * hd + d]);
      }
    }
  }
}

}  // namespace

size_t CpuOps::attention_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh,
                                         DType /*dtype*/) const {
  (void)B;
  return static_cast<size_t>(threads_ * attention_ws_floats(T, C / nh)) * sizeof(float);
}

void CpuOps::attention_forward(ConstView qkv, View out, float* att, int64_t B, int64_t T,
                               int64_t C, int64_t nh, void* workspace) {
  const char* op = "attention_forward";
  expect_elems(op, B * T * 3 * C, {qkv});
  expect_elems(op, B * T * C, {out});
  dispatch_float(op, {qkv, out}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    attention_forward_impl(threads_, qkv.as<S>(), out.as<S>(), att, B, T, C, nh,
                           static_cast<float*>(workspace));
  });
}

void CpuOps::attention_backward(ConstView dout, ConstView qkv, const float* att, View dqkv,
                                int64_t B, int64_t T, int64_t C, int64_t nh, void* workspace) {
  const char* op = "attention_backward";
  expect_elems(op, B * T * C, {dout});
  expect_elems(op, B * T * 3 * C, {qkv, dqkv});
  dispatch_float(op, {dout, qkv, dqkv}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    attention_backward_impl(threads_, dout.as<S>(), qkv.as<S>(), att, dqkv.as<S>(), B, T, C,
                            nh, static_cast<float*>(workspace));
  });
}

}  // namespace noeira
