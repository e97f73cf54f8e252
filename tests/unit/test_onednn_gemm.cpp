// oneDNN fp32 GEMM (kernels/cpu/onednn_matmul.h) against a double-accumulated reference,
// and the thread-count rule: 1 and 2 threads give the same bits (DESIGN.md rule 3), as does
// a transposed B packed once for all of a call's slabs.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "kernels/cpu/onednn_engine.h"
#include "kernels/cpu/onednn_matmul.h"
#include "tests/support/image_reference.h"

using namespace noeira;
using noeira::test::image_ref::random_vec;
using noeira::test::image_ref::rel_error;
using noeira::test::image_ref::same_bits;

namespace {

struct GemmCase {
  bool ta, tb;
  int64_t M, N, K, lda, ldb, ldc;
  float alpha, beta;
};

// Stored operands for a case: A is (M, lda) or (K, lda) when transposed, and so on.
struct GemmData {
  std::vector<float> A, B, C;
  GemmData(const GemmCase& c, uint32_t seed)
      : A(random_vec((c.ta ? c.K : c.M) * c.lda, seed)),
        B(random_vec((c.tb ? c.N : c.K) * c.ldb, seed + 1)),
        C(random_vec(c.M * c.ldc, seed + 2)) {}
};

std::vector<double> gemm_reference(const GemmCase& c, const GemmData& d) {
  std::vector<double> ref(d.C.begin(), d.C.end());
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j) {
      double s = 0.0;
      for (int64_t k = 0; k < c.K; ++k) {
        const double a = c.ta ? d.A[k * c.lda + i] : d.A[i * c.lda + k];
        const double b = c.tb ? d.B[j * c.ldb + k] : d.B[k * c.ldb + j];
        s += a * b;
      }
      double& out = ref[i * c.ldc + j];
      out = c.alpha * s + (c.beta == 0.0f ? 0.0 : c.beta * out);
    }
  return ref;
}

std::vector<float> run_gemm(OnednnGemm& g, const GemmCase& c, const GemmData& d) {
  std::vector<float> C = d.C;
  const Status s = g.run(c.ta, c.tb, c.M, c.N, c.K, c.alpha, d.A.data(), c.lda, d.B.data(), c.ldb,
                         c.beta, C.data(), c.ldc);
  REQUIRE(s.ok());
  return C;
}

// Leading dimensions `extra` elements past the row, so strides are exercised.
GemmCase make_case(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t extra, float alpha,
                   float beta) {
  return {ta, tb, M, N, K, (ta ? M : K) + extra, (tb ? K : N) + extra, N + extra, alpha, beta};
}

}  // namespace

TEST_CASE("oneDNN GEMM matches a double-accumulated reference", "[onednn]") {
  OnednnGemm gemm(2);
  // 520 rows: 9 slabs, enough that a transposed B is packed once for all of them. Cut by
  // columns (beta 0): 130 x 600, x W^T in 256 + 256 + 88; 60 x 300 and 128 x 300, x W^T
  // and dz W in 192 + 108.
  const int64_t sizes[][3] = {{1, 37, 129},   {63, 17, 65},   {65, 37, 129},
                              {130, 33, 47},  {70, 1, 1},     {520, 40, 129},
                              {130, 600, 47}, {60, 300, 47},  {128, 300, 47}};
  uint32_t seed = 10;
  for (const auto& mnk : sizes)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int64_t extra : {0, 3})
          for (float beta : {0.0f, 0.5f}) {
            const GemmCase c =
                make_case(ta, tb, mnk[0], mnk[1], mnk[2], extra, beta == 0.0f ? 1.0f : 0.7f, beta);
            const GemmData d(c, seed += 3);
            const std::vector<float> got = run_gemm(gemm, c, d);
            const std::vector<double> ref = gemm_reference(c, d);
            INFO("M=" << c.M << " N=" << c.N << " K=" << c.K << " ta=" << ta << " tb=" << tb
                      << " extra=" << extra << " beta=" << beta);
            CHECK(rel_error(got, ref) < 1e-5);
            // Columns past N (ldc > N) are not C's: left alone.
            bool padding_kept = true;
            for (int64_t i = 0; i < c.M; ++i)
              for (int64_t j = c.N; j < c.ldc; ++j)
                padding_kept &= got[i * c.ldc + j] == d.C[i * c.ldc + j];
            CHECK(padding_kept);
          }
}

namespace {

// c's C through one oneDNN matmul primitive per block of `rows` rows and `cols` columns, on
// one thread: the slabs as they ran before some called oneDNN's GEMM directly. gemm_based:
// whether the primitives ran oneDNN's gemm-based implementation (all did).
std::vector<float> matmul_blocks(const GemmCase& c, const GemmData& d, int64_t rows,
                                 int64_t cols, bool& gemm_based) {
  gemm_based = true;
  using md = dnnl::memory::desc;
  using dt = dnnl::memory::data_type;
  using dims = dnnl::memory::dims;
  std::vector<float> C = d.C;
  onednn::OneThread one;
  const dnnl::engine& e = onednn::cpu_engine();
  dnnl::stream stream(e);
  dnnl::primitive_attr attr;
  dnnl::post_ops sum;
  if (c.beta != 0.0f) sum.append_sum(c.beta), attr.set_post_ops(sum);
  for (int64_t m0 = 0; m0 < c.M; m0 += rows)
    for (int64_t n0 = 0; n0 < c.N; n0 += cols) {
      const int64_t m = std::min(rows, c.M - m0), n = std::min(cols, c.N - n0);
      const md a(dims{m, c.K}, dt::f32, c.ta ? dims{1, c.lda} : dims{c.lda, 1});
      const md b(dims{c.K, n}, dt::f32, c.tb ? dims{1, c.ldb} : dims{c.ldb, 1});
      const md out(dims{m, n}, dt::f32, dims{c.ldc, 1});
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, out), attr, e);
      gemm_based &= std::string(pd.impl_info_str()).rfind("gemm:", 0) == 0;
      const float* a_at = c.ta ? d.A.data() + m0 : d.A.data() + m0 * c.lda;
      const float* b_at = c.tb ? d.B.data() + n0 * c.ldb : d.B.data() + n0;
      dnnl::memory ma(a, e, const_cast<float*>(a_at)), mb(b, e, const_cast<float*>(b_at)),
          mc(out, e, C.data() + m0 * c.ldc + n0);
      dnnl::matmul(pd).execute(stream,
                               {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    }
  stream.wait();
  return C;
}

}  // namespace

TEST_CASE("oneDNN GEMM: slabs that call oneDNN's GEMM directly give its matmul primitive's bits",
          "[onednn]") {
  OnednnGemm gemm(2);
  // Weight gradients dz^T x in row slabs (mlp's first layer; gpt-tiny's c_proj in a 512-row
  // chunk), beta 1 and 0, and a padded one; dz W in column slabs of 192 + 108 with padded
  // leading dimensions. Where oneDNN's matmul runs its gemm-based implementation on these
  // slabs (all of them on AVX-512 CPUs so far), ours call that GEMM instead.
  struct Blocks {
    GemmCase c;
    int64_t rows, cols;
  };
  const Blocks cases[] = {
      {make_case(true, false, 512, 784, 128, 0, 1.0f, 1.0f), onednn_gemm_slab_rows(512), 784},
      {make_case(true, false, 512, 784, 128, 0, 1.0f, 0.0f), onednn_gemm_slab_rows(512), 784},
      {make_case(true, false, 128, 512, 512, 5, 1.0f, 1.0f), onednn_gemm_slab_rows(128), 512},
      {make_case(false, false, 128, 300, 47, 3, 1.0f, 0.0f), 128, 192}};
  for (const Blocks& k : cases) {
    const GemmCase& c = k.c;
    INFO("ta=" << c.ta << " M=" << c.M << " N=" << c.N << " K=" << c.K << " beta=" << c.beta);
    const GemmData d(c, 31);
    const int64_t direct = gemm.direct_calls();
    bool gemm_based = false;
    CHECK(same_bits(run_gemm(gemm, c, d), matmul_blocks(c, d, k.rows, k.cols, gemm_based)));
    CHECK(gemm.direct_calls() == direct + (gemm_based ? 1 : 0));
  }
}

TEST_CASE("oneDNN GEMM: beta 0 never reads C, K 0 scales C, bad leading dimensions are errors",
          "[onednn]") {
  OnednnGemm gemm(2);
  // x W^T on brgemm; a weight gradient dz^T x and column slabs of dz W on the gemm kernel
  // oneDNN's matmul picks there, which the slabs call directly (onednn_matmul.cpp).
  for (const GemmCase& c : {make_case(false, true, 65, 9, 11, 0, 1.0f, 0.0f),
                            make_case(true, false, 130, 70, 128, 0, 1.0f, 0.0f),
                            make_case(false, false, 128, 300, 47, 0, 1.0f, 0.0f)}) {
    INFO("ta=" << c.ta << " tb=" << c.tb << " M=" << c.M);
    GemmData d(c, 7);
    std::fill(d.C.begin(), d.C.end(), NAN);
    const std::vector<float> got = run_gemm(gemm, c, d);
    CHECK(rel_error(got, gemm_reference(c, d)) < 1e-5);
  }

  std::vector<float> C = {1.0f, 2.0f, 3.0f, 4.0f};
  REQUIRE(gemm.run(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, C.data(), 2).ok());
  CHECK(C == std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f});

  const std::vector<float> A(32, 1.0f), B(32, 1.0f);
  const Status bad =
      gemm.run(false, false, 4, 4, 8, 1.0f, A.data(), 7, B.data(), 4, 0.0f, C.data(), 4);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("leading dimension") != std::string::npos);
}

TEST_CASE("oneDNN GEMM: 1 and 2 threads give the same bits", "[onednn]") {
  OnednnGemm one(1), two(2);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      // 4 slabs, last 8 rows; 4 slabs of 136, last 112; 20 slabs of 208, last 148 (B
      // packed when tb)
      for (int64_t M : {200, 520, 4100}) {
        const GemmCase c = make_case(ta, tb, M, M > 1000 ? 33 : 129, 301, 1, 1.0f, 1.0f);
        const GemmData d(c, 99);
        CHECK(same_bits(run_gemm(one, c, d), run_gemm(two, c, d)));
      }
  // Cut by columns (3 slabs of 256, 256 and 88): x W^T and dz W at 128 rows.
  for (int tb = 0; tb < 2; ++tb) {
    const GemmCase c = make_case(false, tb, 128, 600, 301, 1, 1.0f, 0.0f);
    const GemmData d(c, 98);
    CHECK(same_bits(run_gemm(one, c, d), run_gemm(two, c, d)));
  }
  CHECK(one.column_calls() == 2);
  CHECK(two.column_calls() == 2);
}

TEST_CASE("oneDNN GEMM: slabs of 64 rows up to M = 256, then a multiple of 4 slabs of up to "
          "256 rows, by M alone", "[onednn]") {
  CHECK(onednn_gemm_slab_rows(1) == 64);
  CHECK(onednn_gemm_slab_rows(256) == 64);    // 4 slabs of 64
  CHECK(onednn_gemm_slab_rows(257) == 72);    // 4 slabs, the last of 41
  CHECK(onednn_gemm_slab_rows(768) == 192);   // gpt-tiny: 4 slabs of 192
  CHECK(onednn_gemm_slab_rows(4096) == 256);  // 16 slabs of 256
  CHECK(onednn_gemm_slab_rows(8320) == 232);  // vit-tiny: 35 slabs of 232, one of 200
  for (int64_t M = 257; M < 100000; M += 97) {
    const int64_t rows = onednn_gemm_slab_rows(M);
    const int64_t slabs = (M + rows - 1) / rows;
    INFO("M = " << M << ", rows " << rows << ", slabs " << slabs);
    CHECK(rows % 8 == 0);
    CHECK(rows >= 64);
    CHECK(rows <= 256);
    CHECK(slabs >= 4);
  }
}

TEST_CASE("oneDNN GEMM: a transposed B packed once for many slabs gives each slab's own bits",
          "[onednn]") {
  // x W^T as a Linear layer's forward calls it: 20 slabs of 208 rows, B packed once. Each
  // slab's rows computed by a call of their own (4 slabs: B not packed) are the same bits.
  // Where oneDNN runs fp32 matmul on its brgemm kernels (AVX-512); elsewhere B is never
  // packed and the slabs compare with themselves.
  OnednnGemm gemm(2);
  const GemmCase c = make_case(false, true, 4100, 96, 128, 0, 1.0f, 0.0f);
  const int64_t slab = onednn_gemm_slab_rows(c.M);
  REQUIRE(slab == 208);
  const GemmData d(c, 41);
  const std::vector<float> all = run_gemm(gemm, c, d);
  const std::string isa = dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa());
  INFO("oneDNN ISA " << isa);
  if (isa.find("avx512_core") != std::string::npos) CHECK(gemm.packed_calls() == 1);
  for (int64_t m0 = 0; m0 < c.M; m0 += slab) {
    const int64_t rows = std::min(slab, c.M - m0);
    std::vector<float> part(static_cast<size_t>(rows * c.ldc));
    REQUIRE(gemm.run(false, true, rows, c.N, c.K, 1.0f, d.A.data() + m0 * c.lda, c.lda,
                     d.B.data(), c.ldb, 0.0f, part.data(), c.ldc)
                .ok());
    INFO("rows " << m0 << ".." << m0 + rows);
    CHECK(same_bits(part, std::vector<float>(all.begin() + m0 * c.ldc,
                                             all.begin() + (m0 + rows) * c.ldc)));
  }
  const int64_t packed = gemm.packed_calls();
  (void)run_gemm(gemm, make_case(false, true, 2 * 64, 96, 128, 0, 1.0f, 0.0f), d);
  CHECK(gemm.packed_calls() == packed);  // 2 slabs: B read as it is
}

TEST_CASE("oneDNN GEMM: x W^T at a small batch, cut by columns, gives the row slabs' bits",
          "[onednn]") {
  // mlp's first layer: 128 x 512 x 784, two column slabs of 256. The same product over 300
  // rows (4 row slabs of 80) whose first 128 rows are these: where oneDNN runs fp32 matmul on
  // its brgemm kernels, the same kernels sum each element over K in the same order.
  OnednnGemm gemm(2);
  const GemmCase wide = make_case(false, true, 300, 512, 784, 0, 1.0f, 0.0f);
  const GemmData d(wide, 51);
  const std::vector<float> rows = run_gemm(gemm, wide, d);
  REQUIRE(gemm.column_calls() == 0);
  const GemmCase batch = make_case(false, true, 128, 512, 784, 0, 1.0f, 0.0f);
  // The epilogue sees every row once, after every column is written.
  std::vector<int> seen(static_cast<size_t>(batch.M), 0);
  bool complete = true;
  std::vector<float> cols(static_cast<size_t>(batch.M * batch.ldc), NAN);
  const SlabEpilogue after = [&](int64_t m0, int64_t n) {
    for (int64_t i = m0; i < m0 + n; ++i) {
      ++seen[static_cast<size_t>(i)];
      for (int64_t j = 0; j < batch.N; ++j) complete &= !std::isnan(cols[i * batch.ldc + j]);
    }
  };
  REQUIRE(gemm.run(false, true, batch.M, batch.N, batch.K, 1.0f, d.A.data(), batch.lda,
                   d.B.data(), batch.ldb, 0.0f, cols.data(), batch.ldc, &after)
              .ok());
  CHECK(gemm.column_calls() == 1);
  CHECK(complete);
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  const std::string isa = dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa());
  INFO("oneDNN ISA " << isa);
  if (isa.find("avx512_core") != std::string::npos)
    CHECK(same_bits(cols, std::vector<float>(rows.begin(), rows.begin() + batch.M * batch.ldc)));
}
