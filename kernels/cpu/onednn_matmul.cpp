#include "kernels/cpu/onednn_matmul.h"

#include <algorithm>
#include <map>
#include <optional>
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

// One slab's primitive and the descriptors it was made for. b_packed, when not zero, is
// the blocked layout the primitive reads op(B) in: the call reorders B into it once and
// every slab reads that copy. Given a transposed B (a Linear layer's forward, x W^T), the
// primitive copies it into that layout itself, once per slab: 4-10% of the GEMM at
// vit-tiny's and gpt-tiny's shapes (8 to 130 slabs), same kernels, same bits. Not taken
// for fewer slabs (mlp's 2 lost 3-5% to the extra pass) or a plain B (no gain measured).
constexpr int64_t kPackMinSlabs = 8;

// Where oneDNN's matmul picks its gemm-based implementation ("gemm:jit": a transposed A, the
// weight gradients dz^T x; strided column slabs of dz W), the slab calls that GEMM itself
// (dnnl_sgemm): the same kernel and bits (checked bit for bit at mlp's and gpt-tiny's
// weight-gradient slabs, beta 0 and 1) without the matmul's own work around it. One Xeon
// model-167 core, mlp's 512 x 784 x 128 weight gradient in 4 slabs, operands out of
// cache: 716-746 -> 648-679 us. Only for alpha 1 and beta 0 or 1, where the matmul's
// output scale and sum post-op are the GEMM's alpha and beta exactly.
struct DirectGemm {
  char ta, tb;  // 'N' or 'T'
  int64_t rows, N, K, lda, ldb, ldc;
  float beta;
};

struct SlabMatmul {
  dnnl::memory::desc a, b, c, scratch, b_packed;
  dnnl::matmul primitive;
  dnnl::reorder pack;  // B -> b_packed, when b_packed is set
  std::optional<DirectGemm> direct;  // set: run as dnnl_sgemm instead of the primitive
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

int64_t onednn_gemm_slab_rows(int64_t M) {
  constexpr int64_t kMinRows = 64, kTargetRows = 256;
  if (M <= 4 * kMinRows) return kMinRows;
  const int64_t slabs = ((M + kTargetRows - 1) / kTargetRows + 3) / 4 * 4;  // a multiple of 4
  const int64_t rows = (M + slabs - 1) / slabs;
  return std::max(kMinRows, (rows + 7) / 8 * 8);
}

// Column slabs, for products whose rows are too few for row slabs to pay or to spread:
//  - x W^T (B transposed), a Linear layer's forward at a small batch, M <= 256: slab j
//    computes C[:, j*cols ...) = x W[j*cols ...)^T into a dense per-thread buffer (oneDNN's
//    brgemm matmul wants a dense C), then copies it into place. Each slab re-lays out only
//    its own rows of W, where each row slab re-lays out all of W: mlp's 128 x 512 x 784
//    forward ran 7% faster on one thread and 2.6% on two standalone, 7-22% on two in the
//    model (where the optimizer last wrote half of W on the other core); conv2d-mnist's
//    64 x 128 x 9216, one row slab (one thread of two), 1.00-1.05 -> 0.58-0.64 ms. The
//    same kernels sum each element over K in the same order as row slabs do (a test checks
//    the bits agree).
//  - dz W (B plain), a Linear layer's input gradient, M <= 128 (one or two row slabs): slab
//    j writes C[:, j*cols ...) = dz W[:, j*cols ...) in place (oneDNN runs its gemm kernel
//    on the strided B and C). conv2d-mnist's 64 x 9216 x 128: 933 -> 752 us on one thread,
//    939 -> 379 on two (standalone). mlp's 128 x 512 x 512 (two row slabs of 64 before):
//    standalone on one Xeon model-167 core, operands out of cache, 520 -> 462 us; in the
//    step, alternated, 0.457-0.480 -> 0.405-0.410 ms at one thread, 0.254-0.275 ->
//    0.227-0.245 at two.
// Slabs of N / max(2, ceil(N / 256)) columns rounded up to a multiple of 64, the last one
// narrower: a function of N alone. beta 0 only (C is overwritten).
constexpr int64_t kColumnMaxRowsNT = 256, kColumnMaxRowsNN = 128, kColumnTarget = 256,
                  kColumnMin = 64;
int64_t column_slab_cols(int64_t N) {
  const int64_t slabs = std::max<int64_t>(2, (N + kColumnTarget - 1) / kColumnTarget);
  return ((N + slabs - 1) / slabs + kColumnMin - 1) / kColumnMin * kColumnMin;
}
bool use_column_slabs(bool ta, bool tb, int64_t M, int64_t N, float beta) {
  return !ta && beta == 0.0f && N >= 2 * kColumnMin &&
         M <= (tb ? kColumnMaxRowsNT : kColumnMaxRowsNN);
}

// `count` aligned regions, `stride` bytes apart, grown (never shrunk) between runs only,
// so no slab is using the old memory: one per thread (the scratchpads, the column slabs'
// dense C) or one for the call (the packed B).
struct AlignedRegions {
  std::vector<std::byte> bytes;
  size_t stride = 0;
  void grow(int count, size_t each) {
    if (onednn::align_up(each) <= stride) return;
    stride = onednn::align_up(each);
    bytes.assign(stride * static_cast<size_t>(count) + onednn::kAlign, std::byte{0});
  }
  std::byte* of(int region) {
    return onednn::align_up(bytes.data()) + stride * static_cast<size_t>(region);
  }
};

struct OnednnGemm::Impl {
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float,
                         float, bool>;
  std::map<Key, SlabMatmul> cache;  // map: entries stay put while others are added
  std::vector<dnnl::stream> streams;
  AlignedRegions scratch;   // each thread's oneDNN scratchpad
  AlignedRegions column_c;  // each thread's dense C of a column slab
  AlignedRegions packed_b;  // the call's op(B) in the slabs' packed layout, one region

  // The primitive for a slab of `rows` rows, created on first use under one thread;
  // reading B packed (b_packed set) where `pack` asks for it and the layout differs.
  const SlabMatmul& slab(int threads, bool ta, bool tb, int64_t rows, int64_t N, int64_t K,
                         int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta,
                         bool pack) {
    const Key key{ta, tb, rows, N, K, lda, ldb, ldc, alpha, beta, pack};
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
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(s.a, s.b, s.c), attr,
                                    onednn::cpu_engine());
    if (pack) {
      // The same product with B in the layout the implementation prefers. Taken only for
      // oneDNN's brgemm matmul picked both times (it copies B into that blocked layout
      // itself, so a packed B runs the same kernels and sums; the gemm-based one would
      // take `any` as a plain transpose of B and may change its summation), a blocked
      // layout, and a reorder that needs no scratchpad (nothing allocates in a step).
      const dnnl::memory::desc any(dims{K, N}, dt::f32, dnnl::memory::format_tag::any);
      dnnl::matmul::primitive_desc packed(dnnl::matmul::desc(s.a, any, s.c), attr,
                                          onednn::cpu_engine());
      const std::string impl = pd.impl_info_str();
      const dnnl::memory::desc layout = packed.weights_desc();
      if (impl.rfind("brg", 0) == 0 && impl == packed.impl_info_str() && layout != s.b &&
          layout.data.format_kind == dnnl_blocked &&
          layout.data.format_desc.blocking.inner_nblks > 0) {
        const dnnl::reorder::primitive_desc rpd(onednn::cpu_engine(), s.b, onednn::cpu_engine(),
                                                layout, onednn::user_scratchpad_attr());
        if (rpd.scratchpad_desc().get_size() == 0) {
          s.b_packed = layout;
          s.pack = dnnl::reorder(rpd);
          pd = packed;
        }
      }
    }
    s.scratch = pd.scratchpad_desc();
    s.primitive = dnnl::matmul(pd);
    if (std::string(pd.impl_info_str()).rfind("gemm:", 0) == 0 && s.b_packed.is_zero() &&
        alpha == 1.0f && (beta == 0.0f || beta == 1.0f))
      s.direct = DirectGemm{ta ? 'T' : 'N', tb ? 'T' : 'N', rows, N, K, lda, ldb, ldc, beta};
    scratch.grow(threads, s.scratch.get_size());
    return cache.emplace(key, std::move(s)).first->second;
  }

  // Runs slab primitive s on the calling thread, single-threaded, with the thread's stream
  // and scratchpad: op(A) at a, op(B) at b in layout b_desc, C at c.
  void execute(const SlabMatmul& s, int thread, const float* a, const dnnl::memory::desc& b_desc,
               const void* b, float* c) {
    if (s.direct) {
      const DirectGemm& g = *s.direct;
      onednn::OneThread one;
      const dnnl_status_t st = dnnl_sgemm(g.ta, g.tb, g.rows, g.N, g.K, 1.0f, a, g.lda,
                                          static_cast<const float*>(b), g.ldb, g.beta, c, g.ldc);
      // dnnl::error keeps the message's pointer: a literal.
      if (st != dnnl_success) throw dnnl::error(st, "dnnl_sgemm failed on a GEMM slab");
      return;
    }
    const dnnl::engine& engine = onednn::cpu_engine();
    dnnl::memory ma(s.a, engine, const_cast<float*>(a));
    dnnl::memory mb(b_desc, engine, const_cast<void*>(b));
    dnnl::memory mc(s.c, engine, c);
    dnnl::memory ms(s.scratch, engine, scratch.of(thread));
    onednn::OneThread one;
    dnnl::stream& stream = streams[static_cast<size_t>(thread)];
    s.primitive.execute(stream, {{DNNL_ARG_SRC, ma},
                                 {DNNL_ARG_WEIGHTS, mb},
                                 {DNNL_ARG_DST, mc},
                                 {DNNL_ARG_SCRATCHPAD, ms}});
    stream.wait();
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
  if (use_column_slabs(ta, tb, M, N, beta))
    return run_columns(tb, M, N, K, alpha, A, lda, B, ldb, C, ldc, after);
  // Every slab but the last has slab_rows rows; create both primitives here, outside the
  // parallel region (creation allocates and may throw).
  const int64_t slab_rows = onednn_gemm_slab_rows(M);
  const int64_t slabs = (M + slab_rows - 1) / slab_rows;
  const int64_t full_rows = std::min(M, slab_rows);
  const int64_t last_rows = M - (slabs - 1) * slab_rows;
  const SlabMatmul* full = nullptr;
  const SlabMatmul* last = nullptr;
  try {
    const auto make = [&](bool pack) {
      full = &impl_->slab(threads_, ta, tb, full_rows, N, K, lda, ldb, ldc, alpha, beta, pack);
      last = &impl_->slab(threads_, ta, tb, last_rows, N, K, lda, ldb, ldc, alpha, beta, pack);
    };
    make(tb && slabs >= kPackMinSlabs);
    // One packed copy serves every slab only when both slab shapes read the same layout.
    if (full->b_packed != last->b_packed) make(false);
  } catch (const dnnl::error& e) {
    return make_error(std::string("oneDNN gemm: cannot create a matmul: ") + e.what());
  }
  const bool packed = !full->b_packed.is_zero();  // B packed once for every slab
  if (full->direct || last->direct) ++direct_calls_;
  if (packed) {
    try {
      impl_->packed_b.grow(1, full->b_packed.get_size());
      const dnnl::engine& engine = onednn::cpu_engine();
      dnnl::memory from(full->b, engine, const_cast<float*>(B));
      dnnl::memory to(full->b_packed, engine, impl_->packed_b.of(0));
      onednn::OneThread one;
      dnnl::stream& stream = impl_->streams[0];
      full->pack.execute(stream, from, to);
      stream.wait();
      ++packed_calls_;
    } catch (const dnnl::error& e) {
      return make_error(std::string("oneDNN gemm: cannot pack B: ") + e.what());
    }
  }
  const auto slab = [&](int thread, int64_t m0, int64_t rows) {
    const SlabMatmul& s = rows == full_rows ? *full : *last;
    // Row m of op(A) starts at A + m*lda (no transpose) or A + m (transposed).
    const float* a = ta ? A + m0 : A + m0 * lda;
    if (packed)
      impl_->execute(s, thread, a, s.b_packed, impl_->packed_b.of(0), C + m0 * ldc);
    else
      impl_->execute(s, thread, a, s.b, B, C + m0 * ldc);
    if (after) (*after)(m0, rows);
  };
  return onednn::for_each_slab(threads_, M, slab_rows, slab);
}

// C = alpha A op(B) by column slabs (use_column_slabs), then `after` over row slabs of
// onednn_gemm_slab_rows(M) once every column is in place.
Status OnednnGemm::run_columns(bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                               const float* A, int64_t lda, const float* B, int64_t ldb,
                               float* C, int64_t ldc, const SlabEpilogue* after) {
  const int64_t cols = column_slab_cols(N);
  const int64_t last_cols = N - (N - 1) / cols * cols;
  // B transposed: each slab's C is its thread's dense M x cols buffer (ldc = the slab's
  // columns); plain: C itself.
  const bool dense = tb;
  const SlabMatmul* full = nullptr;
  const SlabMatmul* last = nullptr;
  try {
    full = &impl_->slab(threads_, false, tb, M, cols, K, lda, ldb, dense ? cols : ldc, alpha,
                        0.0f, false);
    last = &impl_->slab(threads_, false, tb, M, last_cols, K, lda, ldb,
                        dense ? last_cols : ldc, alpha, 0.0f, false);
  } catch (const dnnl::error& e) {
    return make_error(std::string("oneDNN gemm: cannot create a matmul: ") + e.what());
  }
  if (dense) impl_->column_c.grow(threads_, static_cast<size_t>(M * cols) * sizeof(float));
  if (full->direct || last->direct) ++direct_calls_;
  const auto column = [&](int thread, int64_t n0, int64_t n) {
    const SlabMatmul& s = n == cols ? *full : *last;
    float* out = dense ? reinterpret_cast<float*>(impl_->column_c.of(thread)) : C + n0;
    // Columns [n0, n0 + n) of op(B): W's rows n0.. (B + n0 * ldb) when B is W^T, else
    // B's columns n0.. (B + n0).
    impl_->execute(s, thread, A, s.b, tb ? B + n0 * ldb : B + n0, out);
    if (dense)
      for (int64_t i = 0; i < M; ++i)
        std::copy(out + i * n, out + (i + 1) * n, C + i * ldc + n0);
  };
  NOEIRA_TRY(onednn::for_each_slab(threads_, N, cols, column));
  ++column_calls_;
  if (!after) return {};
  return onednn::for_each_slab(threads_, M, onednn_gemm_slab_rows(M),
                               [&](int, int64_t m0, int64_t rows) { (*after)(m0, rows); });
}

}  // namespace noeira
