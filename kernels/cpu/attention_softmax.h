// The CPU attention's softmax over rows of a T x T matrix (kernels/cpu/attention.cpp runs
// them between its GEMMs). What each computes is written out in attention.cpp's header.
#pragma once
#include <cstdint>

#include "kernels/cpu/attention_plan.h"

namespace noeira::cpu_attention {

// The masked softmax of rows [i0, i1) of att (T columns), in place: row i's first
// visible(p, i) values become exp_approx(S - max) * (1 / sum), the rest 0.
void softmax_rows(const Plan& p, float* att, int64_t i0, int64_t i1);

// Rows [i0, i1) of datt (T columns) become dS in place, from att's rows: r_i = the lanes'
// sum of datt_ij att_ij, dS_ij = (att_ij (datt_ij - r_i)) scale for j < visible(p, i), else
// 0 (read by dk's GEMMs past the block's keys).
void softmax_backward_rows(const Plan& p, const float* att, float* ds, int64_t i0, int64_t i1,
                           float scale);

}  // namespace noeira::cpu_attention
