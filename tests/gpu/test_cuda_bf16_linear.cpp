// bf16 Linear passes on CUDA whose outputs cuBLASLt writes itself (split from
// test_cuda_bf16.cpp, whose bound they share: tests/gpu/bf16_match.h).
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include <algorithm>
#include <cstdio>

#include "tests/gpu/bf16_match.h"
#include "tests/gpu/gpu_rig.h"
#endif

using namespace noeira;
using namespace noeira::test;

// ---- bf16 outputs straight from cuBLASLt (kernels/cuda/gemm_lt_choice.h) ----
//
// Linear's bf16 outputs (y, dx) are the fp32 K-sum (+ fp32 bias, activation) rounded
// once. On the GPU cuBLASLt stores them itself where the buffers are 16-byte aligned
// (offset 0 here), and the fp32 path (GEMM into acc, then bias_act or cast) runs where they
// are not (offset 1 element). Both sum in cuBLASLt's order, the CPU in oneDNN's, so the
// bound against the CPU is this file's "close": normwise < 1e-2, no NaN and >= 99% of the
// elements with the CPU's bits. A second rounding anywhere (bf16 split-K partials, the
// bias added after rounding) would leave far fewer than 99% the same.

#if defined(NOEIRA_WITH_CUDA)
namespace {

struct LinearDims {
  int64_t M, N, K;
};
// N = 13: an odd row stride; N = 65: TinyShakespeare's
// vocabulary (the logits' row stride is odd, their start aligned); 256 x 1536 x 384:
// gpt's MLP.
const LinearDims kLinearDims[] = {{1, 1, 1},   {7, 13, 5},      {33, 64, 100},
                                  {64, 65, 128}, {128, 512, 784}, {256, 1536, 384}};

}  // namespace
#endif

TEST_CASE("cuda: bf16 linear_forward straight from cuBLASLt is one rounding of the CPU's",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 1800;
  for (const LinearDims& d : kLinearDims) {
    const auto [M, N, K] = d;
    const std::vector<bf16_t> x0 = random_bf16(M * K, seed++);
    const std::vector<bf16_t> W0 = random_bf16(N * K, seed++);
    const std::vector<float> b0 = random_floats(N, seed++);
    DeviceArray<bf16_t> x(gpu, x0), W(gpu, W0);
    DeviceArray<float> b(gpu, b0), acc(gpu, M * N);
    for (int64_t offset : {int64_t{0}, int64_t{1}}) {
      const size_t total = static_cast<size_t>(M * N + offset);
      for (Act act : {Act::kNone, Act::kReLU, Act::kGELU}) {
        for (bool with_bias : {false, true}) {
          INFO("M " << M << " N " << N << " K " << K << " offset " << offset << " act "
                    << int(act) << " bias " << with_bias);
          const bool gelu = act == Act::kGELU;
          std::vector<bf16_t> y_cpu(total, 0);
          std::vector<float> acc_cpu(M * N), dact_cpu(total, 0.0f);
          cpu.linear_forward(view_of(x0), view_of(W0), with_bias ? b0.data() : nullptr,
                             view_of(y_cpu, offset), gelu ? view_of(dact_cpu, offset) : View{},
                             acc_cpu.data(), M, N, K, act);
          DeviceArray<bf16_t> y(gpu, total), y_again(gpu, total);
          DeviceArray<float> dact(gpu, total);
          const CudaOps::LtCounts before = cuda_ops(gpu).lt_counts();
          gpu.ops->linear_forward(x.view(), W.view(), with_bias ? b.get() : nullptr,
                                  y.view(offset), gelu ? dact.view(offset) : View{}, acc.get(), M,
                                  N, K, act);
          const CudaOps::LtCounts after = cuda_ops(gpu).lt_counts();
          // The path taken: cuBLASLt's bf16 store for identity/ReLU on aligned buffers,
          // the fp32 path for the rest. A refusal (one stderr note per shape, counted)
          // also takes the fp32 path; the model's shapes (multiples of 8) must not see one.
          const bool direct = offset == 0 && !gelu;
          CHECK(after.bf16_direct - before.bf16_direct + after.refused - before.refused ==
                (direct ? 1 : 0));
          if (N % 8 == 0 && K % 8 == 0) CHECK(after.refused == before.refused);
          const std::vector<bf16_t> got = y.download();
          check_bf16_match(got, y_cpu, true);
          // The derivative at the product rounded to bf16: the GEMMs' orders differ, so a
          // few pre-activations round to neighbouring bf16 values.
          if (gelu) CHECK(rel_error(dact.download(), dact_cpu) < 1e-2);
          // One algorithm per shape key: the same bits again.
          gpu.ops->linear_forward(x.view(), W.view(), with_bias ? b.get() : nullptr,
                                  y_again.view(offset), gelu ? dact.view(offset) : View{},
                                  acc.get(), M, N, K, act);
          CHECK(y_again.download() == got);
        }
      }
    }
  }
#endif
}

TEST_CASE("cuda: bf16 linear_backward_data straight from cuBLASLt is one rounding of the "
          "CPU's",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 1900;
  for (const LinearDims& d : kLinearDims) {
    const auto [M, N, K] = d;  // dx (M, K) = dz (M, N) W (N, K)
    const std::vector<bf16_t> dz0 = random_bf16(M * N, seed++);
    const std::vector<bf16_t> W0 = random_bf16(N * K, seed++);
    DeviceArray<bf16_t> dz(gpu, dz0), W(gpu, W0);
    DeviceArray<float> acc(gpu, M * K);
    for (int64_t offset : {int64_t{0}, int64_t{1}}) {
      INFO("M " << M << " N " << N << " K " << K << " offset " << offset);
      const size_t total = static_cast<size_t>(M * K + offset);
      std::vector<bf16_t> dx_cpu(total, 0);
      std::vector<float> acc_cpu(M * K);
      cpu.linear_backward_data(view_of(dz0), view_of(W0), view_of(dx_cpu, offset),
                               acc_cpu.data(), M, N, K, {});
      DeviceArray<bf16_t> dx(gpu, total);
      const CudaOps::LtCounts before = cuda_ops(gpu).lt_counts();
      gpu.ops->linear_backward_data(dz.view(), W.view(), dx.view(offset), acc.get(), M, N, K, {});
      const CudaOps::LtCounts after = cuda_ops(gpu).lt_counts();
      CHECK(after.bf16_direct - before.bf16_direct + after.refused - before.refused ==
            (offset == 0 ? 1 : 0));
      if (N % 8 == 0 && K % 8 == 0) CHECK(after.refused == before.refused);
      check_bf16_match(dx.download(), dx_cpu, true);
    }
    // An fp32 dx from bf16 inputs (an fp32 input cast at the boundary): the gemm op's
    // fp32 result, no rounding.
    std::vector<float> dxf_cpu(M * K);
    cpu.linear_backward_data(view_of(dz0), view_of(W0), view_of(dxf_cpu), nullptr, M, N, K, {});
    DeviceArray<float> dxf(gpu, M * K);
    gpu.ops->linear_backward_data(dz.view(), W.view(), dxf.view(), nullptr, M, N, K, {});
    CHECK(rel_error(dxf.download(), dxf_cpu) < 1e-5);
  }
#endif
}

TEST_CASE("cuda: cuBLASLt's GELU into bf16 (lt_gelu_bf16) against the CPU's bf16 GELU bound",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  // CudaOptions::lt_gelu_bf16 is off by default because cuBLASLt's GELU is its own code
  // (kernels/cuda/gemm_lt_choice.h). This measures it: if the bound holds on the machine,
  // the option may become the default; the line printed says by how much.
  Result<Backend> made = make_cuda_backend(CudaOptions{.lt_gelu_bf16 = true});
  REQUIRE(made.ok());
  Backend gpu = std::move(made).value();
  CpuOps cpu(1);
  uint32_t seed = 2000;
  double worst_error = 0.0, worst_same = 1.0;
  for (const LinearDims& d : kLinearDims) {
    const auto [M, N, K] = d;
    // Inputs of gpt's spread: pre-activations of a few units, both signs.
    const std::vector<bf16_t> x0 = random_bf16(M * K, seed++, -2.0f, 2.0f);
    const std::vector<bf16_t> W0 = random_bf16(N * K, seed++, -0.1f, 0.1f);
    const std::vector<float> b0 = random_floats(N, seed++);
    DeviceArray<bf16_t> x(gpu, x0), W(gpu, W0);
    DeviceArray<float> b(gpu, b0), acc(gpu, M * N);
    for (bool with_bias : {false, true}) {
      INFO("M " << M << " N " << N << " K " << K << " bias " << with_bias);
      const size_t n = static_cast<size_t>(M * N);
      // Without a dact (cuBLASLt's epilogues write none), so that cuBLASLt's GELU runs.
      std::vector<bf16_t> y_cpu(n, 0);
      std::vector<float> acc_cpu(n);
      cpu.linear_forward(view_of(x0), view_of(W0), with_bias ? b0.data() : nullptr,
                         view_of(y_cpu), View{}, acc_cpu.data(), M, N, K, Act::kGELU);
      DeviceArray<bf16_t> y(gpu, n);
      const CudaOps::LtCounts before = cuda_ops(gpu).lt_counts();
      gpu.ops->linear_forward(x.view(), W.view(), with_bias ? b.get() : nullptr, y.view(),
                              View{}, acc.get(), M, N, K, Act::kGELU);
      const CudaOps::LtCounts after = cuda_ops(gpu).lt_counts();
      // No GELU input kept, so no aux row-stride rule: cuBLASLt is asked at every N.
      CHECK(after.bf16_direct - before.bf16_direct + after.refused - before.refused == 1);
      if (N % 8 == 0 && K % 8 == 0) CHECK(after.refused == before.refused);
      const std::vector<bf16_t> got = y.download();
      const std::vector<float> g = to_f32(got), w = to_f32(y_cpu);
      worst_error = std::max(worst_error, rel_error(g, w));
      if (n >= 1000) worst_same = std::min(worst_same, same_bits_fraction(got, y_cpu));
      check_bf16_match(got, y_cpu, true);
    }
  }
  std::printf("cuBLASLt GELU into bf16 against the CPU: worst normwise error %.3g, worst "
              "same-bits fraction %.5f (bound: < 1e-2, >= 0.99)\n",
              worst_error, worst_same);
#endif
}

TEST_CASE("cuda: bf16 linear passes from cuBLASLt replayed from a graph give the eager bytes",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  for (bool lt_gelu : {false, true}) {
    INFO("lt_gelu_bf16 " << lt_gelu);
    Result<Backend> made = make_cuda_backend(CudaOptions{.lt_gelu_bf16 = lt_gelu});
    REQUIRE(made.ok());
    Backend gpu = std::move(made).value();
    const int64_t M = 256, C = 384, H = 1536;  // gpt's MLP: C -> H (GELU) -> C
    const std::vector<bf16_t> x0 = random_bf16(M * C, 2100, -2.0f, 2.0f);
    const std::vector<bf16_t> W1 = random_bf16(H * C, 2101, -0.1f, 0.1f);
    const std::vector<bf16_t> W2 = random_bf16(C * H, 2102, -0.1f, 0.1f);
    const std::vector<float> b1 = random_floats(H, 2103), b2 = random_floats(C, 2104);
    DeviceArray<bf16_t> x(gpu, x0), w1(gpu, W1), w2(gpu, W2);
    DeviceArray<float> bias1(gpu, b1), bias2(gpu, b2), acc(gpu, M * H);
    struct Outputs {
      Outputs(Backend& g, int64_t M, int64_t C, int64_t H)
          : h(g, M * H), dact(g, M * H), y(g, M * C), dh(g, M * H), dx(g, M * C) {}
      DeviceArray<bf16_t> h;
      DeviceArray<float> dact;
      DeviceArray<bf16_t> y, dh, dx;
    };
    Outputs eager(gpu, M, C, H), captured(gpu, M, C, H);
    // fc (GELU, its derivative kept), proj (bias, no act), then the input gradients of both
    // as a chained MLP takes them (proj's times fc's derivative), the backward fed with y as
    // its incoming gradient (any bf16 values do).
    const auto step = [&](Outputs& o) {
      gpu.ops->linear_forward(x.view(), w1.view(), bias1.get(), o.h.view(), o.dact.view(),
                              acc.get(), M, H, C, Act::kGELU);
      gpu.ops->linear_forward(o.h.view(), w2.view(), bias2.get(), o.y.view(), View{}, acc.get(),
                              M, C, H, Act::kNone);
      gpu.ops->linear_backward_data(o.y.view(), w2.view(), o.dh.view(), acc.get(), M, C, H,
                                    o.dact.view());
      gpu.ops->linear_backward_data(o.dh.view(), w1.view(), o.dx.view(), acc.get(), M, H, C, {});
    };
    step(eager);  // eager first: every shape's algorithm chosen before the capture
    const CudaOps::LtCounts before = cuda_ops(gpu).lt_counts();
    CHECK(before.refused == 0);
    // fc keeps its derivative, which no cuBLASLt epilogue writes: the GEMM and bias_act,
    // with lt_gelu_bf16 or without.
    CHECK(before.bf16_direct == 3);
    REQUIRE(gpu.stream->begin_capture().ok());
    step(captured);
    Result<std::unique_ptr<StepGraph>> graph = gpu.stream->end_capture();
    REQUIRE(graph.ok());
    for (int i = 0; i < 2; ++i) (*graph)->replay();
    CHECK(captured.h.download() == eager.h.download());
    CHECK(captured.dact.download() == eager.dact.download());
    CHECK(captured.y.download() == eager.y.download());
    CHECK(captured.dh.download() == eager.dh.download());
    CHECK(captured.dx.download() == eager.dx.download());
  }
#endif
}
