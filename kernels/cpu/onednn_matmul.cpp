#include "kernels/cpu/onednn_matmul.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/onednn_engine.h"

namespace noeira {

namespace {

using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

// A (rows x cols) matrix stored row-major with leading dimension ld, or its transpose.
dnnl::memory::desc matrix(int64_t rows, int64_t cols, int64_t ld, bool transposed) {
  return transposed ? dnnl::memory::desc(dims{rows, cols}, dt::f32, dims{1, ld})
                    : dnnl::memory::desc(dims{rows, cols}, dt::f32, dims{ld, 1});
}

// One slab's primitive and the descriptors it was made for.
struct SlabMatmul {
  dnnl::memory::desc a, b, c, scratch;
  dnnl::matmul primitive;
};

// beta * C (zero when beta is 0: C is not read), for K == 0 where op(A) op(B) is empty.
void scale(float* C, int64_t M, int64_t N, int64_t ldc, float beta) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
}

Status check(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
             int64_t ldc) {
  if (M < 0 || N < 0 || K < 0)
    return make_error("oneDNN gemm: negative size M=" + std::to_string(M) +
                      " N=" + std::to_string(N) + " K=" + std::to_string(K));
  const auto too_small = [](int64_t ld, int64_t row) { return ld < std::max<int64_t>(1, row); };
  if (too_small(lda, ta ? M : K) || too_small(ldb, tb ? K : N) || too_small(ldc, N))
    return make_error(
        "oneDNN gemm: a leading dimension is smaller than its row (lda=" + std::to_string(lda) +
        " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc) + ")");
  // Nested inside another region, every slab would see thread 0 and share a scratchpad.
  if (omp_in_parallel()) return make_error("oneDNN gemm: called inside an OpenMP parallel region");
  return {};
}

}  // namespace

struct OnednnGemm::Impl {
  using Key =
      std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float, float>;
  std::map<Key, SlabMatmul> cache;  // map: entries stay put while others are added
  std::vector<dnnl::stream> streams;
  std::vector<std::byte> scratch;  // one scratchpad per thread, `scratch_stride` apart
  size_t scratch_stride = 0;

  // The primitive for a slab of `rows` rows, created on first use under one thread.
  const SlabMatmul& slab(int threads, bool ta, bool tb, int64_t rows, int64_t N, int64_t K,
                         int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta) {
    const Key key{ta, tb, rows, N, K, lda, ldb, ldc, alpha, beta};
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    onednn::OneThread one;
    SlabMatmul s;
    s.a = matrix(rows, K, lda, ta);
    s.b = matrix(K, N, ldb, tb);
    s.c = matrix(rows, N, ldc, false);
    // alpha as an output scale, beta as a sum post-op: C = alpha AB + beta C.
    dnnl::primitive_attr attr = onednn::user_scratchpad_attr();
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(s.a, s.b, s.c), attr,
                                          onednn::cpu_engine());
    s.scratch = pd.scratchpad_desc();
    s.primitive = dnnl::matmul(pd);
    grow_scratch(threads, s.scratch.get_size());
    return cache.emplace(key, std::move(s)).first->second;
  }

  // Called between runs only, so no slab is using the old buffer.
  void grow_scratch(int threads, size_t bytes) {
    if (onednn::align_up(bytes) <= scratch_stride) return;
    scratch_stride = onednn::align_up(bytes);
    scratch.assign(scratch_stride * static_cast<size_t>(threads) + onednn::kAlign, std::byte{0});
  }
  void* scratch_of(int thread) {
    return onednn::align_up(scratch.data()) + scratch_stride * static_cast<size_t>(thread);
  }
};

OnednnGemm::OnednnGemm(int threads)
    : threads_(std::max(1, threads)), impl_(std::make_unique<Impl>()) {
  impl_->streams = onednn::make_streams(threads_);
}

OnednnGemm::~OnednnGemm() = default;

Status OnednnGemm::run(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                       const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                       float* C, int64_t ldc, const SlabEpilogue* after) {
  NOEIRA_TRY(check(ta, tb, M, N, K, lda, ldb, ldc));
  if (M == 0 || N == 0) return {};
  if (K == 0) {
    scale(C, M, N, ldc, beta);
    if (after) (*after)(0, M);
    return {};
  }
  // Every slab but the last has kOnednnGemmSlabRows rows; create both primitives here,
  // outside the parallel region (creation allocates and may throw).
  const int64_t slabs = (M + kOnednnGemmSlabRows - 1) / kOnednnGemmSlabRows;
  const int64_t full_rows = std::min(M, kOnednnGemmSlabRows);
  const int64_t last_rows = M - (slabs - 1) * kOnednnGemmSlabRows;
  const SlabMatmul* full = nullptr;
  const SlabMatmul* last = nullptr;
  try {
    full = &impl_->slab(threads_, ta, tb, full_rows, N, K, lda, ldb, ldc, alpha, beta);
    last = &impl_->slab(threads_, ta, tb, last_rows, N, K, lda, ldb, ldc, alpha, beta);
  } catch (const dnnl::error& e) {
    return make_error(std::string("oneDNN gemm: cannot create a matmul: ") + e.what());
  }
  const dnnl::engine& engine = onednn::cpu_engine();
  const auto slab = [&](int thread, int64_t m0, int64_t rows) {
    const SlabMatmul& s = rows == full_rows ? *full : *last;
    // Row m of op(A) starts at A + m*lda (no transpose) or A + m (transposed).
    const float* a = ta ? A + m0 : A + m0 * lda;
    dnnl::memory ma(s.a, engine, const_cast<float*>(a));
    dnnl::memory mb(s.b, engine, const_cast<float*>(B));
    dnnl::memory mc(s.c, engine, C + m0 * ldc);
    dnnl::memory ms(s.scratch, engine, impl_->scratch_of(thread));
    onednn::OneThread one;
    dnnl::stream& stream = impl_->streams[static_cast<size_t>(thread)];
    s.primitive.execute(stream, {{DNNL_ARG_SRC, ma},
                                 {DNNL_ARG_WEIGHTS, mb},
                                 {DNNL_ARG_DST, mc},
                                 {DNNL_ARG_SCRATCHPAD, ms}});
    stream.wait();
    if (after) (*after)(m0, rows);
  };
  return onednn::for_each_slab(threads_, M, kOnednnGemmSlabRows, slab);
}

}  // namespace noeira
