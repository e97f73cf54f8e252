// CpuOps' self-attention core, causal or not (contract: kernels/ops.h). Per (batch, head)
// pair the two big products of each pass are GEMMs (oneDNN matmul, fp32), with a fused
// (masked) softmax between them. OpenMP spreads the (b, h) pairs; one thread computes a whole pair
// in a fixed order, so 1 and N threads agree bit for bit.
//
// Per thread, the workspace holds the pair's q, k, v (and dout) copied to contiguous fp32
// (T x hd each: bf16 storage is read once, and fp32 and bf16 views run the very same
// GEMMs, so bf16 results are fp32 results on the rounded inputs, rounded once on store),
// the pair's dq, dk, dv and one T x T matrix for backward, and the oneDNN scratchpad.
//
// The GEMMs (DESIGN.md rule 3): one oneDNN matmul primitive per product and shape, created
// single-threaded (onednn::OneThread) outside any parallel region and cached for the
// process, with per-thread memory objects whose data handles are set per call (a Plan per
// (threads, T, hd, causal); attention_workspace_bytes makes it, so a model's plan creates
// everything before the first step and the passes allocate nothing). Each runs
// single-threaded inside the parallel region, each thread with its own stream and its own
// scratchpad (user scratchpad mode, in the workspace). A primitive's reduction order
// depends on its shape only, never on the thread that runs it or how many run. One caller
// at a time per Plan (its streams and memory objects are shared), as for OnednnGemm.
//
// Row blocking for causality: rows i of S = q k^T are cut into fixed blocks of kRowBlock;
// block [i0, i1) needs keys j < i1 only, so each block is its own GEMM over the first i1
// columns (likewise for att v, dout v^T, dS k), and dV, dK, whose rows j take sums over
// i >= j, start their sums at the block's first row. The cuts depend on T only. Without
// the mask (causal = false) every block spans all T keys and dV, dK sum over every row.
//
// What is computed (hd = C / nh, scale = float(1 / sqrt(double(hd))), fp32 throughout,
// GEMM sums in oneDNN's order for the shape; "lanes": kLanes interleaved partial results
// combined in lane order, see row_max):
//   forward:   S = (q k^T) * scale (oneDNN's output scale on the fp32 dot product: the
//              twin's (q @ k^T) * scale), then per row i, fused:
//              mx = max_{j<n_i} S_ij (lanes; max is exact in any order), n_i = i + 1
//              when causal, else T; e_j = expf(S_ij - mx); sum = sum_{j<n_i} e_j (j order);
//              att_ij = e_j / sum; att_ij = 0 for j >= n_i;  out = att v, rounded once.
//   backward:  dv = att^T dout; datt = dout v^T; r_i = sum_{j<n_i} datt_ij att_ij (lanes);
//              dS_ij = (att_ij * (datt_ij - r_i)) * scale for j < n_i, else 0;
//              dq = dS k; dk = dS^T q; each rounded once.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/onednn_engine.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

// Rows of S per causal block (fixed, so results never depend on the thread count).
constexpr int64_t kRowBlock = 64;

float attention_scale(int64_t hd) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
}

// ---- GEMM primitives ----

// A (rows x cols) matrix stored row-major with leading dimension ld, or its transpose.
dnnl::memory::desc matrix(int64_t rows, int64_t cols, int64_t ld, bool transposed) {
  return transposed ? dnnl::memory::desc(dims{rows, cols}, dt::f32, dims{1, ld})
                    : dnnl::memory::desc(dims{rows, cols}, dt::f32, dims{ld, 1});
}

// Row-major C(M,N) = alpha op(A)(M,K) op(B)(K,N), C not read.
struct Gemm {
  dnnl::memory::desc a, b, c, scratch;
  dnnl::matmul primitive;
};

// One thread's execution arguments for one Gemm: memory objects made once, their data
// handles set per call (no allocation per call).
struct Exec {
  dnnl::memory a, b, c, scratch;
  std::unordered_map<int, dnnl::memory> args;
};

// A Gemm of a plan with an Exec per thread.
struct Slot {
  const Gemm* gemm = nullptr;
  std::vector<Exec> exec;  // [thread]
};

// Every product of one (b, h) pair for sequence length T and head size hd: index [blk] is
// the row block blk (rows [blk * kRowBlock, min(T, (blk + 1) * kRowBlock))), which sees
// keys [0, key_end(blk)); key block blk's dV, dK sum rows [grad_begin(blk), T).
struct Plan {
  int64_t T = 0, hd = 0, blocks = 0;
  bool causal = true;
  std::vector<Slot> s;    // S[rows, :i1] = scale q[rows] k[:i1]^T
  std::vector<Slot> o;    // out[rows] = att[rows, :i1] v[:i1]
  std::vector<Slot> da;   // datt[rows, :i1] = dout[rows] v[:i1]^T
  std::vector<Slot> dq;   // dq[rows] = dS[rows, :i1] k[:i1]
  std::vector<Slot> dk;   // dk[rows] = dS[i0:, rows]^T q[i0:]
  std::vector<Slot> dv;   // dv[rows] = att[i0:, rows]^T dout[i0:]  (dk's shape)
  size_t scratch_bytes = 0;            // the largest scratchpad, aligned
  std::vector<dnnl::stream*> streams;  // one per thread
};

struct GemmCache {
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float>;
  std::mutex mu;
  std::map<Key, std::unique_ptr<Gemm>> gemms;  // entries stay put
  std::vector<std::unique_ptr<dnnl::stream>> streams;
  std::map<std::tuple<int, int64_t, int64_t, bool>, std::unique_ptr<Plan>>
      plans;  // threads, T, hd, causal
};

GemmCache& gemm_cache() {
  static GemmCache* cache = new GemmCache;  // never destroyed: outlives every CpuOps
  return *cache;
}

// Callers hold the cache's mutex.
const Gemm& gemm_of(GemmCache& cache, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                    int64_t lda, int64_t ldb, int64_t ldc, float alpha) {
  const GemmCache::Key key{ta, tb, M, N, K, lda, ldb, ldc, alpha};
  auto it = cache.gemms.find(key);
  if (it != cache.gemms.end()) return *it->second;
  onednn::OneThread one;
  auto g = std::make_unique<Gemm>();
  g->a = matrix(M, K, lda, ta);
  g->b = matrix(K, N, ldb, tb);
  g->c = matrix(M, N, ldc, false);
  dnnl::primitive_attr attr = onednn::user_scratchpad_attr();
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(g->a, g->b, g->c), attr,
                                        onednn::cpu_engine());
  g->scratch = pd.scratchpad_desc();
  g->primitive = dnnl::matmul(pd);
  return *cache.gemms.emplace(key, std::move(g)).first->second;
}

int64_t block_begin(int64_t blk) { return blk * kRowBlock; }
int64_t block_end(int64_t blk, int64_t T) { return std::min(T, (blk + 1) * kRowBlock); }
int64_t key_end(const Plan& p, int64_t blk) { return p.causal ? block_end(blk, p.T) : p.T; }
int64_t grad_begin(const Plan& p, int64_t blk) { return p.causal ? block_begin(blk) : 0; }
// Keys row i attends to: [0, visible(i)).
int64_t visible(const Plan& p, int64_t i) { return p.causal ? i + 1 : p.T; }

// The plan for (threads, T, hd, causal): created the first time with every primitive, memory
// object and stream for `threads`, then looked up. Outside parallel regions only. One
// caller at a time (streams and memory objects are shared). A oneDNN failure stops the
// process.
const Plan& plan_of(const char* op, int threads, int64_t T, int64_t hd, bool causal) {
  GemmCache& cache = gemm_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  const auto key = std::make_tuple(threads, T, hd, causal);
  if (auto it = cache.plans.find(key); it != cache.plans.end()) return *it->second;
  auto owned = std::make_unique<Plan>();
  Plan& p = *owned;
  p.T = T;
  p.hd = hd;
  p.causal = causal;
  p.blocks = (T + kRowBlock - 1) / kRowBlock;
  const float scale = attention_scale(hd);
  try {
    const dnnl::engine& engine = onednn::cpu_engine();
    const auto slot = [&](const Gemm& g) {
      Slot sl;
      sl.gemm = &g;
      for (int t = 0; t < threads; ++t) {
        Exec e;
        e.a = dnnl::memory(g.a, engine, DNNL_MEMORY_NONE);
        e.b = dnnl::memory(g.b, engine, DNNL_MEMORY_NONE);
        e.c = dnnl::memory(g.c, engine, DNNL_MEMORY_NONE);
        e.scratch = dnnl::memory(g.scratch, engine, DNNL_MEMORY_NONE);
        e.args = {{DNNL_ARG_SRC, e.a},
                  {DNNL_ARG_WEIGHTS, e.b},
                  {DNNL_ARG_DST, e.c},
                  {DNNL_ARG_SCRATCHPAD, e.scratch}};
        sl.exec.push_back(std::move(e));
      }
      return sl;
    };
    for (int64_t blk = 0; blk < p.blocks; ++blk) {
      const int64_t i0 = block_begin(blk), rows = block_end(blk, T) - i0;
      const int64_t keys = key_end(p, blk), g0 = grad_begin(p, blk);
      p.s.push_back(slot(gemm_of(cache, false, true, rows, keys, hd, hd, hd, T, scale)));
      p.o.push_back(slot(gemm_of(cache, false, false, rows, hd, keys, T, hd, hd, 1.0f)));
      p.da.push_back(slot(gemm_of(cache, false, true, rows, keys, hd, hd, hd, T, 1.0f)));
      p.dq.push_back(slot(gemm_of(cache, false, false, rows, hd, keys, T, hd, hd, 1.0f)));
      const Gemm& dkv = gemm_of(cache, true, false, rows, hd, T - g0, T, hd, hd, 1.0f);
      p.dk.push_back(slot(dkv));
      p.dv.push_back(slot(dkv));
    }
    while (static_cast<int>(cache.streams.size()) < threads)
      cache.streams.push_back(std::make_unique<dnnl::stream>(onednn::cpu_engine()));
    for (int t = 0; t < threads; ++t)
      p.streams.push_back(cache.streams[static_cast<size_t>(t)].get());
  } catch (const dnnl::error& e) {
    cpu_op_failed(op, make_error(std::string("oneDNN cannot create a matmul: ") + e.what()));
  }
  for (const auto* list : {&p.s, &p.o, &p.da, &p.dq, &p.dk})
    for (const Slot& sl : *list)
      p.scratch_bytes = std::max(p.scratch_bytes, sl.gemm->scratch.get_size());
  p.scratch_bytes = onednn::align_up(p.scratch_bytes);
  return *cache.plans.emplace(key, std::move(owned)).first->second;
}

// Runs slot's GEMM single-threaded on the calling thread (inside the parallel region).
void run(const Slot& slot, int thread, dnnl::stream& stream, void* scratch, const float* A,
         const float* B, float* C) {
  const Exec& e = slot.exec[static_cast<size_t>(thread)];
  e.a.set_data_handle(const_cast<float*>(A));
  e.b.set_data_handle(const_cast<float*>(B));
  e.c.set_data_handle(C);
  e.scratch.set_data_handle(scratch);
  onednn::OneThread one;
  slot.gemm->primitive.execute(stream, e.args);
  stream.wait();
}

// ---- Workspace ----

// Floats per thread before the scratchpad: q, k, v, dout (or out), dq, dk, dv (T x hd
// each) and one T x T matrix (backward's datt / dS).
int64_t thread_floats(int64_t T, int64_t hd) { return 7 * T * hd + T * T; }

size_t thread_bytes(const Plan& p) {
  return onednn::align_up(static_cast<size_t>(thread_floats(p.T, p.hd)) * sizeof(float)) +
         p.scratch_bytes;
}

// Thread t's slab: floats at the start, then its scratchpad.
struct Slab {
  float* f;
  void* scratch;
};

Slab slab_of(void* workspace, const Plan& p, int thread) {
  std::byte* base = onednn::align_up(workspace) + thread_bytes(p) * static_cast<size_t>(thread);
  return {reinterpret_cast<float*>(base),
          base + onednn::align_up(static_cast<size_t>(thread_floats(p.T, p.hd)) * sizeof(float))};
}

constexpr int64_t kPrefetchRows = 6;

// dst (rows, cols) contiguous fp32 from rows of src `ld` apart. Rows are far apart (3C
// floats: over a page for GPT sizes, so no hardware stream), so the rows a few ahead
// are prefetched.
template <class S>
void load_rows(const S* src, int64_t ld, int64_t rows, int64_t cols, float* dst) {
  constexpr int64_t line = 64 / static_cast<int64_t>(sizeof(S));
  for (int64_t t = 0; t < rows; ++t) {
    if (t + kPrefetchRows < rows)
      for (int64_t d = 0; d < cols; d += line)
        __builtin_prefetch(src + (t + kPrefetchRows) * ld + d);
    const S* row = src + t * ld;
    for (int64_t d = 0; d < cols; ++d) dst[t * cols + d] = load_f32(row[d]);
  }
}

// Rows of dst `ld` apart from src (rows, cols) contiguous fp32, rounded once (bf16).
template <class S>
void store_rows(const float* src, int64_t rows, int64_t cols, S* dst, int64_t ld) {
  constexpr int64_t line = 64 / static_cast<int64_t>(sizeof(S));
  for (int64_t t = 0; t < rows; ++t) {
    if (t + kPrefetchRows < rows)
      for (int64_t d = 0; d < cols; d += line)
        __builtin_prefetch(dst + (t + kPrefetchRows) * ld + d, 1);
    S* row = dst + t * ld;
    for (int64_t d = 0; d < cols; ++d) store_f32(row[d], src[t * cols + d]);
  }
}

// Copies head h of batch b's block `which` (0 q, 1 k, 2 v) of qkv (B, T, 3C) into dst (T, hd).
template <class S>
void load_head(const S* qkv, int64_t b, int64_t h, int which, int64_t T, int64_t C, int64_t hd,
               float* dst) {
  load_rows(qkv + b * T * 3 * C + which * C + h * hd, 3 * C, T, hd, dst);
}

// Fixed-order reductions over a row (j = 0..n-1): kLanes interleaved partial results
// (lane l takes j = l mod kLanes, in j order), then the lanes combined in lane order. The
// order depends on n only.
constexpr int64_t kLanes = 16;

float row_max(const float* a, int64_t n) {
  float m[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) m[l] = -INFINITY;
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) m[l] = a[j + l] > m[l] ? a[j + l] : m[l];
  for (int64_t l = 0; j < n; ++j, ++l) m[l] = a[j] > m[l] ? a[j] : m[l];
  float mx = m[0];
  for (int64_t l = 1; l < kLanes; ++l) mx = m[l] > mx ? m[l] : mx;
  return mx;
}

float row_dot(const float* x, const float* y, int64_t n) {
  float s[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) s[l] += x[j + l] * y[j + l];
  for (int64_t l = 0; j < n; ++j, ++l) s[l] += x[j] * y[j];
  float r = s[0];
  for (int64_t l = 1; l < kLanes; ++l) r += s[l];
  return r;
}

// ---- Passes ----

template <class S>
void attention_forward_impl(int threads, const Plan& p, const S* qkv, S* out, float* att_all,
                            int64_t B, int64_t C, int64_t nh, void* ws) {
  const int64_t T = p.T, hd = p.hd;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bh = 0; bh < B * nh; ++bh) {
    const int64_t b = bh / nh, h = bh % nh;
    const int thread = omp_get_thread_num();
    const Slab slab = slab_of(ws, p, thread);
    dnnl::stream& stream = *p.streams[static_cast<size_t>(thread)];
    float* q = slab.f;
    float* k = q + T * hd;
    float* v = k + T * hd;
    float* o = v + T * hd;
    load_head(qkv, b, h, 0, T, C, hd, q);
    load_head(qkv, b, h, 1, T, C, hd, k);
    load_head(qkv, b, h, 2, T, C, hd, v);
    float* att = att_all + bh * T * T;
    for (int64_t blk = 0; blk < p.blocks; ++blk) {
      const int64_t i0 = block_begin(blk), i1 = block_end(blk, T);
      const size_t bk = static_cast<size_t>(blk);
      run(p.s[bk], thread, stream, slab.scratch, q + i0 * hd, k, att + i0 * T);
      for (int64_t i = i0; i < i1; ++i) {
        float* a = att + i * T;
        const int64_t n = visible(p, i);
        const float mx = row_max(a, n);
        float sum = 0.0f;
        for (int64_t j = 0; j < n; ++j) {
          a[j] = expf(a[j] - mx);
          sum += a[j];
        }
        for (int64_t j = 0; j < n; ++j) a[j] /= sum;
        for (int64_t j = n; j < T; ++j) a[j] = 0.0f;
      }
      run(p.o[bk], thread, stream, slab.scratch, att + i0 * T, v, o + i0 * hd);
    }
    store_rows(o, T, hd, out + b * T * C + h * hd, C);
  }
}

template <class S>
void attention_backward_impl(int threads, const Plan& p, const S* dout, const S* qkv,
                             const float* att_all, S* dqkv, int64_t B, int64_t C, int64_t nh,
                             void* ws) {
  const int64_t T = p.T, hd = p.hd;
  const float scale = attention_scale(hd);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bh = 0; bh < B * nh; ++bh) {
    const int64_t b = bh / nh, h = bh % nh;
    const int thread = omp_get_thread_num();
    const Slab slab = slab_of(ws, p, thread);
    dnnl::stream& stream = *p.streams[static_cast<size_t>(thread)];
    float* q = slab.f;
    float* k = q + T * hd;
    float* v = k + T * hd;
    float* go = v + T * hd;
    float* dq = go + T * hd;
    float* dk = dq + T * hd;
    float* dv = dk + T * hd;
    float* ds = dv + T * hd;  // T x T: datt, then dS in place
    load_head(qkv, b, h, 0, T, C, hd, q);
    load_head(qkv, b, h, 1, T, C, hd, k);
    load_head(qkv, b, h, 2, T, C, hd, v);
    load_rows(dout + b * T * C + h * hd, C, T, hd, go);
    const float* att = att_all + bh * T * T;
    // datt and dS by row block, then dq for the block.
    for (int64_t blk = 0; blk < p.blocks; ++blk) {
      const int64_t i0 = block_begin(blk), i1 = block_end(blk, T);
      const size_t bk = static_cast<size_t>(blk);
      run(p.da[bk], thread, stream, slab.scratch, go + i0 * hd, v, ds + i0 * T);
      for (int64_t i = i0; i < i1; ++i) {
        const float* a = att + i * T;
        float* dsi = ds + i * T;
        const int64_t n = visible(p, i);
        const float r = row_dot(dsi, a, n);
        for (int64_t j = 0; j < n; ++j) dsi[j] = (a[j] * (dsi[j] - r)) * scale;
        for (int64_t j = n; j < T; ++j) dsi[j] = 0.0f;  // past the block's keys: read by dk's GEMMs
      }
      run(p.dq[bk], thread, stream, slab.scratch, ds + i0 * T, k, dq + i0 * hd);
    }
    // dv and dk by row block of keys j: sums over rows i >= grad_begin (the block's first
    // row when causal, as the rows above it do not see these keys; else every row).
    for (int64_t blk = 0; blk < p.blocks; ++blk) {
      const int64_t j0 = block_begin(blk), g0 = grad_begin(p, blk);
      const size_t bk = static_cast<size_t>(blk);
      run(p.dv[bk], thread, stream, slab.scratch, att + g0 * T + j0, go + g0 * hd, dv + j0 * hd);
      run(p.dk[bk], thread, stream, slab.scratch, ds + g0 * T + j0, q + g0 * hd, dk + j0 * hd);
    }
    S* dst = dqkv + b * T * 3 * C + h * hd;
    store_rows(dq, T, hd, dst, 3 * C);
    store_rows(dk, T, hd, dst + C, 3 * C);
    store_rows(dv, T, hd, dst + 2 * C, 3 * C);
  }
}

}  // namespace

size_t CpuOps::attention_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh,
                                         DType /*dtype*/) const {
  (void)B;
  if (T <= 0 || nh <= 0 || C <= 0 || C % nh != 0) return 0;
  // Creates the primitives now (plan time), so the first step allocates nothing for them.
  // Both masks' plans (a model may use either): the larger workspace serves both.
  const Plan& causal = plan_of("attention_workspace_bytes", threads_, T, C / nh, true);
  const Plan& full = plan_of("attention_workspace_bytes", threads_, T, C / nh, false);
  return std::max(thread_bytes(causal), thread_bytes(full)) * static_cast<size_t>(threads_) +
         onednn::kAlign;
}

void CpuOps::attention_forward(ConstView qkv, View out, float* att, int64_t B, int64_t T,
                               int64_t C, int64_t nh, bool causal, void* workspace) {
  const char* op = "attention_forward";
  expect_elems(op, B * T * 3 * C, {qkv});
  expect_elems(op, B * T * C, {out});
  if (B <= 0 || T <= 0) return;
  const Plan& p = plan_of(op, threads_, T, C / nh, causal);
  dispatch_float(op, {qkv, out}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    attention_forward_impl(threads_, p, qkv.as<S>(), out.as<S>(), att, B, C, nh, workspace);
  });
}

void CpuOps::attention_backward(ConstView dout, ConstView qkv, const float* att, View dqkv,
                                int64_t B, int64_t T, int64_t C, int64_t nh, bool causal,
                                void* workspace) {
  const char* op = "attention_backward";
  expect_elems(op, B * T * C, {dout});
  expect_elems(op, B * T * 3 * C, {qkv, dqkv});
  if (B <= 0 || T <= 0) return;
  const Plan& p = plan_of(op, threads_, T, C / nh, causal);
  dispatch_float(op, {dout, qkv, dqkv}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    attention_backward_impl(threads_, p, dout.as<S>(), qkv.as<S>(), att, dqkv.as<S>(), B, C,
                            nh, workspace);
  });
}

}  // namespace noeira
