// CUDA's matrix products against the CPU reference (CpuOps): gemm in every transpose, and
// the Linear layer's passes (split from test_cuda_ops.cpp, whose bounds they keep: < 1e-3
// with TF32, K >= 32, see tf32_tolerance; < 1e-5 without).
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include <cstddef>
#include <vector>

#include "tests/gpu/gpu_rig.h"
#endif

using namespace noeira;
using namespace noeira::test;

TEST_CASE("cuda: gemm matches the CPU in every transpose, TF32 on and off", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  CpuOps cpu(1);
  struct Dims {
    int64_t M, N, K, pad;  // pad: extra leading-dimension elements
  };
  const Dims dims[] = {{1, 1, 1, 0}, {7, 13, 5, 3}, {33, 65, 129, 0}, {128, 512, 784, 0},
                       {784, 512, 128, 1}};
  uint32_t seed = 100;
  for (bool tf32 : {false, true}) {
    Backend gpu = gpu_backend(tf32);
    for (const Dims& d : dims) {
      const double tol = tf32 ? tf32_tolerance(d.K) : 1e-5;
      for (int t = 0; t < 4; ++t) {
        const bool ta = t & 1, tb = t & 2;
        for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{1.5f, 0.5f}}) {
          INFO("tf32 " << tf32 << " M " << d.M << " N " << d.N << " K " << d.K << " trans_a "
                       << ta << " trans_b " << tb << " alpha " << alpha << " beta " << beta);
          const int64_t lda = (ta ? d.M : d.K) + d.pad, ldb = (tb ? d.K : d.N) + d.pad,
                        ldc = d.N + d.pad;
          const std::vector<float> A0 = random_floats((ta ? d.K : d.M) * lda, seed++);
          const std::vector<float> B0 = random_floats((tb ? d.N : d.K) * ldb, seed++);
          const std::vector<float> C0 = random_floats(d.M * ldc, seed++);
          std::vector<float> C_cpu = C0;
          cpu.gemm(ta, tb, d.M, d.N, d.K, alpha, view_of(A0), lda, view_of(B0), ldb, beta,
                   C_cpu.data(), ldc);
          DeviceArray<float> A(gpu, A0), B(gpu, B0), C(gpu, C0);
          gpu.ops->gemm(ta, tb, d.M, d.N, d.K, alpha, A.view(), lda, B.view(), ldb, beta, C.get(),
                        ldc);
          CHECK(rel_error(C.download(), C_cpu) < tol);
        }
      }
    }
    // K == 0: C = beta * C.
    const std::vector<float> C0 = random_floats(5 * 7, seed++);
    DeviceArray<float> A(gpu, 1), B(gpu, 1), C(gpu, C0);
    gpu.ops->gemm(false, false, 5, 7, 0, 1.0f, A.view(), 1, B.view(), 7, 0.5f, C.get(), 7);
    std::vector<float> half = C0;
    for (float& v : half) v *= 0.5f;
    CHECK(same_bytes(C.download(), half));
  }
#endif
}

TEST_CASE("cuda: linear_forward epilogues, linear_backward_data and _params match the CPU",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  CpuOps cpu(1);
  struct Dims {
    int64_t M, N, K;
  };
  // N = 13: an odd row stride.
  const Dims dims[] = {{1, 1, 1}, {7, 13, 5}, {33, 64, 100}, {128, 512, 784}};
  uint32_t seed = 200;
  for (bool tf32 : {false, true}) {
    Backend gpu = gpu_backend(tf32);
    for (const Dims& d : dims) {
      const auto [M, N, K] = d;
      const std::vector<float> x0 = random_floats(M * K, seed++);
      const std::vector<float> W0 = random_floats(N * K, seed++);
      const std::vector<float> b0 = random_floats(N, seed++);
      DeviceArray<float> x(gpu, x0), W(gpu, W0), b(gpu, b0);
      for (Act act : {Act::kNone, Act::kReLU, Act::kGELU}) {
        for (bool with_bias : {false, true}) {
          INFO("tf32 " << tf32 << " M " << M << " N " << N << " K " << K << " act " << int(act)
                       << " bias " << with_bias);
          // GELU with its derivative kept (as LinearAct asks): the GEMM, then our bias_act
          // kernel (cuBLASLt's epilogues write no derivative); GELU without: cuBLASLt's GELU
          // epilogue, the same tanh formula as ours but its own code, hence the looser bound.
          const double tol = tf32 ? tf32_tolerance(K) : (act == Act::kGELU ? 1e-4 : 1e-5);
          const bool gelu = act == Act::kGELU;
          for (bool with_dact : {false, true}) {
            if (with_dact && !gelu) continue;  // only GELU layers keep it
            INFO("dact " << with_dact);
            std::vector<float> y_cpu(M * N), dact_cpu(with_dact ? M * N : 0);
            cpu.linear_forward(view_of(x0), view_of(W0), with_bias ? b0.data() : nullptr,
                               view_of(y_cpu), with_dact ? view_of(dact_cpu) : View{}, nullptr, M,
                               N, K, act);
            DeviceArray<float> y(gpu, M * N), dact(gpu, with_dact ? M * N : 0);
            gpu.ops->linear_forward(x.view(), W.view(), with_bias ? b.get() : nullptr, y.view(),
                                    with_dact ? dact.view() : View{}, nullptr, M, N, K, act);
            CHECK(rel_error(y.download(), y_cpu) < tol);
            // GELU' moves at most ~0.8 per unit of its input: the GEMM's bound, a little looser.
            if (with_dact)
              CHECK(rel_error(dact.download(), dact_cpu) < (tf32 ? 4 * tf32_tolerance(K) : 1e-5));
          }
        }
      }
      // Backward: dW and db accumulate into what is there.
      const std::vector<float> dz0 = random_floats(M * N, seed++);
      std::vector<float> dW_cpu = random_floats(N * K, seed++), db_cpu = random_floats(N, seed++);
      DeviceArray<float> dz(gpu, dz0), dW(gpu, dW_cpu), db(gpu, db_cpu);
      std::vector<std::byte> cpu_ws(cpu.linear_params_workspace_bytes(N, K, DType::kF32));
      cpu.linear_backward_params(view_of(dz0), view_of(x0), dW_cpu.data(), db_cpu.data(), M, N,
                                 K, cpu_ws.data(), false);
      REQUIRE(gpu.ops->linear_params_workspace_bytes(N, K, DType::kF32) == 0);
      gpu.ops->linear_backward_params(dz.view(), x.view(), dW.get(), db.get(), M, N, K, nullptr,
                                      false);
      INFO("backward tf32 " << tf32 << " M " << M << " N " << N << " K " << K);
      CHECK(rel_error(dW.download(), dW_cpu) < (tf32 ? tf32_tolerance(M) : 1e-5));
      CHECK(rel_error(db.download(), db_cpu) < 1e-5);
      // With overwrite_dw (a Linear layer's own weight): dW is the product alone.
      std::vector<float> dWo_cpu = random_floats(N * K, seed++), dbo_cpu = db_cpu;
      DeviceArray<float> dWo(gpu, random_floats(N * K, seed++)), dbo(gpu, dbo_cpu);
      cpu.linear_backward_params(view_of(dz0), view_of(x0), dWo_cpu.data(), dbo_cpu.data(), M,
                                 N, K, cpu_ws.data(), true);
      gpu.ops->linear_backward_params(dz.view(), x.view(), dWo.get(), dbo.get(), M, N, K,
                                      nullptr, true);
      CHECK(rel_error(dWo.download(), dWo_cpu) < (tf32 ? tf32_tolerance(M) : 1e-5));
      CHECK(rel_error(dbo.download(), dbo_cpu) < 1e-5);
      // dx = dz W, overwriting what is there: fp32, gemm's product.
      std::vector<float> dx_cpu(M * K);
      cpu.linear_backward_data(view_of(dz0), view_of(W0), view_of(dx_cpu), nullptr, M, N, K, {});
      DeviceArray<float> dx(gpu, random_floats(M * K, seed++));
      gpu.ops->linear_backward_data(dz.view(), W.view(), dx.view(), nullptr, M, N, K, {});
      CHECK(rel_error(dx.download(), dx_cpu) < (tf32 ? tf32_tolerance(N) : 1e-5));
      // Times a saved derivative (a chained Linear's dx): the product, then one multiply.
      const std::vector<float> dact0 = random_floats(M * K, seed++, -0.2f, 1.2f);
      std::vector<float> dxs_cpu(M * K);
      cpu.linear_backward_data(view_of(dz0), view_of(W0), view_of(dxs_cpu), nullptr, M, N, K,
                               view_of(dact0));
      DeviceArray<float> dact(gpu, dact0), dxs(gpu, random_floats(M * K, seed++));
      gpu.ops->linear_backward_data(dz.view(), W.view(), dxs.view(), nullptr, M, N, K,
                                    dact.view());
      CHECK(rel_error(dxs.download(), dxs_cpu) < (tf32 ? tf32_tolerance(N) : 1e-5));
    }
  }
#endif
}
