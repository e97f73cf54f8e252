#include "kernels/cpu/bf16_gemm.h"

#include <omp.h>

#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>

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
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mu;  // guards the cache; slabs run concurrently
  std::map<Key, dnnl::matmul> cache;

  dnnl::matmul primitive(const Key& k, const dnnl::memory::desc& a, const dnnl::memory::desc& b,
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
    dnnl::matmul m(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine));
    cache.emplace(k, m);
    return m;
  }
};

const std::string& Bf16Gemm::unavailable_reason() {
  static const std::string reason = [] {
    try {
      dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      const auto a = matrix(1, 1, 1, false, dt::bf16), c = matrix(1, 1, 1, false, dt::f32);
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, a, c), engine);
      return std::string();
    } catch (const dnnl::error& e) {
      return "oneDNN has no bf16 matmul for this CPU's instruction set (" + std::string(e.what()) +
             "; oneDNN 2.6 needs AVX-512)";
    }
  }();
  return reason;
}

Bf16Gemm::Bf16Gemm() : impl_(std::make_unique<Impl>()) {}
Bf16Gemm::~Bf16Gemm() = default;

void Bf16Gemm::run(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                   const bf16_t* A, int64_t lda, const bf16_t* B, int64_t ldb, float beta,
                   float* C, int64_t ldc) {
  const auto a = matrix(M, K, lda, ta, dt::bf16);
  const auto b = matrix(K, N, ldb, tb, dt::bf16);
  const auto c = matrix(M, N, ldc, false, dt::f32);
  // One thread inside, also while the primitive is created (oneDNN picks its blocking
  // from the thread count then): the caller owns the parallelism, so results never
  // depend on it.
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Impl::Key key{omp_get_thread_num(), ta, tb, M, N, K, lda, ldb, ldc, alpha, beta};
  dnnl::matmul mm = impl_->primitive(key, a, b, c, alpha, beta);
  dnnl::stream stream(impl_->engine);
  dnnl::memory ma(a, impl_->engine, const_cast<bf16_t*>(A));
  dnnl::memory mb(b, impl_->engine, const_cast<bf16_t*>(B));
  dnnl::memory mc(c, impl_->engine, C);
  mm.execute(stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
  stream.wait();
  omp_set_num_threads(saved);
}

}  // namespace noeira
