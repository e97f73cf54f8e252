// The profile as text: one row per category, each side's ms per step, share of its step
// and achieved rate (GFLOP/s where the category counts FLOPs, else GB/s), the attributed
// sum and the unattributed remainder; then each side's top ops.
#pragma once
#include <string>

#include "harness/results/profile_records.h"

namespace noeira {

std::string render_profile_table(const ProfileRecord& p);

}  // namespace noeira
