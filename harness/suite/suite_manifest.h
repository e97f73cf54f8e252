// The suite's manifest, <dir>/suite.json: the options it was started with and one entry per
// `run`, with its status. Rewritten atomically after every change, so `suite --resume` can
// finish a suite that was interrupted or killed; read back strictly, since a hand-edited
// file's names become file names and its numbers become a run's arguments.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/error.h"

namespace noeira {

inline constexpr const char* kSuiteManifestSchema = "noeira-suite/1";

struct SuiteOptions {
  std::vector<std::string> models;  // empty: the default list for the target
  std::vector<std::string> dtypes = {"fp32", "bf16"};
  int seeds = 3;
  bool quick = false;
  std::string target = "auto";
  int threads = 0;
  std::vector<std::string> twin = {"eager", "compiled", "graphs"};
  std::string python, data_dir;
  double twin_timeout = 900;
  std::string order = "interleaved";  // each run's --order (harness/run/run_order.h)
  std::string out_dir, resume;  // command line only: not in the manifest
  bool publish = false;         // results/<machine>/ of the checkout (harness/env/publish_guard.h)
  bool allow_dirty = false;     // write into results/ from a dirty tree anyway
};

// One `run` of the suite.
struct SuiteEntry {
  std::string model, dtype;
  std::string dataset;             // an override of the recipe's, or ""
  std::string variants = "all";    // which of ours compete in the table: fp32, bf16, all
  std::vector<std::string> run_variants;  // --variants for the run ("" = its default)
  // pending | running | done | failed | interrupted (stopped by a signal; its results
  // file, partial, is kept: set aside as <name>.interrupted-<k>.json when it is re-run)
  std::string status = "pending";
  std::string reason;
  double seconds = 0;
  std::string name() const { return model + "-" + dtype; }
  std::string label() const { return model + " " + (variants == "all" ? dtype : variants); }
};

struct SuiteManifest {
  SuiteOptions options;
  std::string created;  // UTC, when the suite was first started
  std::vector<SuiteEntry> entries;
};

// Writes dir/suite.json atomically, with "updated" set to now.
Status write_suite_manifest(const std::filesystem::path& dir, const SuiteManifest& m);

// Reads dir/suite.json; `defaults` supplies what the file does not hold (out_dir, resume).
// Errors, one line naming the file: missing, not JSON, not a suite manifest, a field
// missing or of the wrong type, an integer that is not a whole number in range, a model
// or dtype that is not a plain name (they become file names), an unknown status.
Result<SuiteManifest> read_suite_manifest(const std::filesystem::path& dir,
                                          const SuiteOptions& defaults);

}  // namespace noeira
