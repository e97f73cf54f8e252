// CpuOps' sequence ops (embedding, LayerNorm, attention) against naive double-precision
// loops, bf16 storage against fp32, and 1 vs 2 threads bit for bit. The optimizer-side ops:
// test_cpu_optimizer_ops.cpp.
#include <algorithm>
#include <utility>

#include "kernels/common/math.h"
#include "tests/support/attention_reference.h"
#include "tests/support/image_reference.h"

using namespace noeira;
using namespace noeira::test::image_ref;
using namespace noeira::test::attention_ref;

namespace {

using Dvec = std::vector<double>;

// ---- Embedding ----

struct EmbOut {
  Vec y, dwte, dwpe;
};

template <class T>
EmbOut run_embedding(int threads, const std::vector<int32_t>& ids, const Vec& wte, const Vec& wpe,
                     const Vec& dy, int64_t T_, int64_t C, int64_t V, bool with_dwpe) {
  CpuOps ops(threads);
  const int64_t rows = static_cast<int64_t>(ids.size());
  std::vector<T> y(static_cast<size_t>(rows * C));
  ops.embedding_forward(ids.data(), wte.data(), wpe.data(), View(y.data(), rows * C), rows, T_,
                        C);
  std::vector<T> dyt(dy.size());
  for (size_t i = 0; i < dy.size(); ++i) store_f32(dyt[i], dy[i]);
  EmbOut o;
  o.dwte = random_vec(V * C, 5);  // accumulated into
  o.dwpe = random_vec(T_ * C, 6);
  std::vector<char> ws(ops.embedding_workspace_bytes(rows, V, C));
  ops.embedding_backward(ids.data(), ConstView(dyt.data(), rows * C), o.dwte.data(),
                         with_dwpe ? o.dwpe.data() : nullptr, rows, T_, C, V, ws.data());
  for (const T& v : y) o.y.push_back(load_f32(v));
  return o;
}

}  // namespace

TEST_CASE("embedding: token plus position forward; backward sums repeated ids in row order",
          "[seq-ops]") {
  const int64_t B = 3, T_ = 4, C = 7, V = 6, rows = B * T_;
  const std::vector<int32_t> ids = {2, 0, 2, 5, 5, 5, 1, 2, 0, 2, 2, 5};  // 3, 4 unused
  const Vec wte = random_vec(V * C, 1), wpe = random_vec(T_ * C, 2), dy = random_vec(rows * C, 3);
  const EmbOut o = run_embedding<float>(2, ids, wte, wpe, dy, T_, C, V, true);
  Vec y_ref(static_cast<size_t>(rows * C));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < C; ++c)
      y_ref[i * C + c] = wte[ids[i] * C + c] + wpe[(i % T_) * C + c];
  CHECK(same_bits(o.y, y_ref));
  // Backward: the contract's order in fp32 (bit for bit) and a double reference.
  Vec dwte_ref = random_vec(V * C, 5), dwpe_ref = random_vec(T_ * C, 6);
  const Vec dwte0 = dwte_ref, dwpe0 = dwpe_ref;
  Dvec dwte_d(dwte0.begin(), dwte0.end());
  for (int64_t v = 0; v < V; ++v)
    for (int64_t c = 0; c < C; ++c) {
      float s = 0.0f;
      for (int64_t i = 0; i < rows; ++i)
        if (ids[i] == v) s += dy[i * C + c], dwte_d[v * C + c] += dy[i * C + c];
      dwte_ref[v * C + c] += s;
    }
  for (int64_t t = 0; t < T_; ++t)
    for (int64_t c = 0; c < C; ++c) {
      float s = 0.0f;
      for (int64_t b = 0; b < B; ++b) s += dy[(b * T_ + t) * C + c];
      dwpe_ref[t * C + c] += s;
    }
  CHECK(same_bits(o.dwte, dwte_ref));
  CHECK(same_bits(o.dwpe, dwpe_ref));
  CHECK(rel_error(o.dwte, dwte_d) < 1e-6);
  // Unused tokens untouched; dwpe may be null.
  for (int64_t c = 0; c < C; ++c) CHECK(o.dwte[3 * C + c] == dwte0[3 * C + c]);
  const EmbOut no_pos = run_embedding<float>(2, ids, wte, wpe, dy, T_, C, V, false);
  CHECK(same_bits(no_pos.dwte, dwte_ref));
  CHECK(same_bits(no_pos.dwpe, dwpe0));
  // 1 vs 2 threads; bf16: y rounded once, dy read as its bf16 values.
  const EmbOut one = run_embedding<float>(1, ids, wte, wpe, dy, T_, C, V, true);
  CHECK(same_bits(one.y, o.y));
  CHECK(same_bits(one.dwte, o.dwte));
  CHECK(same_bits(one.dwpe, o.dwpe));
  const EmbOut bf = run_embedding<bf16_t>(2, ids, wte, wpe, dy, T_, C, V, true);
  const EmbOut f_rounded = run_embedding<float>(2, ids, wte, wpe, rounded(dy), T_, C, V, true);
  CHECK(same_bits(bf.y, rounded(o.y)));
  CHECK(same_bits(bf.dwte, f_rounded.dwte));
  CHECK(same_bits(bf.dwpe, f_rounded.dwpe));
  const EmbOut bf1 = run_embedding<bf16_t>(1, ids, wte, wpe, dy, T_, C, V, true);
  CHECK(same_bits(bf1.dwte, bf.dwte));
}

// ---- LayerNorm ----

namespace {

struct LnOut {
  Vec y, mean, rstd, dx, dgamma, dbeta;
};

template <class T>
LnOut run_layernorm(int threads, const Vec& x, const Vec& gamma, const Vec* beta, const Vec& dy,
                    int64_t N, int64_t C, bool want_dx) {
  CpuOps ops(threads);
  auto cast = [](const Vec& v) {
    std::vector<T> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) store_f32(out[i], v[i]);
    return out;
  };
  const std::vector<T> xt = cast(x), dyt = cast(dy);
  std::vector<T> y(x.size()), dx(x.size());
  LnOut o;
  o.mean.assign(static_cast<size_t>(N), 0.0f);
  o.rstd.assign(static_cast<size_t>(N), 0.0f);
  o.dgamma = random_vec(C, 11);
  o.dbeta = random_vec(C, 12);
  ops.layernorm_forward(ConstView(xt.data(), N * C), gamma.data(),
                        beta ? beta->data() : nullptr, View(y.data(), N * C), o.mean.data(),
                        o.rstd.data(), N, C, 1e-5f);
  std::vector<char> ws(ops.layernorm_workspace_bytes(N, C));
  ops.layernorm_backward(ConstView(dyt.data(), N * C), ConstView(xt.data(), N * C), gamma.data(),
                         o.mean.data(), o.rstd.data(),
                         want_dx ? View(dx.data(), N * C) : View(), ConstView(), o.dgamma.data(),
                         beta ? o.dbeta.data() : nullptr, N, C, ws.data());
  for (const T& v : y) o.y.push_back(load_f32(v));
  if (want_dx)
    for (const T& v : dx) o.dx.push_back(load_f32(v));
  return o;
}

}  // namespace

TEST_CASE("layernorm: forward and backward against double; no beta; no dx; bf16; threads",
          "[seq-ops]") {
  // C = 100: two column blocks of the parameter gradients, the second partial. N = 70: three
  // row chunks of their partial sums, the last partial.
  for (const auto& [N, C] : {std::pair<int64_t, int64_t>{7, 37}, {5, 100}, {70, 37}})
  for (bool with_beta : {true, false}) {
    INFO("N " << N << " C " << C << " beta " << with_beta);
    const Vec x = random_vec(N * C, 21, -2.0f, 3.0f), gamma = random_vec(C, 22, 0.5f, 1.5f),
              beta = random_vec(C, 23), dy = random_vec(N * C, 24);
    const LnOut o = run_layernorm<float>(2, x, gamma, with_beta ? &beta : nullptr, dy, N, C, true);
    Dvec y_ref(x.size()), dx_ref(x.size());
    const Vec dg0 = random_vec(C, 11), db0 = random_vec(C, 12);  // run_layernorm's start
    Dvec dg_ref(dg0.begin(), dg0.end()), db_ref(db0.begin(), db0.end());
    for (int64_t r = 0; r < N; ++r) {
      double mean = 0.0, var = 0.0;
      for (int64_t c = 0; c < C; ++c) mean += x[r * C + c];
      mean /= C;
      for (int64_t c = 0; c < C; ++c) var += (x[r * C + c] - mean) * (x[r * C + c] - mean);
      var /= C;
      const double rstd = 1.0 / std::sqrt(var + 1e-5);
      CHECK(o.mean[r] == Approx(mean).margin(1e-6));
      CHECK(o.rstd[r] == Approx(rstd).epsilon(1e-6));
      double mg = 0.0, mgx = 0.0;
      for (int64_t c = 0; c < C; ++c) {
        const double xh = (x[r * C + c] - mean) * rstd;
        y_ref[r * C + c] = xh * gamma[c] + (with_beta ? beta[c] : 0.0);
        mg += dy[r * C + c] * gamma[c];
        mgx += dy[r * C + c] * gamma[c] * xh;
        dg_ref[c] += dy[r * C + c] * xh;
        db_ref[c] += dy[r * C + c];
      }
      mg /= C, mgx /= C;
      for (int64_t c = 0; c < C; ++c) {
        const double xh = (x[r * C + c] - mean) * rstd;
        dx_ref[r * C + c] = rstd * (dy[r * C + c] * gamma[c] - mg - xh * mgx);
      }
    }
    CHECK(rel_error(o.y, y_ref) < 1e-6);
    CHECK(rel_error(o.dx, dx_ref) < 1e-5);
    CHECK(rel_error(o.dgamma, dg_ref) < 1e-6);
    if (with_beta)
      CHECK(rel_error(o.dbeta, db_ref) < 1e-6);
    else
      CHECK(same_bits(o.dbeta, random_vec(C, 12)));  // untouched
    // dx empty: the parameter gradients alone, the same bits.
    const LnOut nodx =
        run_layernorm<float>(2, x, gamma, with_beta ? &beta : nullptr, dy, N, C, false);
    CHECK(same_bits(nodx.dgamma, o.dgamma));
    CHECK(same_bits(nodx.dbeta, o.dbeta));
    // 1 vs 2 threads.
    const LnOut one = run_layernorm<float>(1, x, gamma, with_beta ? &beta : nullptr, dy, N, C, true);
    CHECK(same_bits(one.y, o.y));
    CHECK(same_bits(one.dx, o.dx));
    CHECK(same_bits(one.dgamma, o.dgamma));
    CHECK(same_bits(one.dbeta, o.dbeta));
    // bf16 storage: close to fp32; threads bit for bit.
    const LnOut bf = run_layernorm<bf16_t>(2, x, gamma, with_beta ? &beta : nullptr, dy, N, C, true);
    CHECK(rel_error(bf.y, o.y) < 1e-2);
    CHECK(rel_error(bf.dx, o.dx) < 2e-2);
    CHECK(rel_error(bf.dgamma, o.dgamma) < 1e-2);
    const LnOut bf1 =
        run_layernorm<bf16_t>(1, x, gamma, with_beta ? &beta : nullptr, dy, N, C, true);
    CHECK(same_bits(bf1.y, bf.y));
    CHECK(same_bits(bf1.dx, bf.dx));
    CHECK(same_bits(bf1.dgamma, bf.dgamma));
  }
}

// The backward with a residual gradient against the backward then `add`, in storage T.
template <class T>
void check_layernorm_residual(int64_t N, int64_t C) {
  const auto cast = [](const Vec& v) {
    std::vector<T> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) store_f32(out[i], v[i]);
    return out;
  };
  const auto to_f32 = [](const std::vector<T>& v) {
    Vec out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = load_f32(v[i]);
    return out;
  };
  const std::vector<T> x = cast(random_vec(N * C, 41, -2.0f, 3.0f));
  const std::vector<T> dy = cast(random_vec(N * C, 42));
  std::vector<T> res = cast(random_vec(N * C, 43));
  res[1] = cast({INFINITY})[0];  // infinities and a NaN pass through as add's do
  res[2] = cast({-NAN})[0];
  res[static_cast<size_t>(N * C - 1)] = cast({-INFINITY})[0];
  const Vec gamma = random_vec(C, 44, 0.5f, 1.5f), beta = random_vec(C, 45);
  Vec mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
  std::vector<T> y(x.size());
  CpuOps one(1), two(2);
  two.layernorm_forward(ConstView(x.data(), N * C), gamma.data(), beta.data(),
                        View(y.data(), N * C), mean.data(), rstd.data(), N, C, 1e-5f);
  std::vector<char> ws(two.layernorm_workspace_bytes(N, C));
  const auto backward = [&](CpuOps& ops, const T* r, Vec& dg, Vec& db) {
    std::vector<T> dx(x.size());
    ops.layernorm_backward(ConstView(dy.data(), N * C), ConstView(x.data(), N * C), gamma.data(),
                           mean.data(), rstd.data(), View(dx.data(), N * C),
                           r ? ConstView(r, N * C) : ConstView(), dg.data(), db.data(), N, C,
                           ws.data());
    return dx;
  };
  Vec dg_apart(static_cast<size_t>(C)), db_apart(static_cast<size_t>(C));
  const std::vector<T> dh = backward(two, nullptr, dg_apart, db_apart);
  std::vector<T> apart(x.size());
  two.add(ConstView(res.data(), N * C), ConstView(dh.data(), N * C), View(apart.data(), N * C));
  Vec dg(static_cast<size_t>(C)), db(static_cast<size_t>(C));
  const std::vector<T> fused = backward(two, res.data(), dg, db);
  CHECK(same_bits(to_f32(fused), to_f32(apart)));
  CHECK(same_bits(dg, dg_apart));
  CHECK(same_bits(db, db_apart));
  Vec dg1(static_cast<size_t>(C)), db1(static_cast<size_t>(C));
  CHECK(same_bits(to_f32(backward(one, res.data(), dg1, db1)), to_f32(fused)));
}

TEST_CASE("layernorm: a residual gradient added in the backward's pass has the bits of the "
          "backward then add, fp32 and bf16, 1 and 2 threads", "[seq-ops]") {
  for (const auto& [N, C] : {std::pair<int64_t, int64_t>{70, 37}, {9, 128}}) {
    INFO("N " << N << " C " << C);
    check_layernorm_residual<float>(N, C);
    check_layernorm_residual<bf16_t>(N, C);
  }
}

// ---- Attention (tests/support/attention_reference.h) ----

TEST_CASE("attention: causal softmax forward and backward against double; bf16; threads",
          "[seq-ops]") {
  const int64_t B = 2, T_ = 5, C = 12, nh = 3;
  const Vec qkv = random_vec(B * T_ * 3 * C, 31, -2.0f, 2.0f), dout = random_vec(B * T_ * C, 32);
  const AttOut o = run_attention<float>(2, qkv, dout, B, T_, C, nh, true);
  const Dvec dout_d(dout.begin(), dout.end());
  const AttRef ref = attention_ref(Dvec(qkv.begin(), qkv.end()), &dout_d, B, T_, C, nh, true);
  CHECK(rel_error(o.out, ref.out) < 1e-6);
  CHECK(rel_error(o.att, ref.att) < 1e-6);
  CHECK(rel_error(o.dqkv, ref.dqkv) < 1e-5);
  for (int64_t bh = 0; bh < B * nh; ++bh)
    for (int64_t i = 0; i < T_; ++i)
      for (int64_t j = i + 1; j < T_; ++j) CHECK(o.att[(bh * T_ + i) * T_ + j] == 0.0f);

  // Causality: a change to token 3's q, k, v leaves the outputs of tokens 0..2 unchanged.
  Vec changed = qkv;
  for (int64_t k = 0; k < 3 * C; ++k) changed[(0 * T_ + 3) * 3 * C + k] += 0.5f;
  const AttOut c = run_attention<float>(2, changed, dout, B, T_, C, nh, true);
  CHECK(std::equal(c.out.begin(), c.out.begin() + 3 * C, o.out.begin()));
  CHECK_FALSE(std::equal(c.out.begin() + 3 * C, c.out.begin() + 4 * C, o.out.begin() + 3 * C));
  CHECK(std::equal(c.out.begin() + T_ * C, c.out.end(), o.out.begin() + T_ * C));  // batch 1

  // 1 vs 2 threads, fp32 and bf16; bf16 close to fp32 on the rounded inputs.
  const AttOut one = run_attention<float>(1, qkv, dout, B, T_, C, nh, true);
  CHECK(same_bits(one.out, o.out));
  CHECK(same_bits(one.att, o.att));
  CHECK(same_bits(one.dqkv, o.dqkv));
  const AttOut bf = run_attention<bf16_t>(2, qkv, dout, B, T_, C, nh, true);
  const AttOut fr = run_attention<float>(2, rounded(qkv), rounded(dout), B, T_, C, nh, true);
  CHECK(same_bits(bf.out, rounded(fr.out)));  // fp32 math, rounded once on store
  CHECK(same_bits(bf.att, fr.att));
  CHECK(same_bits(bf.dqkv, rounded(fr.dqkv)));
  CHECK(rel_error(bf.dqkv, o.dqkv) < 2e-2);
  const AttOut bf1 = run_attention<bf16_t>(1, qkv, dout, B, T_, C, nh, true);
  CHECK(same_bits(bf1.out, bf.out));
  CHECK(same_bits(bf1.dqkv, bf.dqkv));
}

TEST_CASE("attention: 1, 2 and 3 threads agree bit for bit on a T tail, fp32 and bf16",
          "[seq-ops]") {
  // T 37: no multiple of any block or vector width; 12 (b, h) pairs over 2 and 3 threads.
  // T 100: two causal row blocks (the second a tail). Each thread count groups the heads
  // of a batch into its own units (B 3, nh 4: two heads per unit for 1 and 2 threads, one
  // for 3; B 2, nh 5: units of 3 + 2 heads, 2 + 2 + 1, and 1): the bits stay.
  struct Shape {
    int64_t B, C, nh;
  };
  for (const auto& [T_, shape] : {std::pair{int64_t{37}, Shape{3, 48, 4}},
                                 std::pair{int64_t{100}, Shape{3, 48, 4}},
                                 std::pair{int64_t{37}, Shape{2, 40, 5}}}) {
    const auto [B, C, nh] = shape;
    INFO("T " << T_ << " B " << B << " nh " << nh);
    const Vec qkv = random_vec(B * T_ * 3 * C, 51, -2.0f, 2.0f);
    const Vec dout = random_vec(B * T_ * C, 52);
    const AttOut f1 = run_attention<float>(1, qkv, dout, B, T_, C, nh, true);
    const AttOut b1 = run_attention<bf16_t>(1, qkv, dout, B, T_, C, nh, true);
    const Dvec dout_d(dout.begin(), dout.end());
    const AttRef ref = attention_ref(Dvec(qkv.begin(), qkv.end()), &dout_d, B, T_, C, nh, true);
    CHECK(rel_error(f1.out, ref.out) < 1e-5);
    CHECK(rel_error(f1.att, ref.att) < 1e-5);
    CHECK(rel_error(f1.dqkv, ref.dqkv) < 1e-4);
    bool masked_zero = true;
    for (int64_t r = 0; r < B * nh * T_; ++r)
      for (int64_t j = r % T_ + 1; j < T_; ++j) masked_zero &= f1.att[r * T_ + j] == 0.0f;
    CHECK(masked_zero);
    for (const int threads : {2, 3}) {
      INFO("threads " << threads);
      const AttOut f = run_attention<float>(threads, qkv, dout, B, T_, C, nh, true);
      CHECK(same_bits(f.out, f1.out));
      CHECK(same_bits(f.att, f1.att));
      CHECK(same_bits(f.dqkv, f1.dqkv));
      const AttOut b = run_attention<bf16_t>(threads, qkv, dout, B, T_, C, nh, true);
      CHECK(same_bits(b.out, b1.out));
      CHECK(same_bits(b.att, b1.att));
      CHECK(same_bits(b.dqkv, b1.dqkv));
    }
  }
}

TEST_CASE("attention: the CPU saves the (B, nh, T, T) probabilities, fp32 and bf16",
          "[seq-ops]") {
  const CpuOps ops(1);
  CHECK(ops.attention_saved_floats(2, 5, 3, DType::kF32) == 2 * 3 * 5 * 5);
  CHECK(ops.attention_saved_floats(2, 5, 3, DType::kBF16) == 2 * 3 * 5 * 5);
}

TEST_CASE("attention: backward matches finite differences of a scalar loss", "[seq-ops]") {
  const int64_t B = 1, T_ = 3, C = 4, nh = 2;
  const Vec qkv = random_vec(B * T_ * 3 * C, 41), w = random_vec(B * T_ * C, 42);
  // loss = sum(out * w): dout = w.
  const AttOut o = run_attention<float>(1, qkv, w, B, T_, C, nh, true);
  auto loss = [&](const Dvec& x) {
    const AttRef r = attention_ref(x, nullptr, B, T_, C, nh, true);
    double s = 0.0;
    for (size_t i = 0; i < r.out.size(); ++i) s += r.out[i] * w[i];
    return s;
  };
  const Dvec x0(qkv.begin(), qkv.end());
  Dvec fd(x0.size());
  for (size_t i = 0; i < x0.size(); ++i) {
    Dvec xp = x0, xm = x0;
    xp[i] += 1e-6, xm[i] -= 1e-6;
    fd[i] = (loss(xp) - loss(xm)) / 2e-6;
  }
  CHECK(rel_error(o.dqkv, fd) < 1e-5);
}
