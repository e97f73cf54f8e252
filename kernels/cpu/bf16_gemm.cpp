#include "kernels/cpu/bf16_gemm.h"

#include <omp.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/cpu/onednn_engine.h"

namespace noeira {

namespace {

using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

// A (rows x cols) matrix stored row-major with leading dimension ld, or its transpose.
dnnl::memory::desc matrix(int64_t rows, int64_t cols, int64_t ld, bool transposed, dt type) {
  return transposed ? dnnl::memory::desc(dims{rows, cols}, type, dims{1, ld})
                    : dnnl::memory::desc(dims{rows, cols}, type, dims{ld, 1});
}

}  // namespace

struct Bf16Gemm::Impl {
  // The calling thread is part of the key: a primitive owns its scratchpad, so two
  // threads must never run the same primitive at once.
  using Key = std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         float, float>;
  std::mutex mu;  // guards the cache; slabs run concurrently
  // A primitive with its memory objects and execution arguments, made on the key's first
  // call; later calls only set the data handles (nothing allocated per call).
  struct Entry {
    dnnl::matmul primitive;
    dnnl::memory a, b, c;
    std::unordered_map<int, dnnl::memory> args;
  };
  std::map<Key, Entry> cache;  // map: entries stay put
  // Per calling thread (index: its OpenMP thread number): its stream (one made per call
  // cost microseconds at every slab) and its copy of a transposed A (dense_a).
  std::vector<dnnl::stream> streams;
  std::vector<std::vector<bf16_t>> dense;

  Entry& entry(const Key& k, const dnnl::memory::desc& a, const dnnl::memory::desc& b,
               const dnnl::memory::desc& c, float alpha, float beta) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(k);
    if (it != cache.end()) return it->second;
    // alpha as an output scale, beta as a sum post-op: C = alpha AB + beta C.
    dnnl::primitive_attr attr;
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    Entry e;
    const dnnl::engine& engine = onednn::cpu_engine();
    e.primitive =
        dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine));
    e.a = dnnl::memory(a, engine, DNNL_MEMORY_NONE);
    e.b = dnnl::memory(b, engine, DNNL_MEMORY_NONE);
    e.c = dnnl::memory(c, engine, DNNL_MEMORY_NONE);
    e.args = {{DNNL_ARG_SRC, e.a}, {DNNL_ARG_WEIGHTS, e.b}, {DNNL_ARG_DST, e.c}};
    return cache.emplace(k, std::move(e)).first->second;
  }
};

const std::string& Bf16Gemm::unavailable_reason() {
  static const std::string reason = [] {
    try {
      const auto a = matrix(1, 1, 1, false, dt::bf16), c = matrix(1, 1, 1, false, dt::f32);
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, a, c), onednn::cpu_engine());
      return std::string();
    } catch (const dnnl::error& e) {
      return "oneDNN has no bf16 matmul for this CPU's instruction set (" + std::string(e.what()) +
             "; oneDNN 2.6 needs AVX-512)";
    }
  }();
  return reason;
}

Bf16Gemm::Bf16Gemm(int threads) : impl_(std::make_unique<Impl>()) {
  impl_->streams = onednn::make_streams(std::max(1, threads));
  impl_->dense.resize(impl_->streams.size());
}
Bf16Gemm::~Bf16Gemm() = default;

namespace {

// A transposed A (M x K read from K rows of M values lda apart) as a dense one (lda = M):
// oneDNN 2.6 runs its AMX / AVX512-BF16 brgemm kernels on a transposed source only when
// it is dense, and a row slab of a weight gradient's dz^T is not (lda = the layer's
// width): those slabs ran its generic gemm:jit kernel at under half the speed (one
// Emerald Rapids core, mlp's 512 x 512 weight gradient in 64-row slabs: 356 us on
// gemm:jit, 204 us copied then on brgemm, copy included).
const bf16_t* dense_a(const bf16_t* A, int64_t M, int64_t K, int64_t lda,
                      std::vector<bf16_t>& buffer) {
  buffer.resize(static_cast<size_t>(M * K));  // grows only past the largest call before
  for (int64_t k = 0; k < K; ++k) std::copy(A + k * lda, A + k * lda + M, buffer.data() + k * M);
  return buffer.data();
}

}  // namespace

void Bf16Gemm::run(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                   const bf16_t* A, int64_t lda, const bf16_t* B, int64_t ldb, float beta,
                   float* C, int64_t ldc) {
  const int thread = omp_get_thread_num();
  if (ta && lda != M) {
    A = dense_a(A, M, K, lda, impl_->dense[static_cast<size_t>(thread)]);
    lda = M;
  }
  const auto a = matrix(M, K, lda, ta, dt::bf16);
  const auto b = matrix(K, N, ldb, tb, dt::bf16);
  const auto c = matrix(M, N, ldc, false, dt::f32);
  // One thread inside, also while the primitive is created (oneDNN picks its blocking
  // from the thread count then): the caller owns the parallelism, so results never
  // depend on it.
  onednn::OneThread one;
  const Impl::Key key{thread, ta, tb, M, N, K, lda, ldb, ldc, alpha, beta};
  // The key holds the calling thread, so no other thread touches this entry's objects.
  Impl::Entry& e = impl_->entry(key, a, b, c, alpha, beta);
  e.a.set_data_handle(const_cast<bf16_t*>(A));
  e.b.set_data_handle(const_cast<bf16_t*>(B));
  e.c.set_data_handle(C);
  dnnl::stream& stream = impl_->streams[static_cast<size_t>(thread)];
  e.primitive.execute(stream, e.args);
  stream.wait();
}

}  // namespace noeira
