// Reading and writing single fields of the results JSON, shared by the two files that
// convert the records (results/records_json.cpp, results/context_json.cpp) and by nothing
// else: a reader of a validated file reads checked fields as they are, and the fields the
// validation leaves unchecked leniently (a value of another type reads as absent).
#pragma once
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "harness/results/records.h"

namespace noeira::json_fields {

using nlohmann::json;

// ---- Writing ----

// NaN and infinities cannot be written in JSON: null, as the schema says.
inline json number_or_null(const Nullable<double>& v) {
  return v && std::isfinite(*v) ? json(*v) : json(nullptr);
}

inline json string_or_null(const Nullable<std::string>& s) { return s ? json(*s) : json(nullptr); }

inline json numbers_or_nulls(const std::vector<Nullable<double>>& values) {
  json a = json::array();
  for (const Nullable<double>& v : values) a.push_back(number_or_null(v));
  return a;
}

// ---- Reading ----

// obj[key] when present and not null, else nullptr.
inline const json* field(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

inline Nullable<double> number(const json& obj, std::string_view key) {
  const json* v = field(obj, key);
  return v && v->is_number() ? Nullable<double>(v->get<double>()) : std::nullopt;
}

inline Optional<int64_t> integer(const json& obj, std::string_view key) {
  const json* v = field(obj, key);
  return v && v->is_number_integer() ? Optional<int64_t>(v->get<int64_t>()) : std::nullopt;
}

inline Nullable<std::string> string(const json& obj, std::string_view key) {
  const json* v = field(obj, key);
  return v && v->is_string() ? Nullable<std::string>(v->get<std::string>()) : std::nullopt;
}

// A value as a label: a string as it is, another value as JSON text, "" when absent.
inline std::string text(const json& obj, std::string_view key) {
  const json* v = field(obj, key);
  return !v ? "" : v->is_string() ? v->get<std::string>() : v->dump();
}

inline std::vector<double> numbers(const json& a) {
  std::vector<double> out;
  if (a.is_array())
    for (const json& x : a)
      if (x.is_number()) out.push_back(x.get<double>());
  return out;
}

inline std::vector<Nullable<double>> numbers_or_nulls(const json& a) {
  std::vector<Nullable<double>> out;
  if (a.is_array())
    for (const json& x : a) out.push_back(x.is_number() ? Nullable<double>(x.get<double>()) : std::nullopt);
  return out;
}

}  // namespace noeira::json_fields
