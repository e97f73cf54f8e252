// The twin's reply (reference/twin: one JSON object on its stdout, schema noeira-twin/1)
// read and checked, field by field, before anything uses it: the twin is another program,
// so a field of the wrong type is a failed twin, never an exception in the harness.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "harness/twin/twin.h"

namespace noeira {

// The outcome the reply states: ok with a result (available, or not with its reason), or
// a failure whose reason starts "twin failed: " and ends with `log_hint`. A result that is
// ok and available has step_times_ms (numbers) and losses (numbers or null), and every
// other field the harness reads (timer, wall_ms_per_step, median_step_ms, test_top1,
// test_loss, train_loss_last_epoch, steps) absent, null or of its type.
// nullopt when `out` holds no JSON object (the text from its first '{' to its last '}').
std::optional<TwinOutcome> parse_twin_reply(std::string_view out, const std::string& log_hint);

// The fields of any JSON as a reply: each one missing or of another type reads as absent
// (a loss that is not a number as null), so whatever the twin said makes a valid run.
TwinReply read_twin_reply(const nlohmann::json& reply);

// The reply of `--probe` (reference/twin/probe.py): its probe object {rows, math, ...}
// whose rows are objects with the numbers gemm_fp32_gflops and stream_gbs and
// gemm_bf16_gflops a number or null, ready for context.probes.twin; else {error} with one
// line ending with `log_hint`.
nlohmann::json parse_twin_probe_reply(std::string_view out, int exit_code, const std::string& log_hint);

}  // namespace noeira
