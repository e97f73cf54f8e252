// CPU attention's GEMM plans (attention_plan.h): the primitives, cached for the process.
#include "kernels/cpu/attention_plan.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/onednn_engine.h"

namespace noeira::cpu_attention {

namespace {

using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

// `batch` (rows x cols) matrices `stride` apart, each stored row-major with leading dimension
// ld, or its transpose.
dnnl::memory::desc matrix(int64_t batch, int64_t stride, int64_t rows, int64_t cols, int64_t ld,
                          bool transposed) {
  return transposed ? dnnl::memory::desc(dims{batch, rows, cols}, dt::f32, dims{stride, 1, ld})
                    : dnnl::memory::desc(dims{batch, rows, cols}, dt::f32, dims{stride, ld, 1});
}

// One operand of a Gemm: its leading dimension and the stride between heads.
struct Operand {
  int64_t ld, stride;
  bool transposed = false;
};

struct GemmCache {
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, int64_t, int64_t, bool,
                         int64_t, int64_t, int64_t, int64_t, float>;
  std::mutex mu;
  std::map<Key, std::unique_ptr<Gemm>> gemms;  // entries stay put
  std::vector<std::unique_ptr<dnnl::stream>> streams;
  std::map<std::tuple<int, int64_t, int64_t, bool, int64_t>, std::unique_ptr<Plan>>
      plans;  // threads, T, hd, causal, heads
};

GemmCache& gemm_cache() {
  static GemmCache* cache = new GemmCache;  // never destroyed: outlives every CpuOps
  return *cache;
}

// Callers hold the cache's mutex.
const Gemm& gemm_of(GemmCache& cache, int64_t batch, int64_t M, int64_t N, int64_t K, Operand a,
                    Operand b, Operand c, float alpha) {
  const GemmCache::Key key{batch,    M, N, K, a.transposed, a.ld, a.stride, b.transposed,
                           b.ld, b.stride, c.ld, c.stride, alpha};
  auto it = cache.gemms.find(key);
  if (it != cache.gemms.end()) return *it->second;
  onednn::OneThread one;
  auto g = std::make_unique<Gemm>();
  g->a = matrix(batch, a.stride, M, K, a.ld, a.transposed);
  g->b = matrix(batch, b.stride, K, N, b.ld, b.transposed);
  g->c = matrix(batch, c.stride, M, N, c.ld, false);
  dnnl::primitive_attr attr = onednn::user_scratchpad_attr();
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(g->a, g->b, g->c), attr,
                                        onednn::cpu_engine());
  g->scratch = pd.scratchpad_desc();
  g->primitive = dnnl::matmul(pd);
  return *cache.gemms.emplace(key, std::move(g)).first->second;
}

}  // namespace

const Plan& plan_of(const char* op, int threads, int64_t T, int64_t hd, bool causal,
                    int64_t heads) {
  GemmCache& cache = gemm_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  const auto key = std::make_tuple(threads, T, hd, causal, heads);
  if (auto it = cache.plans.find(key); it != cache.plans.end()) return *it->second;
  auto owned = std::make_unique<Plan>();
  Plan& p = *owned;
  p.T = T;
  p.hd = hd;
  p.causal = causal;
  p.heads = heads;
  p.blocks = row_blocks(T, causal);
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
      const int64_t i0 = block_begin(blk), rows = block_end(p, blk) - i0;
      const int64_t keys = key_end(p, blk), g0 = grad_begin(p, blk);
      // Head matrices (T x hd) and square ones (T x T), row-major or read transposed.
      const Operand head{hd, T * hd}, head_t{hd, T * hd, true};
      const Operand square{T, T * T}, square_t{T, T * T, true};
      const auto gemm = [&](int64_t M, int64_t N, int64_t K, Operand a, Operand b, Operand c,
                            float alpha) {
        return slot(gemm_of(cache, heads, M, N, K, a, b, c, alpha));
      };
      p.s.push_back(gemm(rows, keys, hd, head, head_t, square, scale));
      p.o.push_back(gemm(rows, hd, keys, square, head, head, 1.0f));
      p.da.push_back(gemm(rows, keys, hd, head, head_t, square, 1.0f));
      p.dq.push_back(gemm(rows, hd, keys, square, head, head, 1.0f));
      const Slot dkv = gemm(rows, hd, T - g0, square_t, head, head, 1.0f);
      p.dk.push_back(dkv);
      p.dv.push_back(dkv);
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

}  // namespace noeira::cpu_attention
