// JSON from outside the program (recipes, checkpoint headers, results files, the twin's
// reply) parsed into a value every later step can walk: never an exception, and never
// nested deeper than kMaxJsonDepth, so that dumping or comparing it (both recursive)
// cannot run out of stack on a crafted file.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/error.h"

namespace noeira {

// The deepest nesting any of our files uses is 5; this leaves room for hand-made ones.
inline constexpr int kMaxJsonDepth = 64;

// The value, or an error saying why not: not JSON (with the byte offset and nlohmann's
// reason), a number out of range, or nested deeper than max_depth.
Result<nlohmann::json> parse_json_input(std::string_view text, int max_depth = kMaxJsonDepth);

// Integer fields, read strictly. nlohmann's get<int>() takes 12.5 as 12, and a floating
// value beyond the integer's range is undefined behaviour (a cast); here a field must be a
// JSON integer that fits its type. A misfit throws nlohmann's type_error naming the field,
// which the readers (load_recipe, read_checkpoint) catch and report.
template <class Int>
Int as_integer(const nlohmann::json& v, const std::string& name) {
  constexpr auto lo = std::numeric_limits<Int>::min();
  constexpr auto hi = std::numeric_limits<Int>::max();
  const bool fits =
      v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(hi)
      : v.is_number_integer() ? v.get<int64_t>() >= static_cast<int64_t>(lo) &&
                                    v.get<int64_t>() <= static_cast<int64_t>(hi)
                              : false;
  if (!fits)
    throw nlohmann::json::type_error::create(
        302, name + " must be an integer from " + std::to_string(lo) + " to " +
                 std::to_string(hi) + ", not " + (v.is_number() ? v.dump() : v.type_name()),
        &v);
  return v.is_number_unsigned() ? static_cast<Int>(v.get<uint64_t>())
                                : static_cast<Int>(v.get<int64_t>());
}

// obj[key], which must be there (json::at's out_of_range otherwise).
template <class Int>
Int integer_field(const nlohmann::json& obj, const char* key) {
  return as_integer<Int>(obj.at(key), key);
}

// obj[key], or `fallback` when obj has no such key.
template <class Int>
Int integer_field(const nlohmann::json& obj, const char* key, Int fallback) {
  const auto it = obj.find(key);
  return it == obj.end() ? fallback : as_integer<Int>(*it, key);
}

inline std::vector<int64_t> integer_list(const nlohmann::json& v, const std::string& name) {
  if (!v.is_array())
    throw nlohmann::json::type_error::create(302, name + " must be a list of integers", &v);
  std::vector<int64_t> out;
  for (const auto& x : v) out.push_back(as_integer<int64_t>(x, name + " entry"));
  return out;
}

}  // namespace noeira
