// Renders a generated HTML report in a real browser (Debian's Chromium, headless; installed
// by scripts/setup): saves a PNG screenshot next to the report, and reports what it can
// detect as broken — a JavaScript error, a page wider than the window, an SVG chart or a
// table that did not lay out. `skipped` (with the reason) only where Chromium is missing.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/run_binary.h"

namespace noeira::test {

struct BrowserCheck {
  bool skipped = false;
  std::string why;                    // why skipped
  std::vector<std::string> problems;  // empty: the page passed
  std::filesystem::path screenshot;
};

inline std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const CommandResult r = run_shell(std::string("command -v ") + name);
    if (r.exit_code == 0) return r.output.substr(0, r.output.find('\n'));
  }
  return "";
}

inline BrowserCheck check_in_chromium(const std::filesystem::path& html) {
  BrowserCheck out;
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    out.skipped = true;
    out.why = "no Chromium (scripts/setup installs Debian's chromium)";
    return out;
  }
  const std::filesystem::path page = std::filesystem::absolute(html);
  const std::string common = "'" + chromium + "' --headless --no-sandbox --disable-gpu "
                             "--hide-scrollbars --window-size=1200,2400 --enable-logging=stderr --v=0 ";
  // The screenshot, next to the report.
  out.screenshot = page;
  out.screenshot.replace_extension(".png");
  std::filesystem::remove(out.screenshot);
  const CommandResult shot =
      run_shell("timeout 120 " + common + "--screenshot='" + out.screenshot.string() + "' 'file://" +
                page.string() + "' 2>&1");
  if (!std::filesystem::exists(out.screenshot) || std::filesystem::file_size(out.screenshot) == 0)
    out.problems.push_back("no screenshot: " + shot.output.substr(0, 400));
  if (shot.output.find("Uncaught") != std::string::npos)
    out.problems.push_back("JavaScript error while rendering");
  // The layout checks run in a page that frames the report (same file:// origin).
  const std::filesystem::path checker = page.parent_path() / (page.stem().string() + ".check.html");
  std::ofstream(checker) << R"(<!DOCTYPE html><html><body><pre id="result">pending</pre>
<iframe id="f" style="width:1200px;height:2400px;border:0" src="file://)" << page.string() << R"("></iframe>
<script>
const problems = [];
window.addEventListener('error', e => problems.push('JavaScript error: ' + e.message));
document.getElementById('f').onload = () => {
  try {
    const d = document.getElementById('f').contentDocument, w = d.defaultView;
    w.addEventListener('error', e => problems.push('JavaScript error: ' + e.message));
    if (!d.querySelector('h1')) problems.push('no heading: the page did not render');
    if (d.documentElement.scrollWidth > w.innerWidth + 1)
      problems.push('wider than the window: ' + d.documentElement.scrollWidth + ' px');
    d.querySelectorAll('svg').forEach((s, i) => {
      const r = s.getBoundingClientRect();
      if (r.width < 50 || r.height < 20) problems.push('chart ' + i + ' has no size');
      if (!s.querySelector('line, rect, polyline, text')) problems.push('chart ' + i + ' is empty');
    });
    d.querySelectorAll('table').forEach((t, i) => {
      if (t.rows.length < 2) problems.push('table ' + i + ' has no rows');
      if (t.getBoundingClientRect().width < 50) problems.push('table ' + i + ' has no width');
    });
  } catch (e) { problems.push('cannot inspect the page: ' + e); }
  document.getElementById('result').textContent = problems.length ? problems.join('\n') : 'LAYOUT-OK';
};
</script></body></html>
)";
  const CommandResult dom = run_shell("timeout 120 " + common +
                                      "--allow-file-access-from-files --virtual-time-budget=10000 "
                                      "--dump-dom 'file://" + checker.string() + "' 2>/dev/null");
  std::filesystem::remove(checker);
  // (The script's own text holds the word too: match the result element.)
  if (dom.output.find("<pre id=\"result\">LAYOUT-OK</pre>") == std::string::npos) {
    const auto a = dom.output.find("<pre id=\"result\">"), b = dom.output.find("</pre>");
    out.problems.push_back(a != std::string::npos && b != std::string::npos
                               ? dom.output.substr(a + 17, b - a - 17)
                               : "the layout check did not run: " + dom.output.substr(0, 400));
  }
  return out;
}

}  // namespace noeira::test
