// Whether our seeds and the twin's agree: Welch's t-test on the final test loss of our
// eager variant (bf16 for a bf16 run) against the twin's eager mode.
#pragma once
#include <string>
#include <vector>

#include "harness/results/records.h"

namespace noeira {

// benchmarks[].seed_agreement (results/SCHEMA.md), or null when either side has fewer than
// two seeds that ran.
Nullable<SeedAgreementRecord> seed_agreement(const std::vector<VariantRecord>& variants,
                                             const std::string& dtype);

}  // namespace noeira
