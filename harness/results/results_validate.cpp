// Structural validation of a results JSON, schema versions 1 and 2 (results/SCHEMA.md).
// Checks presence and types, not values: a file that passes can be read by compare and
// report without further type checks.
#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>

#include "harness/results/results.h"

namespace noeira {

namespace {

using nlohmann::json;

enum class Type { kString, kBool, kInteger, kNumber, kObject, kArray };
enum class Null { kNo, kYes };

const char* describe(Type t) {
  switch (t) {
    case Type::kString:
      return "a string";
    case Type::kBool:
      return "true or false";
    case Type::kInteger:
      return "an integer";
    case Type::kNumber:
      return "a number";
    case Type::kObject:
      return "an object";
    case Type::kArray:
      return "an array";
  }
  return "?";
}

bool has_type(const json& v, Type t) {
  switch (t) {
    case Type::kString:
      return v.is_string();
    case Type::kBool:
      return v.is_boolean();
    case Type::kInteger:
      return v.is_number_integer();
    case Type::kNumber:
      return v.is_number();
    case Type::kObject:
      return v.is_object();
    case Type::kArray:
      return v.is_array();
  }
  return false;
}

std::string member(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string element(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

Status check_type(const json& v, const std::string& path, Type t, Null null = Null::kNo) {
  if (v.is_null() && null == Null::kYes) return {};
  if (has_type(v, t)) return {};
  return make_error(path + ": must be " + describe(t) + (null == Null::kYes ? " or null" : "") +
                    " (found " + v.type_name() + ")");
}

// obj[key] exists and has type t (or is null, when allowed).
Status require(const json& obj, const std::string& path, std::string_view key, Type t,
               Null null = Null::kNo) {
  const std::string p = member(path, key);
  const auto it = obj.find(key);
  if (it == obj.end())
    return make_error(p + ": missing (" + describe(t) + (null == Null::kYes ? " or null" : "") +
                      ")");
  return check_type(*it, p, t, null);
}

Status require_each(const json& obj, const std::string& path,
                    std::initializer_list<std::string_view> keys, Type t) {
  for (std::string_view k : keys) NOEIRA_TRY(require(obj, path, k, t));
  return {};
}

Status require_one_of(const json& obj, const std::string& path, std::string_view key,
                      std::initializer_list<std::string_view> allowed) {
  NOEIRA_TRY(require(obj, path, key, Type::kString));
  const std::string v = obj.at(key).get<std::string>();
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return {};
  std::string list;
  for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  return make_error(member(path, key) + ": '" + v + "' is not one of " + list);
}

// obj[key] is an array whose elements all have type t (nullable elements when allowed).
Status require_array_of(const json& obj, const std::string& path, std::string_view key, Type t,
                        Null null_elements = Null::kNo) {
  NOEIRA_TRY(require(obj, path, key, Type::kArray));
  const json& a = obj.at(key);
  for (size_t i = 0; i < a.size(); ++i)
    NOEIRA_TRY(check_type(a[i], element(member(path, key), i), t, null_elements));
  return {};
}

Status check_host(const json& h, const std::string& path) {
  NOEIRA_TRY(require_each(h, path, {"cpu_model", "os", "hostname"}, Type::kString));
  return require_each(h, path, {"cores", "memory_bytes"}, Type::kInteger);
}

Status check_build(const json& b, const std::string& path) {
  NOEIRA_TRY(require_each(b, path, {"compiler", "build_type", "blas"}, Type::kString));
  return require(b, path, "cuda_built", Type::kBool);
}

// Only `available` is required; the rest is recorded as far as the device could be
// queried, in whatever form CUDA reports it (versions are integers). The two fields the
// readers use, name and reason, must be strings when present.
Status check_device(const json& d, const std::string& path) {
  NOEIRA_TRY(require(d, path, "available", Type::kBool));
  for (std::string_view k : {"reason", "name"})
    if (d.contains(k)) NOEIRA_TRY(check_type(d.at(k), member(path, k), Type::kString, Null::kYes));
  return {};
}

Status check_twin(const json& t, const std::string& path) {
  NOEIRA_TRY(require(t, path, "python", Type::kString));
  NOEIRA_TRY(require(t, path, "torch_version", Type::kString, Null::kYes));
  NOEIRA_TRY(require(t, path, "available", Type::kBool));
  return require(t, path, "reason", Type::kString, Null::kYes);
}

// The baseline probes (version 2; harness/env/baseline_probe.h): per side either {error} or
// rows of numbers (threads an integer, or null on a GPU).
Status check_probes(const json& p, const std::string& path) {
  for (std::string_view side : {"ours", "twin"}) {
    if (!p.contains(side)) continue;
    const std::string sp = member(path, side);
    NOEIRA_TRY(check_type(p.at(side), sp, Type::kObject));
    const json& s = p.at(side);
    if (s.contains("error")) {
      NOEIRA_TRY(require(s, sp, "error", Type::kString));
      continue;
    }
    NOEIRA_TRY(require(s, sp, "rows", Type::kArray));
    for (size_t i = 0; i < s.at("rows").size(); ++i) {
      const json& row = s.at("rows")[i];
      const std::string rp = element(member(sp, "rows"), i);
      NOEIRA_TRY(check_type(row, rp, Type::kObject));
      NOEIRA_TRY(require(row, rp, "threads", Type::kInteger, Null::kYes));
      NOEIRA_TRY(require_each(row, rp, {"gemm_fp32_gflops", "stream_gbs"}, Type::kNumber));
      // null: the side has no bf16 matmul on this machine (oneDNN below AVX-512).
      NOEIRA_TRY(require(row, rp, "gemm_bf16_gflops", Type::kNumber, Null::kYes));
    }
  }
  return {};
}

Status check_context(const json& c, const std::string& path, int64_t version) {
  NOEIRA_TRY(require_each(c, path, {"command_line", "git_sha"}, Type::kString));
  NOEIRA_TRY(require(c, path, "git_dirty", Type::kBool));
  NOEIRA_TRY(require(c, path, "host", Type::kObject));
  NOEIRA_TRY(check_host(c.at("host"), member(path, "host")));
  NOEIRA_TRY(require(c, path, "build", Type::kObject));
  NOEIRA_TRY(check_build(c.at("build"), member(path, "build")));
  NOEIRA_TRY(require(c, path, "device", Type::kObject));
  NOEIRA_TRY(check_device(c.at("device"), member(path, "device")));
  NOEIRA_TRY(require(c, path, "twin", Type::kObject));
  NOEIRA_TRY(check_twin(c.at("twin"), member(path, "twin")));
  if (version >= 2 || c.contains("probes")) {
    NOEIRA_TRY(require(c, path, "probes", Type::kObject));
    NOEIRA_TRY(check_probes(c.at("probes"), member(path, "probes")));
  }
  if (c.contains("warnings")) NOEIRA_TRY(require_array_of(c, path, "warnings", Type::kString));
  // Optional (absent in older files): the order the runs ran in.
  if (c.contains("run_order"))
    NOEIRA_TRY(require_one_of(c, path, "run_order", {"interleaved", "blocked"}));
  return {};
}

Status check_config(const json& c, const std::string& path) {
  NOEIRA_TRY(require_one_of(c, path, "target", {"cpu", "gpu"}));
  NOEIRA_TRY(require_one_of(c, path, "dtype", {"fp32", "bf16"}));
  NOEIRA_TRY(require_array_of(c, path, "seeds", Type::kInteger));
  NOEIRA_TRY(require_each(c, path, {"steps", "warmup", "threads"}, Type::kInteger));
  NOEIRA_TRY(require(c, path, "quick", Type::kBool));
  NOEIRA_TRY(require(c, path, "stopping", Type::kObject));
  const std::string sp = member(path, "stopping");
  NOEIRA_TRY(require(c.at("stopping"), sp, "min_samples", Type::kInteger));
  return require_each(c.at("stopping"), sp, {"max_rel_noise", "max_seconds"}, Type::kNumber);
}

// {median_ms, q1_ms, q3_ms, cv, n}; cv is null when undefined (fewer than 2 samples).
Status check_timer_stats(const json& t, const std::string& path) {
  NOEIRA_TRY(require_each(t, path, {"median_ms", "q1_ms", "q3_ms"}, Type::kNumber));
  NOEIRA_TRY(require(t, path, "cv", Type::kNumber, Null::kYes));
  return require(t, path, "n", Type::kInteger);
}

// {wall, device, event}: each a timer object or null (not measured).
Status check_timers(const json& timers, const std::string& path, bool with_samples) {
  for (std::string_view name : {"wall", "device", "event"}) {
    NOEIRA_TRY(require(timers, path, name, Type::kObject, Null::kYes));
    const json& t = timers.at(name);
    if (t.is_null()) continue;
    const std::string tp = member(path, name);
    if (with_samples) NOEIRA_TRY(require_array_of(t, tp, "samples_ms", Type::kNumber));
    NOEIRA_TRY(check_timer_stats(t, tp));
  }
  return {};
}

// Optional (files written before it existed lack it); null when CUPTI did not run.
// {wall_on_ms, wall_off_ms, ratio (nullable)}, plus samples_on_ms in runs.
Status check_cupti_overhead(const json& parent, const std::string& path, bool with_samples) {
  const auto it = parent.find("cupti_overhead");
  if (it == parent.end() || it->is_null()) return {};
  const std::string p = member(path, "cupti_overhead");
  NOEIRA_TRY(check_type(*it, p, Type::kObject));
  NOEIRA_TRY(require_each(*it, p, {"wall_on_ms", "wall_off_ms"}, Type::kNumber));
  NOEIRA_TRY(require(*it, p, "ratio", Type::kNumber, Null::kYes));
  if (with_samples) NOEIRA_TRY(require_array_of(*it, p, "samples_on_ms", Type::kNumber));
  return {};
}

// Optional (absent in older files): the run's place in the run order and the machine's
// load over its measured window.
Status check_run_order_and_load(const json& r, const std::string& path) {
  if (r.contains("sequence")) NOEIRA_TRY(require(r, path, "sequence", Type::kInteger));
  if (!r.contains("cpu_load")) return {};
  NOEIRA_TRY(require(r, path, "cpu_load", Type::kObject));
  const std::string p = member(path, "cpu_load");
  for (std::string_view k : {"steal_fraction", "loadavg_1m_start", "loadavg_1m_end"})
    NOEIRA_TRY(require(r.at("cpu_load"), p, k, Type::kNumber, Null::kYes));
  return {};
}

Status check_run(const json& r, const std::string& path) {
  NOEIRA_TRY(require(r, path, "seed", Type::kInteger));
  NOEIRA_TRY(require(r, path, "timers", Type::kObject));
  NOEIRA_TRY(check_timers(r.at("timers"), member(path, "timers"), true));
  NOEIRA_TRY(check_cupti_overhead(r, path, true));
  for (std::string_view k : {"test_top1", "test_loss", "train_loss"})
    NOEIRA_TRY(require(r, path, k, Type::kNumber, Null::kYes));
  // A diverged step's loss is NaN, which JSON can only hold as null.
  NOEIRA_TRY(require_array_of(r, path, "losses", Type::kNumber, Null::kYes));
  NOEIRA_TRY(check_run_order_and_load(r, path));
  // Optional: memory, time_to_target, energy (harness/results/resource_records.h).
  NOEIRA_TRY(check_run_resources(r, path));
  return require(r, path, "steps", Type::kInteger);
}

// {mean, std, n, olympic_mean}; mean/std null when there is nothing to average.
Status check_score_summary(const json& s, const std::string& path) {
  NOEIRA_TRY(require(s, path, "mean", Type::kNumber, Null::kYes));
  NOEIRA_TRY(require(s, path, "std", Type::kNumber, Null::kYes));
  NOEIRA_TRY(require(s, path, "n", Type::kInteger));
  return require(s, path, "olympic_mean", Type::kNumber, Null::kYes);
}

Status check_summary(const json& s, const std::string& path) {
  NOEIRA_TRY(require(s, path, "timers", Type::kObject));
  NOEIRA_TRY(check_timers(s.at("timers"), member(path, "timers"), false));
  NOEIRA_TRY(check_cupti_overhead(s, path, false));
  for (std::string_view k : {"test_top1", "test_loss"}) {
    NOEIRA_TRY(require(s, path, k, Type::kObject, Null::kYes));
    if (!s.at(k).is_null()) NOEIRA_TRY(check_score_summary(s.at(k), member(path, k)));
  }
  return {};
}

Status check_variant(const json& v, const std::string& path) {
  NOEIRA_TRY(require(v, path, "name", Type::kString));
  if (v.at("name").get<std::string>().empty()) return make_error(member(path, "name") + ": empty");
  NOEIRA_TRY(require_one_of(v, path, "impl", {"noeira", "torch"}));
  NOEIRA_TRY(require_one_of(v, path, "dtype", {"fp32", "bf16"}));
  NOEIRA_TRY(require_one_of(v, path, "target", {"cpu", "gpu"}));
  NOEIRA_TRY(require(v, path, "available", Type::kBool));
  NOEIRA_TRY(require(v, path, "unavailable_reason", Type::kString, Null::kYes));
  NOEIRA_TRY(require(v, path, "error", Type::kString, Null::kYes));
  NOEIRA_TRY(require(v, path, "runs", Type::kArray));
  const json& runs = v.at("runs");
  for (size_t i = 0; i < runs.size(); ++i) {
    NOEIRA_TRY(check_type(runs[i], element(member(path, "runs"), i), Type::kObject));
    NOEIRA_TRY(check_run(runs[i], element(member(path, "runs"), i)));
  }
  NOEIRA_TRY(require(v, path, "summary", Type::kObject));
  NOEIRA_TRY(check_summary(v.at("summary"), member(path, "summary")));
  // Optional (files before it have none): the seeds planned but not finished.
  if (v.contains("pending_seeds"))
    NOEIRA_TRY(require_array_of(v, path, "pending_seeds", Type::kInteger));
  return {};
}

Status check_parity(const json& p, const std::string& path) {
  NOEIRA_TRY(require(p, path, "steps", Type::kInteger));
  NOEIRA_TRY(require_each(p, path, {"max_rel_dev", "bound"}, Type::kNumber));
  NOEIRA_TRY(require(p, path, "passed", Type::kBool));
  if (p.contains("early_steps")) {  // optional: the recipe's tighter bound for the first steps
    NOEIRA_TRY(require(p, path, "early_steps", Type::kInteger));
    NOEIRA_TRY(require(p, path, "early_max_rel_dev", Type::kNumber, Null::kYes));
    NOEIRA_TRY(require(p, path, "early_bound", Type::kNumber));
  }
  NOEIRA_TRY(require_array_of(p, path, "ours", Type::kNumber, Null::kYes));
  return require_array_of(p, path, "twin", Type::kNumber, Null::kYes);
}

Status check_seed_agreement(const json& s, const std::string& path) {
  NOEIRA_TRY(require_each(s, path, {"test", "note"}, Type::kString));
  NOEIRA_TRY(require_each(s, path, {"statistic", "p_value"}, Type::kNumber));
  return require(s, path, "agree", Type::kBool);
}

bool is_hex16(const std::string& s) {
  return s.size() == 16 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c) != 0; });
}

Status check_benchmark(const json& b, const std::string& path) {
  NOEIRA_TRY(require_each(b, path, {"model", "dataset", "recipe_hash"}, Type::kString));
  if (!is_hex16(b.at("recipe_hash").get<std::string>()))
    return make_error(member(path, "recipe_hash") + ": must be 16 hex digits");
  NOEIRA_TRY(require(b, path, "recipe", Type::kObject));
  NOEIRA_TRY(require(b, path, "variants", Type::kArray));
  const json& variants = b.at("variants");
  const std::string vp = member(path, "variants");
  for (size_t i = 0; i < variants.size(); ++i) {
    NOEIRA_TRY(check_type(variants[i], element(vp, i), Type::kObject));
    NOEIRA_TRY(check_variant(variants[i], element(vp, i)));
  }
  NOEIRA_TRY(require(b, path, "parity", Type::kObject, Null::kYes));
  if (!b.at("parity").is_null()) NOEIRA_TRY(check_parity(b.at("parity"), member(path, "parity")));
  NOEIRA_TRY(require(b, path, "seed_agreement", Type::kObject, Null::kYes));
  if (!b.at("seed_agreement").is_null())
    NOEIRA_TRY(check_seed_agreement(b.at("seed_agreement"), member(path, "seed_agreement")));
  if (b.contains("profile") && !b.at("profile").is_null())
    NOEIRA_TRY(check_profile(b.at("profile"), member(path, "profile")));
  return {};
}

}  // namespace

Status validate_results(const json& results) {
  if (!results.is_object())
    return make_error(std::string("not a results object (the top level is ") + results.type_name() +
                      ")");
  const auto version = results.find("schema_version");
  if (version == results.end())
    return make_error("schema_version: missing (not a noeira-bench results file?)");
  if (!version->is_number_integer() || version->get<int64_t>() < kOldestResultsSchemaVersion ||
      version->get<int64_t>() > kResultsSchemaVersion)
    return make_error("schema_version " + version->dump() +
                      " is not supported (this noeira-bench reads versions " +
                      std::to_string(kOldestResultsSchemaVersion) + " to " +
                      std::to_string(kResultsSchemaVersion) + ")");
  NOEIRA_TRY(require_each(results, "", {"tool", "tool_version", "created_utc"}, Type::kString));
  NOEIRA_TRY(require(results, "", "context", Type::kObject));
  NOEIRA_TRY(check_context(results.at("context"), "context", version->get<int64_t>()));
  NOEIRA_TRY(require(results, "", "config", Type::kObject));
  NOEIRA_TRY(check_config(results.at("config"), "config"));
  NOEIRA_TRY(require(results, "", "benchmarks", Type::kArray));
  // Optional (absent: complete): a run writes "partial" after every finished seed and
  // "complete" at the end; stopped_by names the signal that stopped it.
  if (results.contains("status"))
    NOEIRA_TRY(require_one_of(results, "", "status", {"complete", "partial"}));
  if (results.contains("stopped_by"))
    NOEIRA_TRY(require(results, "", "stopped_by", Type::kString, Null::kYes));
  const json& benchmarks = results.at("benchmarks");
  for (size_t i = 0; i < benchmarks.size(); ++i) {
    NOEIRA_TRY(check_type(benchmarks[i], element("benchmarks", i), Type::kObject));
    NOEIRA_TRY(check_benchmark(benchmarks[i], element("benchmarks", i)));
  }
  return {};
}

}  // namespace noeira
