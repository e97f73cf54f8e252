// The report's environment block (harness/report/report_environment.h) and its comparison
// charts (harness/report/report_charts.h) on results built from the typed records: the
// shared environment once at the top, a per-file table of only what differs, the dirty
// tree's warning, the ratio chart's intervals and noisy marks, the memory chart where the
// files recorded memory and none (no error) where they did not, and the page in Chromium.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/report/report_environment.h"
#include "harness/report/report_html.h"
#include "harness/report/report_markdown.h"
#include "tests/support/chromium_check.h"
#include "tests/support/run_binary.h"
#include "tests/support/synthetic_results.h"
#include "tests/support/temp_dir.h"

using namespace noeira;
using namespace noeira::test;
using Catch::Matchers::Contains;

namespace {

const std::filesystem::path kSource = NOEIRA_SOURCE_DIR;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> names(const std::vector<EnvField>& fields) {
  std::vector<std::string> out;
  for (const EnvField& f : fields) out.push_back(f.name);
  return out;
}

ReportData report_of(const std::vector<SyntheticSpec>& specs) {
  std::vector<LoadedResults> files;
  for (size_t i = 0; i < specs.size(); ++i)
    files.push_back({"suite/" + specs[i].model + "-" + std::to_string(i) + ".json", synthetic_results(specs[i])});
  return build_report_data(files);
}

}  // namespace

TEST_CASE("report environment: the synthetic records are a valid results file", "[report]") {
  TempDir dir;
  SyntheticSpec s;
  s.noisy_variant = s.memory = true;
  const Status written = write_results(dir / "r.json", synthetic_results(s));
  INFO((written ? std::string("ok") : written.error().message));
  REQUIRE(written.ok());
  CHECK(read_results_record(dir / "r.json").ok());
}

TEST_CASE("report environment: what every file shares is shown once, at the top", "[report]") {
  SyntheticSpec a, b;
  a.model = "mlp";
  b.model = "conv2d-mnist";
  b.created = "2026-11-30T11:00:00Z";
  b.fp32_gflops = 160.0;  // probes are measurements: they vary from file to file
  const ReportData d = report_of({a, b});
  const EnvironmentBlock env = environment_block(d);
  CHECK(names(env.shared) == std::vector<std::string>{"host", "CPU", "CPU math kernels", "build", "device", "driver / CUDA",
                                                      "git", "twin", "twin math kernels"});
  CHECK(env.per_file.rows.empty());
  CHECK(env.same_note == "All 2 results files share the environment above.");
  CHECK_THAT(env.files, Contains("2 results files in suite/") && Contains("2026-11-30T10:00:00Z to 2026-11-30T11:00:00Z"));
  // The probes: one row per side, the median over the files and their range.
  REQUIRE(env.probes.rows.size() == 3);
  CHECK(env.probes.rows[1] == std::vector<std::string>{"ours", "1", "155.0 (150.0-160.0)", "380.0", "30.0",
                                                       "oneDNN 2.6.3 (avx512_core_bf16)"});

  const std::string md = render_markdown(d);
  CHECK(count(md, "## Environment") == 1);
  CHECK(count(md, "built without CUDA (test)") == 1);
  CHECK(count(md, "Test CPU 3000") == 1);
  CHECK_THAT(md, Contains("| twin math kernels | torch 2.5.1: MKL 2024.2, oneDNN 3.5.3 |"));
  CHECK_THAT(md, Contains("All 2 results files share the environment above."));
  CHECK_THAT(md, !Contains("Environment by file"));
  CHECK(md.find("## Environment") < md.find("## Step time"));  // at the top
  const std::string html = render_html(d);
  CHECK(count(html, "built without CUDA (test)") == 1);
  CHECK_THAT(html, Contains("<table class=\"env\">"));
}

TEST_CASE("report environment: a field that differs is in the per-file table, shared ones are not",
          "[report]") {
  SyntheticSpec a, b;
  b.cpu_model = "Test CPU 4000";
  const ReportData d = report_of({a, b});
  const EnvironmentBlock env = environment_block(d);
  REQUIRE(env.per_file.rows.size() == 3);
  CHECK(env.per_file.rows[0] == std::vector<std::string>{"file", "CPU"});
  CHECK_THAT(env.per_file.rows[1][1], Contains("Test CPU 3000"));
  CHECK_THAT(env.per_file.rows[2][1], Contains("Test CPU 4000"));
  CHECK(env.same_note.empty());
  const std::vector<std::string> shared = names(env.shared);
  CHECK(std::find(shared.begin(), shared.end(), "CPU") == shared.end());
  CHECK(std::find(shared.begin(), shared.end(), "device") != shared.end());

  const std::string md = render_markdown(d);
  CHECK_THAT(md, Contains("### Environment by file (the fields that differ)"));
  CHECK_THAT(md, Contains("| file | CPU |"));
  CHECK(count(md, "built without CUDA (test)") == 1);  // shared: not repeated per file
  CHECK(count(md, "Test CPU 4000") == 1);
}

TEST_CASE("report environment: a binary built from a dirty tree is a warning in the block", "[report]") {
  SyntheticSpec clean, dirty;
  dirty.git_dirty = true;
  dirty.model = "conv2d-mnist";
  const ReportData d = report_of({clean, dirty});
  const std::string md = render_markdown(d);
  CHECK_THAT(md, Contains("> **WARNING** built from a dirty tree (uncommitted changes): git 0123456789ab (dirty) "
                          "in conv2d-mnist-1.json"));
  CHECK_THAT(md, Contains("| file | git |"));  // it differs between the two files
  CHECK(md.find("WARNING") < md.find("## Step time"));
  const std::string html = render_html(d);
  CHECK_THAT(html, Contains("<p class=\"warning\"><strong>WARNING</strong> built from a dirty tree (uncommitted changes)"));
  // One file: the block has no per-file table and no "share" line.
  const EnvironmentBlock one = environment_block(report_of({dirty}));
  CHECK(one.per_file.rows.empty());
  CHECK(one.same_note.empty());
  REQUIRE(one.dirty.size() == 1);
  CHECK_THAT(one.dirty[0], !Contains(" in "));
}

TEST_CASE("report charts: the ratio chart has an interval per row, a noisy mark and the line at 1",
          "[report]") {
  SyntheticSpec a, b;
  a.noisy_variant = true;
  b.model = "conv2d-mnist";
  const std::string html = render_html(report_of({a, b}));
  // Rows: mlp eager, mlp bf16 (noisy), conv2d-mnist eager; each over twin:eager.
  CHECK(count(html, "<g class=\"ratio-row") == 3);
  CHECK(count(html, "class=\"interval\"") == 3);
  CHECK(count(html, "<g class=\"ratio-row noisy\">") == 1);
  CHECK(count(html, "class=\"noisy-mark\"") == 1);
  CHECK(count(html, "class=\"reference\"") == 1);
  CHECK_THAT(html, Contains("mlp (cpu, fp32) bf16 / twin:eager"));
  CHECK_THAT(html, Contains("0.50x ["));  // eager at 10 ms over the twin's 20 ms
  CHECK_THAT(html, !Contains("Peak memory"));  // no memory records
}

TEST_CASE("report charts: the memory chart is drawn from memory records, and skipped without them",
          "[report]") {
  SyntheticSpec s;
  s.memory = true;
  const std::string html = render_html(report_of({s}));
  CHECK_THAT(html, Contains("<h2>Peak memory, ours vs the twin</h2>"));
  CHECK(count(html, "<g class=\"memory-bar\">") == 2);  // eager, twin:eager
  CHECK(count(html, "<rect class=\"plan\"") == 5);      // our plan's five categories (not the empty one)
  CHECK_THAT(html, !Contains("plan: bf16 weights"));
  CHECK_THAT(html, Contains("plan: optimizer state") && Contains("260.0 MiB") && Contains("900.0 MiB"));

  // A published file of an older binary: no memory, no probes' twin math; no chart, no error.
  TempDir dir;
  const auto old = kSource / "results" / "intel-fam6-m207-2core" / "mlp-bf16.json";
  const CommandResult r = run_bench("report '" + old.string() + "' --html '" + (dir / "old.html").string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string page = read(dir / "old.html");
  CHECK_THAT(page, !Contains("Peak memory") && Contains("class=\"interval\""));
  CHECK(count(r.output, "no NVIDIA driver / no GPU") == 1);
}

TEST_CASE("report charts: the page with every chart lays out in Chromium", "[report]") {
  TempDir dir;
  SyntheticSpec a, b;
  a.noisy_variant = a.memory = true;
  a.git_dirty = true;
  b.model = "conv2d-mnist <&>";  // escaped everywhere
  b.cpu_model = "Test CPU <b>4000</b>";
  b.memory = true;
  const std::filesystem::path page = dir / "report.html";
  const std::string html = render_html(report_of({a, b}));
  CHECK_THAT(html, !Contains("<b>4000") && Contains("&lt;b&gt;4000") && !Contains("<&>"));
  std::ofstream(page) << html;
  const BrowserCheck browser = check_in_chromium(page);
  if (browser.skipped) {
    WARN("SKIP the browser check: " << browser.why);
  } else {
    for (const std::string& p : browser.problems) FAIL_CHECK("report.html: " << p);
    CHECK(std::filesystem::exists(dir / "report.png"));
  }
}
