// Automatic mixed precision policies (DESIGN.md rule 6). NoAMP is plain fp32. BF16Policy
// is bf16-only true autocast: fp32 master weights and optimizer state, bf16 weight copies
// refreshed after every optimizer step, activations stored in bf16, GEMMs with bf16
// inputs and fp32 accumulation, softmax/norm/loss math in fp32, no loss scaling.
#pragma once
#include <cstdint>
#include <string>

#include "nn/error.h"
#include "nn/tensor.h"

namespace noeira {

enum class AmpPolicy : uint8_t { kNoAMP, kBF16 };
inline constexpr AmpPolicy NoAMP = AmpPolicy::kNoAMP;
inline constexpr AmpPolicy BF16Policy = AmpPolicy::kBF16;

// The dtype activations flow in between modules under a policy.
constexpr DType flow_dtype(AmpPolicy p) { return p == AmpPolicy::kBF16 ? DType::kBF16 : DType::kF32; }
inline const char* amp_name(AmpPolicy p) { return p == AmpPolicy::kBF16 ? "bf16" : "fp32"; }
inline Result<AmpPolicy> parse_amp(const std::string& s) {
  if (s == "fp32") return AmpPolicy::kNoAMP;
  if (s == "bf16") return AmpPolicy::kBF16;
  return make_error("dtype '" + s + "' is not fp32 or bf16");
}

}  // namespace noeira
