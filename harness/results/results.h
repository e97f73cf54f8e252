// The results JSON (schema in results/SCHEMA.md): the contract between `run`, which
// writes it, and `compare` / `report`, which read it.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>

#include "harness/results/records.h"
#include "nn/error.h"

namespace noeira {

// The version `run` writes; readers accept every version from the oldest on (version 2
// added context.probes, the baseline probes: results/SCHEMA.md).
inline constexpr int kResultsSchemaVersion = 2;
inline constexpr int kOldestResultsSchemaVersion = 1;

// Reads and validates a results file. Errors name the file and, for schema problems,
// the field ("base.json: benchmarks[0].variants[1].runs: missing (an array)").
Result<nlohmann::json> read_results(const std::filesystem::path& path);
// The same file as records (harness/results/records.h): what report, compare and suite read.
Result<ResultsRecord> read_results_record(const std::filesystem::path& path);

// Structural validation: a schema_version this build reads, every required key present with the right
// type (nullable where the schema says so). The error names the field by its path.
Status validate_results(const nlohmann::json& results);

// Validates, then writes pretty-printed (2-space indent) via a temporary file and a
// rename, so a failed write never leaves a partial file at `path`.
Status write_results(const std::filesystem::path& path, const nlohmann::json& results);
Status write_results(const std::filesystem::path& path, const ResultsRecord& results);

// Now, as created_utc writes it: "2026-11-30T10:00:00Z".
std::string utc_timestamp();

}  // namespace noeira
