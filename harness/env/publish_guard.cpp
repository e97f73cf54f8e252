#include "harness/env/publish_guard.h"

#include <cctype>
#include <sstream>

#include "harness/env/host_info.h"
#include "harness/twin/subprocess.h"

namespace noeira {

namespace {

namespace fs = std::filesystem;

bool is_checkout(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / ".git", ec) && fs::is_regular_file(dir / "results" / "SCHEMA.md", ec);
}

// `target` made absolute and normal, with the parts that exist resolved (links).
fs::path resolved(const fs::path& target) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(target, ec), ec);
  return ec ? fs::absolute(target).lexically_normal() : p;
}

bool under(const fs::path& p, const fs::path& folder) {
  const fs::path rel = p.lexically_relative(folder);
  return !rel.empty() && *rel.begin() != "..";
}

std::string slug(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown" : out;
}

std::string changed_text(const std::vector<std::string>& changed) {
  std::string s;
  for (size_t i = 0; i < changed.size() && i < 5; ++i) s += (i ? ", " : "") + changed[i];
  if (changed.size() > 5) s += ", and " + std::to_string(changed.size() - 5) + " more";
  return s;
}

}  // namespace

TreeState current_tree_state(const fs::path& checkout, const fs::path& target) {
  TreeState s;
  const nlohmann::json build = build_info();
  s.binary_dirty = build.value("git_dirty", false);
  s.binary_sha = build.value("git_sha", std::string());
  const std::string rel = target.lexically_relative(checkout).generic_string();
  const ProcessResult r = run_process({"git", "-C", checkout.string(), "status", "--porcelain",
                                       "--untracked-files=no", "--", ".", ":(exclude)" + rel},
                                      "/dev/null", 60.0);
  if (!r.started || r.exit_code != 0) {
    s.error = r.started ? "git status exited " + std::to_string(r.exit_code) : r.error;
    return s;
  }
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() < 4) continue;
    std::string status = line.substr(0, 2);  // "XY path": index and work-tree status
    status.erase(0, status.find_first_not_of(' '));
    s.changed.push_back(status + " " + line.substr(3));
  }
  return s;
}

std::optional<fs::path> published_checkout(const fs::path& target) {
  const fs::path p = resolved(target);
  for (fs::path dir = p.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (is_checkout(dir) && under(p, dir / "results")) return dir;
    if (dir == dir.root_path()) break;
  }
  return std::nullopt;
}

Result<std::vector<std::string>> guard_publish(const fs::path& target, bool allow_dirty, const TreeStateFn& state) {
  const std::optional<fs::path> checkout = published_checkout(target);
  if (!checkout) return std::vector<std::string>{};
  const TreeState s = state(*checkout, resolved(target));
  std::vector<std::string> reasons;
  if (s.binary_dirty)
    reasons.push_back("this binary was built from a dirty tree (uncommitted changes; git " +
                      (s.binary_sha.empty() ? std::string("unknown") : s.binary_sha.substr(0, 12)) + ")");
  if (!s.changed.empty())
    reasons.push_back("the checkout " + checkout->string() + " has uncommitted changes to tracked files (" +
                      changed_text(s.changed) + ")");
  if (!s.error.empty()) reasons.push_back("cannot tell whether " + checkout->string() + " is clean: " + s.error);
  if (reasons.empty()) return std::vector<std::string>{};
  if (!allow_dirty) {
    std::string why;
    for (const std::string& r : reasons) why += (why.empty() ? "" : "; ") + r;
    return make_error("refusing to write into " + target.string() + " (the repository's results/ folder): " + why +
                      ": commit first (and rebuild), or pass --allow-dirty");
  }
  std::vector<std::string> warnings;
  for (const std::string& r : reasons)
    warnings.push_back("written with --allow-dirty from a dirty tree (uncommitted changes): " + r);
  return warnings;
}

std::string machine_slug(const nlohmann::json& host, const nlohmann::json& device, bool gpu) {
  if (gpu) return slug(device.value("name", std::string("gpu")));
  const std::string cores = std::to_string(host.value("cores", 0)) + "core";
  // "GenuineIntel family 6 model 207"
  std::istringstream id(host.value("cpu_id", std::string()));
  std::string vendor, family_word, model_word;
  long family = -1, model = -1;
  if (id >> vendor >> family_word >> family >> model_word >> model && family_word == "family" && model_word == "model") {
    const std::string v = vendor == "GenuineIntel" ? "intel" : vendor == "AuthenticAMD" ? "amd" : slug(vendor);
    return v + "-fam" + std::to_string(family) + "-m" + std::to_string(model) + "-" + cores;
  }
  return slug(host.value("cpu_model", std::string("cpu"))) + "-" + cores;
}

Result<fs::path> publish_dir(const std::string& machine) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  for (fs::path dir = cwd; !dir.empty(); dir = dir.parent_path()) {
    if (is_checkout(dir)) return dir / "results" / machine;
    if (dir == dir.root_path()) break;
  }
  return make_error("--publish: " + cwd.string() +
                    " is not inside a noeira-bench checkout (a folder with .git and results/SCHEMA.md); "
                    "run it from the repository, or name the folder with --out-dir");
}

}  // namespace noeira
