// How far CUDA's bf16 tensor-core attention (kernels/cuda/attention_bf16.cu) may lie from
// the CPU's bf16 attention on the same bf16 inputs, element by element: the bound the host
// emulation (tests/unit/test_attention_bf16_emulation.cpp) and the [gpu] tests check.
//
// Both sides compute in fp32 from the same bf16 q, k, v, dout and round each output once
// (cpu = bf16(x), gpu = bf16(y)); the GPU's products read P = bf16(att') and dS =
// bf16(dS'), one relative rounding of at most u = 2^-8 each (bf16 keeps 8 significant
// bits; round to nearest even). att is the CPU's probabilities, att' the device's (both
// fp32; they differ by fp32 roundings and the two exp functions, and that difference is
// carried through exactly). fp32 sums of K terms are off by at most gamma_K = K v / (1 -
// K v), v = 2^-24, of their absolute sum on the CPU (any order, products rounded or
// fused) and, allowing the tensor cores' truncating sums (exact products; Fasi et al.
// 2021), 4 K v on the GPU; gamma below takes 5 K v / (1 - 5 K v), which bounds each side
// and their sum. dS's three roundings: gamma_3 = 3 v / (1 - 3 v). Per output element:
//   |gpu - cpu| <= u |x| + |x - y| + u |y|  <=  a |cpu| + (1 + u) E,  a = 2u / (1 - u),
// where E bounds |x - y|:
//   out_id = sum_j att_ij v_jd:  E = sum_j |att - att'| |v| + u sum_j |att'| |v|
//                                    + the two sides' fp32 sums (T terms);
//   dv_jd = sum_i att_ij dout_id: the same over i with dout;
//   dq_id = sum_j dS_ij k_jd, dk_jd = sum_i dS_ij q_id: E = sum |dS - dS'| |k| (|q|)
//           + u sum |dS'| |k| (|q|) + the fp32 sums, with |dS - dS'| carried from att -
//           att', datt's and r's fp32 sums (hd and T terms) and dS's three roundings.
// u sum_j |att'| |v_jd| (the rounding of P against the row's absolute sum) is the term
// that matters; the rest is fp32-sized. The worst single rounding flip gives |gpu - cpu|
// = 1 bf16 ulp <= 2u |x|, at most 2/3 of the bound since E >= u |x|.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace noeira::test::attention_bf16 {

inline constexpr double kU = 1.0 / 256.0;  // bf16's unit roundoff, 2^-8
inline constexpr double kF32 = 1.0 / 16777216.0;  // 2^-24

// The allowed |gpu - cpu| of every element of out (B, T, C) and dqkv (B, T, 3C).
struct Bounds {
  std::vector<double> out, dqkv;
};

// qkv (B, T, 3C) and dout (B, T, C): the bf16 inputs' values; att_cpu, att_dev (B, nh,
// T, T): the CPU's and the device's probabilities; out_cpu, dqkv_cpu: the CPU's outputs.
inline Bounds bounds(const std::vector<float>& qkv, const std::vector<float>& dout,
                     const std::vector<float>& att_cpu, const std::vector<float>& att_dev,
                     const std::vector<float>& out_cpu, const std::vector<float>& dqkv_cpu,
                     int64_t B, int64_t T, int64_t C, int64_t nh, bool causal) {
  const int64_t hd = C / nh;
  const double scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  const double a = 2.0 * kU / (1.0 - kU);
  // Both sides' fp32 sums of K terms, as a fraction of the absolute sum (the header).
  const auto gamma = [](int64_t K) {
    const double k = 5.0 * static_cast<double>(K) * kF32;
    return k / (1.0 - k);
  };
  const double gT = gamma(T), gH = gamma(hd);
  const double round3 = 3.0 * kF32 / (1.0 - 3.0 * kF32);  // dS: three fp32 roundings per side
  Bounds bd;
  bd.out.assign(out_cpu.size(), 0.0);
  bd.dqkv.assign(dqkv_cpu.size(), 0.0);
  const auto at = [&](int64_t b, int64_t t, int64_t part, int64_t h, int64_t d) {
    return static_cast<size_t>((b * T + t) * 3 * C + part * C + h * hd + d);
  };
  const auto go = [&](int64_t b, int64_t t, int64_t h, int64_t d) {
    return static_cast<size_t>((b * T + t) * C + h * hd + d);
  };
  const size_t TT = static_cast<size_t>(T * T);
  std::vector<double> D(TT), eD(TT), dsmag(TT), dds(TT), er(T), rr(T), mA(T);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < nh; ++h) {
      const float* A = att_cpu.data() + (b * nh + h) * T * T;
      const float* Ad = att_dev.data() + (b * nh + h) * T * T;
      // Forward: out_id.
      for (int64_t i = 0; i < T; ++i)
        for (int64_t d = 0; d < hd; ++d) {
          double s = 0, sa = 0, da = 0;
          for (int64_t j = 0; j < T; ++j) {
            const double v = std::abs(qkv[at(b, j, 2, h, d)]);
            s += std::abs(Ad[i * T + j]) * v;
            sa += std::abs(A[i * T + j]) * v;
            da += std::abs(double{A[i * T + j]} - Ad[i * T + j]) * v;
          }
          const double E = da + kU * s + gT * (sa + (1.0 + kU) * s);
          const size_t e = go(b, i, h, d);
          bd.out[e] = a * std::abs(out_cpu[e]) + (1.0 + kU) * E;
        }
      // datt (exact from the bf16 values) and each side's error bound eD.
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) {
          double s = 0, sa = 0;
          for (int64_t d = 0; d < hd; ++d) {
            const double p = double{dout[go(b, i, h, d)]} * qkv[at(b, j, 2, h, d)];
            s += p;
            sa += std::abs(p);
          }
          D[i * T + j] = s;
          eD[i * T + j] = gH * sa;
        }
      // r = sum_j datt_j att_j: the CPU's (from att) in double, |r_cpu - r_dev| <= er, and
      // mA bounds how far the CPU's r is from it.
      for (int64_t i = 0; i < T; ++i) {
        double r = 0, e = 0, m = 0;
        for (int64_t j = 0; j < T; ++j) {
          const size_t ij = static_cast<size_t>(i * T + j);
          const double dmax = std::abs(D[ij]) + eD[ij];
          const double aa = std::abs(A[ij]), ad = std::abs(Ad[ij]);
          r += D[ij] * A[ij];
          e += dmax * std::abs(double{A[ij]} - Ad[ij]) + (aa + ad) * eD[ij] + gT * dmax * (aa + ad);
          m += aa * eD[ij] + gT * dmax * aa;
        }
        rr[i] = r;
        er[i] = e;
        mA[i] = m;
      }
      // dS: |dS_cpu - dS_dev (before its bf16 rounding)| <= dds, |dS_dev| <= dsmag.
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) {
          const size_t ij = static_cast<size_t>(i * T + j);
          const double aa = std::abs(A[ij]), ad = std::abs(Ad[ij]);
          const double M = std::abs(D[ij] - rr[i]) + eD[ij] + mA[i];  // >= |datt - r|, CPU
          dds[ij] = scale * (std::abs(double{A[ij]} - Ad[ij]) * M + ad * (eD[ij] + er[i])) +
                    round3 * scale * (aa * M + ad * (M + eD[ij] + er[i]));
          dsmag[ij] = scale * ad * (M + eD[ij] + er[i]) * (1.0 + round3);
        }
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < hd; ++d) {
          // dv_td = sum_i att_it dout_id.
          double s = 0, sa = 0, da = 0;
          for (int64_t i = 0; i < T; ++i) {
            const double g = std::abs(dout[go(b, i, h, d)]);
            s += std::abs(Ad[i * T + t]) * g;
            sa += std::abs(A[i * T + t]) * g;
            da += std::abs(double{A[i * T + t]} - Ad[i * T + t]) * g;
          }
          const size_t ev = at(b, t, 2, h, d);
          bd.dqkv[ev] = a * std::abs(dqkv_cpu[ev]) +
                        (1.0 + kU) * (da + kU * s + gT * (sa + (1.0 + kU) * s));
          // dq_td = sum_j dS_tj k_jd; dk_td = sum_i dS_it q_id.
          double qs = 0, qd = 0, ks = 0, kd = 0;
          for (int64_t j = 0; j < T; ++j) {
            const double kk = std::abs(qkv[at(b, j, 1, h, d)]);
            qs += dsmag[t * T + j] * kk;
            qd += dds[t * T + j] * kk;
            const double qq = std::abs(qkv[at(b, j, 0, h, d)]);
            ks += dsmag[j * T + t] * qq;
            kd += dds[j * T + t] * qq;
          }
          // |dS_cpu| <= dsmag + dds: the CPU's sum; the device's reads bf16(dS_dev).
          const double Eq = qd + kU * qs + gT * ((qs + qd) + (1.0 + kU) * qs);
          const double Ek = kd + kU * ks + gT * ((ks + kd) + (1.0 + kU) * ks);
          const size_t eq = at(b, t, 0, h, d), ek = at(b, t, 1, h, d);
          bd.dqkv[eq] = a * std::abs(dqkv_cpu[eq]) + (1.0 + kU) * Eq;
          bd.dqkv[ek] = a * std::abs(dqkv_cpu[ek]) + (1.0 + kU) * Ek;
        }
      (void)causal;  // masked entries are 0 in both att's: they add nothing above
    }
  return bd;
}

// The largest |got - want| / bound over the elements (<= 1: within the bound), and where.
struct Worst {
  double ratio = 0.0;
  size_t at = 0;
};
inline Worst worst(const std::vector<float>& got, const std::vector<float>& want,
                   const std::vector<double>& bound) {
  Worst w;
  for (size_t e = 0; e < got.size(); ++e) {
    const double d = std::abs(double{got[e]} - want[e]);
    const double r = d == 0.0 ? 0.0 : bound[e] > 0.0 ? d / bound[e] : INFINITY;
    if (r > w.ratio || std::isnan(d)) {
      w.ratio = std::isnan(d) ? INFINITY : r;
      w.at = e;
    }
  }
  return w;
}

}  // namespace noeira::test::attention_bf16
