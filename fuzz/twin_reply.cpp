// The twin's reply on its stdout (reference/twin; harness/twin/twin_reply.h): as a --probe
// reply (parse_twin_probe_reply, then a results file holding it) and parse_twin_reply,
// then, for a run that it accepts, what `run` makes of it: twin_run's run, a variant
// summarised over it, placed in a results file (fuzz/inputs/results-mlp.json, written by
// the tool) that must still pass validate_results. Contract: a failure with its reason, or
// a result whose run is a valid results run; never a crash, a hang or undefined behaviour.
//
// Input: the twin's stdout. Cap: no allocation above 64 MiB, RSS below 1 GiB for inputs
// up to 64 KiB.
// libFuzzer flags: -max_len=65536 -malloc_limit_mb=64 -rss_limit_mb=1024 -timeout=10

#include "fuzz/fuzz_support.h"
#include "harness/env/baseline_probe.h"
#include "harness/results/summary.h"
#include "harness/results/results.h"
#include "harness/twin/twin_reply.h"
#include "harness/twin/twin_runs.h"

namespace {

nlohmann::json results_template() {
  const auto path = std::filesystem::path(NOEIRA_SOURCE_DIR) / "fuzz" / "inputs" / "results-mlp.json";
  auto results = noeira::read_results(path);
  if (!results || results->at("benchmarks").empty()) {
    std::fprintf(stderr, "fuzz-twin_reply: %s\n",
                 results ? "no benchmarks in the template" : results.error().message.c_str());
    std::exit(2);
  }
  return std::move(results).value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::json base = results_template();
  const std::string hint = " (log: twin.log)";
  const std::string text(noeira::fuzz::text_of(noeira::fuzz::Bytes(data, size)));
  // The same bytes as a --probe reply: an error ending with the hint, or a probe object
  // that a results file (schema 2) records as context.probes.twin, and whose warnings and
  // text render.
  const nlohmann::json probe = noeira::parse_twin_probe_reply(text, 0, hint);
  if (const auto e = probe.find("error"); e != probe.end()) {
    FUZZ_EXPECT(e->is_string() && e->get<std::string>().size() >= hint.size());
  } else {
    nlohmann::json results = base;
    results["schema_version"] = 2;
    results["context"]["probes"] = {{"twin", probe}};
    const noeira::Status valid = noeira::validate_results(results);
    if (!valid) std::fprintf(stderr, "%s\n", valid.error().message.c_str());
    FUZZ_EXPECT(valid);
    (void)noeira::probe_warnings(results["context"]["probes"]);
    (void)noeira::render_probes(results["context"]["probes"]);
  }
  const std::optional<noeira::TwinOutcome> o = noeira::parse_twin_reply(text, hint);
  if (!o) return 0;
  if (!o->ok) {
    FUZZ_EXPECT(o->reason.rfind("twin failed: ", 0) == 0);
    FUZZ_EXPECT(o->reason.size() >= hint.size() &&
                o->reason.compare(o->reason.size() - hint.size(), hint.size(), hint) == 0);
    return 0;
  }
  FUZZ_EXPECT(o->result.is_object());
  if (!o->available) return 0;

  noeira::VariantRecord variant = noeira::new_variant("twin:eager", "torch", "fp32", "cpu");
  variant.runs.push_back(noeira::twin_run(o->reply, 1));
  variant.summary = noeira::summarize_runs(variant.runs);
  nlohmann::json results = base;
  results["benchmarks"][0]["variants"] = nlohmann::json::array({nlohmann::json(variant)});
  const noeira::Status valid = noeira::validate_results(results);
  if (!valid) std::fprintf(stderr, "%s\n", valid.error().message.c_str());
  FUZZ_EXPECT(valid);
  return 0;
}
