// The embedding backward's token-sum order (kernels/common/embedding_sum.h) on the host:
// CpuOps follows the host rendering bit for bit (a token with thousands of rows, ragged
// chunks, bad ids, fp32 and bf16, 1 and 2 threads); and an emulation of the CUDA backward
// (kernels/cuda/embedding.cu: keys kernel, stable sort, pass 1 and pass 2 over every
// (block, thread) of their grids, in reverse order) gives the CPU's bits, while its slot
// map gives every chunk of a longer token its own slot.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "kernels/common/embedding_sum.h"
#include "kernels/cpu/cpu_ops.h"

using namespace noeira;

namespace {

using Vec = std::vector<float>;
constexpr int64_t K = kEmbChunkRows;

Vec random_floats(int64_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Vec v(static_cast<size_t>(n));
  for (float& x : v) x = u(g);
  return v;
}

bool same_bits(const Vec& a, const Vec& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
           return f32_bits(x) == f32_bits(y);
         });
}

// `big` rows of token 0 among `rows`, the rest drawn from [1, V) except a few bad ids.
std::vector<int32_t> skewed_ids(int64_t rows, int64_t big, int64_t V, bool bad, uint32_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(rows));
  std::mt19937 g(seed);
  std::uniform_int_distribution<int32_t> u(1, static_cast<int32_t>(V) - 1);
  for (int32_t& id : ids) id = u(g);
  std::fill(ids.begin(), ids.begin() + big, 0);
  std::shuffle(ids.begin(), ids.end(), g);
  if (bad) {
    ids[3] = -1;
    ids[static_cast<size_t>(rows / 2)] = static_cast<int32_t>(V);
    ids[static_cast<size_t>(rows - 1)] = -7;
  }
  return ids;
}

template <class T>
std::vector<T> stored(const Vec& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) store_f32(out[i], v[i]);
  return out;
}

template <class T>
Vec cpu_dwte(int threads, const std::vector<int32_t>& ids, const Vec& dy, const Vec& dwte0,
             int64_t C, int64_t V) {
  CpuOps ops(threads);
  const int64_t rows = static_cast<int64_t>(ids.size());
  const std::vector<T> dyt = stored<T>(dy);
  Vec dwte = dwte0;
  std::vector<char> ws(ops.embedding_workspace_bytes(rows, V, C));
  ops.embedding_backward(ids.data(), ConstView(dyt.data(), rows * C), dwte.data(), nullptr,
                         rows, 1, C, V, ws.data());
  return dwte;
}

template <class T>
Vec rendered_dwte(const std::vector<int32_t>& ids, const Vec& dy, const Vec& dwte0, int64_t C,
                  int64_t V) {
  const std::vector<T> dyt = stored<T>(dy);
  Vec dwte = dwte0;
  embedding_token_sums_in_order(ids.data(), dyt.data(), dwte.data(),
                                static_cast<int64_t>(ids.size()), C, V);
  return dwte;
}

// The CUDA backward's dwte, replayed: embedding_keys_kernel (bad id -> V), cub's stable
// radix sort of (key, row), then both passes on grid (emb_windows(rows), emb_col_tiles(C))
// of kEmbCols threads, each (block, thread) running the kernel's body.
struct Emulated {
  Vec dwte, partials;
  std::vector<int32_t> keys, order;
};

template <class T>
Emulated emulate_gpu(const std::vector<int32_t>& ids, const Vec& dy, const Vec& dwte0,
                     int64_t C, int64_t V) {
  const int64_t rows = static_cast<int64_t>(ids.size());
  const std::vector<T> dyt = stored<T>(dy);
  Emulated e;
  e.dwte = dwte0;
  e.partials.assign(static_cast<size_t>(emb_partial_slots(rows) * C), NAN);  // unwritten
  std::vector<int32_t> keys_in(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i)
    keys_in[i] = ids[i] >= 0 && ids[i] < V ? ids[i] : static_cast<int32_t>(V);
  e.order.resize(static_cast<size_t>(rows));
  std::iota(e.order.begin(), e.order.end(), 0);
  std::stable_sort(e.order.begin(), e.order.end(),
                   [&](int32_t a, int32_t b) { return keys_in[a] < keys_in[b]; });
  for (int32_t r : e.order) e.keys.push_back(keys_in[r]);
  const int64_t windows = emb_windows(rows), tiles = emb_col_tiles(C);
  // Blocks and threads in reverse launch order: the result must not care.
  for (int64_t bx = windows - 1; bx >= 0; --bx)
    for (int64_t by = tiles - 1; by >= 0; --by)
      for (int64_t tx = kEmbCols - 1; tx >= 0; --tx)
        emb_chunk_sums(e.keys.data(), e.order.data(), dyt.data(), e.dwte.data(),
                       e.partials.data(), rows, C, V, bx, by * kEmbCols + tx, tiles * kEmbCols);
  for (int64_t bx = windows - 1; bx >= 0; --bx)
    for (int64_t by = tiles - 1; by >= 0; --by)
      for (int64_t tx = kEmbCols - 1; tx >= 0; --tx)
        emb_chunk_totals(e.keys.data(), e.partials.data(), e.dwte.data(), rows, C, V, bx,
                         by * kEmbCols + tx, tiles * kEmbCols);
  return e;
}

struct Case {
  int64_t rows, big, C, V;
  bool bad;
};

// 5,000 rows of one token (79 chunks: 78 of 64 rows and one of 8) in 5,003 or 6,001 rows; exactly K
// and K + 1 rows; C over one column tile; the GPT tokenizer's 65 tokens.
const Case kCases[] = {{5003, 5000, 5, 4, true},   {6001, 5000, 37, 9, false},
                       {2 * K + 5, K, 3, 3, true}, {700, K + 1, 300, 6, false},
                       {4096, 600, 17, 65, true},  {1, 1, 4, 2, false}};

}  // namespace

TEST_CASE("embedding backward: the CPU sums tokens in the chunk order of embedding_sum.h",
          "[seq-ops][embedding]") {
  for (const Case& s : kCases) {
    INFO("rows " << s.rows << " big " << s.big << " C " << s.C << " V " << s.V);
    const std::vector<int32_t> ids = skewed_ids(s.rows, s.big, s.V, s.bad, 1);
    const Vec dy = random_floats(s.rows * s.C, 2), dwte0 = random_floats(s.V * s.C, 3);
    const Vec want = rendered_dwte<float>(ids, dy, dwte0, s.C, s.V);
    CHECK(same_bits(cpu_dwte<float>(2, ids, dy, dwte0, s.C, s.V), want));
    CHECK(same_bits(cpu_dwte<float>(1, ids, dy, dwte0, s.C, s.V), want));
    const Vec want_b = rendered_dwte<bf16_t>(ids, dy, dwte0, s.C, s.V);
    CHECK(same_bits(cpu_dwte<bf16_t>(2, ids, dy, dwte0, s.C, s.V), want_b));
    CHECK(same_bits(cpu_dwte<bf16_t>(1, ids, dy, dwte0, s.C, s.V), want_b));
  }
}

TEST_CASE("embedding backward: the chunk order is not the plain row order for a long token",
          "[seq-ops][embedding]") {
  // The tests above could not tell the orders apart if they agreed: for a token of 5,000
  // rows they must not (and for one of at most K rows they must).
  const int64_t rows = 5000, C = 8, V = 2;
  const std::vector<int32_t> ids(rows, 0);
  const Vec dy = random_floats(rows * C, 4), zero(static_cast<size_t>(V * C), 0.0f);
  Vec serial = zero;
  for (int64_t c = 0; c < C; ++c) {
    float s = 0.0f;
    for (int64_t i = 0; i < rows; ++i) s += dy[i * C + c];
    serial[c] = s;
  }
  CHECK_FALSE(same_bits(cpu_dwte<float>(2, ids, dy, zero, C, V), serial));
  const std::vector<int32_t> short_ids(K, 1);
  const Vec short_dy(dy.begin(), dy.begin() + K * C);
  Vec short_serial = zero;
  for (int64_t c = 0; c < C; ++c) {
    float s = 0.0f;
    for (int64_t i = 0; i < K; ++i) s += short_dy[i * C + c];
    short_serial[C + c] = s;
  }
  CHECK(same_bits(cpu_dwte<float>(2, short_ids, short_dy, zero, C, V), short_serial));
}

TEST_CASE("embedding backward: an emulation of the CUDA passes gives the CPU's bits",
          "[seq-ops][embedding]") {
  for (const Case& s : kCases) {
    INFO("rows " << s.rows << " big " << s.big << " C " << s.C << " V " << s.V);
    const std::vector<int32_t> ids = skewed_ids(s.rows, s.big, s.V, s.bad, 5);
    const Vec dy = random_floats(s.rows * s.C, 6), dwte0 = random_floats(s.V * s.C, 7);
    CHECK(same_bits(emulate_gpu<float>(ids, dy, dwte0, s.C, s.V).dwte,
                    cpu_dwte<float>(2, ids, dy, dwte0, s.C, s.V)));
    CHECK(same_bits(emulate_gpu<bf16_t>(ids, dy, dwte0, s.C, s.V).dwte,
                    cpu_dwte<bf16_t>(2, ids, dy, dwte0, s.C, s.V)));
  }
}

TEST_CASE("embedding backward: the CUDA window scan covers each row once; slots are unique",
          "[seq-ops][embedding]") {
  // Runs of every length around K and 2K, at every offset to the windows.
  std::vector<int32_t> ids;
  std::mt19937 g(8);
  std::uniform_int_distribution<int64_t> len(1, 3 * K + 2);
  int32_t V = 0;
  for (; ids.size() < 20000; ++V) ids.insert(ids.end(), static_cast<size_t>(len(g)), V);
  ids.push_back(V);  // one bad id, keyed V: sorted last, skipped
  const int64_t rows = static_cast<int64_t>(ids.size());
  std::shuffle(ids.begin(), ids.end(), g);
  const Emulated e = emulate_gpu<float>(ids, Vec(static_cast<size_t>(rows), 1.0f),
                                        Vec(static_cast<size_t>(V), 0.0f), 1, V);
  std::vector<int> covered(static_cast<size_t>(rows), 0);
  std::set<int64_t> slots;
  int64_t longer_runs = 0, totals_found = 0;
  for (int64_t j = 0; j < emb_windows(rows); ++j) {
    EmbWindowScan scan(e.keys.data(), rows, V, j);
    int64_t starts_inside = 0;
    for (EmbChunk ch; scan.next(ch);) {
      CHECK(ch.begin / K == j);
      CHECK(ch.end - ch.begin >= 1);
      CHECK(ch.end - ch.begin <= K);
      CHECK(ch.begin - ch.run_begin == ch.index * K);
      for (int64_t q = ch.begin; q < ch.end; ++q) {
        ++covered[q];
        CHECK(e.keys[q] == ch.token);
      }
      if (ch.only) continue;
      CHECK(slots.insert(ch.slot()).second);  // no slot written twice
      CHECK(ch.slot() < emb_partial_slots(rows));
      if (ch.index == 0) {
        ++longer_runs;
        if (ch.begin % K != 0) ++starts_inside;
      }
    }
    CHECK(starts_inside <= 1);
  }
  for (int64_t q = 0; q < rows; ++q) CHECK(covered[q] == (e.keys[q] < V ? 1 : 0));
  // Every longer run's slots were written in pass 1 (the emulation left no NaN read), and
  // each token's total matches its count of rows (dy = 1: exact sums).
  for (int32_t v = 0; v < V; ++v) {
    const int64_t n = std::count(ids.begin(), ids.end(), v);
    CHECK(e.dwte[v] == static_cast<float>(n));
    totals_found += n > K;
  }
  CHECK(longer_runs == totals_found);
  CHECK(longer_runs > 50);
}
