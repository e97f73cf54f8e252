#include "harness/suite/suite_manifest.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "harness/results/results.h"
#include "nn/atomic_file.h"
#include "nn/json_input.h"

namespace noeira {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json options_json(const SuiteOptions& o) {
  return {{"models", o.models}, {"dtypes", o.dtypes}, {"seeds", o.seeds}, {"quick", o.quick},
          {"target", o.target}, {"threads", o.threads}, {"twin", o.twin},
          {"python", o.python}, {"data_dir", o.data_dir}, {"twin_timeout", o.twin_timeout},
          {"order", o.order}};
}

json entry_json(const SuiteEntry& e) {
  return {{"model", e.model}, {"dtype", e.dtype}, {"dataset", e.dataset},
          {"variants", e.variants}, {"run_variants", e.run_variants}, {"status", e.status},
          {"reason", e.reason}, {"seconds", e.seconds}, {"results", e.name() + ".json"}};
}

[[noreturn]] void invalid(const json& v, const std::string& why) {
  throw json::type_error::create(302, why, &v);
}

// A name that becomes part of a file name: letters, digits, '-', '_', '.', '+', not
// starting with '.'.
std::string plain_name(const json& obj, const char* key) {
  const std::string s = obj.at(key).get<std::string>();
  const bool ok = !s.empty() && s.size() <= 64 && s[0] != '.' &&
                  std::all_of(s.begin(), s.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
                           c == '.' || c == '+';
                  });
  if (!ok) invalid(obj.at(key), std::string(key) + " '" + s + "' is not a plain name");
  return s;
}

double finite_number(const json& obj, const char* key, double lo) {
  const json& v = obj.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo)
    invalid(v, std::string(key) + " must be a number of at least " + std::to_string(lo));
  return v.get<double>();
}

SuiteOptions options_from(const json& j, SuiteOptions o) {
  o.models = j.at("models").get<std::vector<std::string>>();
  o.dtypes = j.at("dtypes").get<std::vector<std::string>>();
  o.seeds = integer_field<int>(j, "seeds");
  if (o.seeds < 1) invalid(j.at("seeds"), "seeds must be at least 1");
  o.quick = j.at("quick").get<bool>();
  o.target = j.at("target").get<std::string>();
  if (o.target != "cpu" && o.target != "gpu") invalid(j.at("target"), "target must be cpu or gpu");
  o.threads = integer_field<int>(j, "threads");
  if (o.threads < 0) invalid(j.at("threads"), "threads must be 0 (all) or more");
  o.twin = j.at("twin").get<std::vector<std::string>>();
  o.python = j.at("python").get<std::string>();
  o.data_dir = j.at("data_dir").get<std::string>();
  o.twin_timeout = finite_number(j, "twin_timeout", 0);
  // Optional: manifests written before --order ran the old, blocked order.
  o.order = j.contains("order") ? j.at("order").get<std::string>() : "blocked";
  if (o.order != "interleaved" && o.order != "blocked")
    invalid(j.at("order"), "order must be interleaved or blocked");
  return o;
}

SuiteEntry entry_from(const json& j) {
  SuiteEntry e;
  e.model = plain_name(j, "model");
  e.dtype = j.at("dtype").get<std::string>();
  if (e.dtype != "fp32" && e.dtype != "bf16") invalid(j.at("dtype"), "dtype must be fp32 or bf16");
  e.dataset = j.at("dataset").get<std::string>();
  e.variants = j.at("variants").get<std::string>();
  e.run_variants = j.at("run_variants").get<std::vector<std::string>>();
  e.status = j.at("status").get<std::string>();
  static const char* const kStatuses[] = {"pending", "running", "done", "failed", "interrupted"};
  if (std::find(std::begin(kStatuses), std::end(kStatuses), e.status) == std::end(kStatuses))
    invalid(j.at("status"), "status '" + e.status + "' is not one a suite writes");
  e.reason = j.at("reason").get<std::string>();
  e.seconds = finite_number(j, "seconds", 0);
  return e;
}

}  // namespace

Status write_suite_manifest(const fs::path& dir, const SuiteManifest& m) {
  json doc = {{"schema", kSuiteManifestSchema}, {"created", m.created},
              {"updated", utc_timestamp()}, {"options", options_json(m.options)},
              {"entries", json::array()}};
  for (const SuiteEntry& e : m.entries) doc["entries"].push_back(entry_json(e));
  return write_file_atomically(dir / "suite.json", doc.dump(2) + "\n", "the suite manifest");
}

Result<SuiteManifest> read_suite_manifest(const fs::path& dir, const SuiteOptions& defaults) {
  const fs::path path = dir / "suite.json";
  const std::string where = path.string() + ": ";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return make_error(dir.string() + " holds no readable suite manifest (suite.json); --resume "
                      "takes the directory a suite wrote (its --out-dir)");
  std::stringstream text;
  text << in.rdbuf();
  Result<json> parsed = parse_json_input(text.str());
  if (!parsed) return make_error(where + parsed.error().message);
  const json& doc = *parsed;
  if (!doc.is_object() || doc.value("schema", json()) != kSuiteManifestSchema)
    return make_error(where + "not a suite manifest (" + kSuiteManifestSchema +
                      "); --resume takes the directory of a suite");
  try {
    SuiteManifest m;
    m.options = options_from(doc.at("options"), defaults);
    m.created = doc.at("created").get<std::string>();
    if (!doc.at("entries").is_array()) invalid(doc.at("entries"), "entries must be a list");
    for (const json& e : doc.at("entries")) m.entries.push_back(entry_from(e));
    return m;
  } catch (const json::exception& e) {
    return make_error(where + e.what() + "; fix the field or start the suite afresh");
  }
}

}  // namespace noeira
