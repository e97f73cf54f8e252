// Products of sizes at plan time, saturating at INT64_MAX instead of overflowing (signed
// overflow is undefined behaviour). Recipe sizes are at most 2^24 each (models/recipe.h),
// so a product of two always fits; three or more may not, and a saturated product reaches
// MemoryPlan::reserve, which marks the plan overflowed and Arenas::allocate refuses it.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <limits>

namespace noeira {

// The product of [first, last).
inline int64_t sat_mul(const int64_t* first, const int64_t* last) {
  int64_t p = 1;
  for (; first != last; ++first)
    if (__builtin_mul_overflow(p, *first, &p)) return std::numeric_limits<int64_t>::max();
  return p;
}

inline int64_t sat_mul(std::initializer_list<int64_t> factors) {
  return sat_mul(factors.begin(), factors.end());
}

}  // namespace noeira
