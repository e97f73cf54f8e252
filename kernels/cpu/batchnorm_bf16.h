// BatchNorm's element loops for bf16 storage in AVX-512 registers (kernels/cpu/batchnorm.cpp
// calls them per (b, c) run of S values): the channel sums of x, the forward's normalise and
// epilogue, the backward's gradient sums and dx. The same operations in the same order as
// batchnorm.cpp's generic loops (norm.h's expressions; batchnorm_sums.h's span lanes: value
// s of a run in lane s % 32, fp32 spans of 256 values added into double lanes), so the same
// bits; tests/unit/test_cpu_batchnorm_bf16.cpp compares them on every special value.
//
// Why: GCC vectorised the generic loops, but widened bf16 with cross-lane moves, rounded to
// bf16 in ~20 integer instructions per 16 values and spilled the span lanes at every block;
// at 1 thread on Zen 4, resnet20's bf16 normalisation ran at 9-15 GB/s, 27 ms of a 190 ms
// step. Here a run is read as even and odd elements (a shift and a mask: value 2j in lane j
// of one register, 2j + 1 of the other), bf16 is rounded by AVX512-BF16's vcvtne2ps2bf16
// (round to nearest even and quiet NaNs, as f32_to_bf16; it flushes subnormal inputs, so a
// register with one takes f32_to_bf16's integer steps instead), and two span blocks run side
// by side.
#pragma once
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/norm.h"

namespace noeira::cpu_batchnorm {

// Whether the loops run here: an AVX-512 build on a CPU with AVX512-BF16, and runs of a
// multiple of 32 values (other shapes keep the generic loops). Read once.
bool bf16_loops_available();
inline bool bf16_loops_take(int64_t spatial) {
  return spatial > 0 && spatial % 32 == 0 && bf16_loops_available();
}

// One channel's 32 span lanes of two sums between runs, in double, in the loops' own lane
// order. Zero-initialised; total() adds the lanes in lane order 0 .. 31, as chunk_sums.
struct Bf16Lanes {
  alignas(64) double a[32] = {};
  alignas(64) double b[32] = {};
  ChannelSums total() const;
};

// A channel's forward coefficients: y = (x - mean) * invstd * gamma + beta (batchnorm_apply).
struct Bf16Norm {
  float mean, invstd, gamma, beta;
};

// lanes += the run's sums of x and x * x.
void bf16_run_sums(const bf16_t* x, int64_t S, Bf16Lanes& lanes);

// y = the forward's output of the run: batchnorm_apply, then batchnorm_epilogue<bf16_t>
// with the residual's run (or none) and ReLU (or no activation), rounded to bf16.
void bf16_run_forward(const bf16_t* x, const bf16_t* residual, bool relu, int64_t S,
                      const Bf16Norm& n, bf16_t* y);

// lanes += the run's sums of g and g * xhat, xhat = batchnorm_xhat(x): g = dy, or with
// `relu` (n.gamma and n.beta those of the forward) dy times batchnorm_relu_grad<bf16_t>.
void bf16_run_grad_sums(const bf16_t* dy, const bf16_t* x, bool relu, int64_t S,
                        const Bf16Norm& n, Bf16Lanes& lanes);

// dx of the run: batchnorm_dx of g (as above) with the channel's gradient means m, its
// gamma * invstd precomputed (the scalar form's first product), rounded.
void bf16_run_dx(const bf16_t* dy, const bf16_t* x, bool relu, int64_t S, const Bf16Norm& n,
                 float gamma_invstd, GradMeans m, bf16_t* dx);

}  // namespace noeira::cpu_batchnorm
