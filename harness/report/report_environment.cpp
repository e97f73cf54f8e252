#include "harness/report/report_environment.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "harness/report/report_probes.h"

namespace noeira {

namespace {

namespace fs = std::filesystem;

// The folder every file is in ("" when they are not in one), for shorter names.
std::string common_folder(const std::vector<ReportContext>& contexts) {
  if (contexts.empty()) return "";
  const fs::path first = fs::path(contexts[0].source).parent_path();
  for (const ReportContext& c : contexts)
    if (fs::path(c.source).parent_path() != first) return "";
  return first.string();
}

std::string files_line(const std::vector<ReportContext>& contexts, const std::string& folder) {
  if (contexts.empty()) return "no results files";
  std::string first = contexts[0].created, last = first;
  for (const ReportContext& c : contexts) {
    first = std::min(first, c.created);
    last = std::max(last, c.created);
  }
  const std::string created = first == last ? "created " + first : "created " + first + " to " + last;
  if (contexts.size() == 1) return contexts[0].source + ", " + created;
  std::string names;
  for (const ReportContext& c : contexts)
    names += (names.empty() ? "" : ", ") +
             (folder.empty() ? c.source : fs::path(c.source).filename().string());
  return std::to_string(contexts.size()) + " results files" +
         (folder.empty() ? "" : " in " + folder + "/") + " (" + names + "), " + created;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

EnvironmentBlock environment_block(const ReportData& d) {
  EnvironmentBlock b;
  const std::string folder = common_folder(d.contexts);
  auto short_name = [&](const ReportContext& c) {
    return folder.empty() ? c.source : fs::path(c.source).filename().string();
  };
  b.files = files_line(d.contexts, folder);

  // Shared or differing, field by field (every context has the same names, in one order).
  std::vector<std::string> differing;
  if (!d.contexts.empty())
    for (const EnvField& f : d.contexts[0].fields) {
      const bool same = std::all_of(d.contexts.begin(), d.contexts.end(),
                                    [&](const ReportContext& c) { return c.field(f.name) == f.value; });
      if (same) b.shared.push_back(f);
      else differing.push_back(f.name);
    }
  b.per_file.title = "Environment by file (the fields that differ)";
  if (!differing.empty()) {
    b.per_file.rows.push_back({"file"});
    b.per_file.rows[0].insert(b.per_file.rows[0].end(), differing.begin(), differing.end());
    b.per_file.right_aligned.assign(differing.size() + 1, false);
    for (const ReportContext& c : d.contexts) {
      std::vector<std::string> row = {short_name(c)};
      for (const std::string& name : differing) row.push_back(c.field(name));
      b.per_file.rows.push_back(std::move(row));
    }
  } else if (d.contexts.size() > 1) {
    b.same_note = "All " + std::to_string(d.contexts.size()) + " results files share the environment above.";
  }

  // A dirty tree: the figures cannot be rebuilt from the commit named.
  std::vector<std::string> dirty_files;
  std::vector<std::string> dirty_shas;
  for (const ReportContext& c : d.contexts)
    if (c.git_dirty) {
      dirty_files.push_back(short_name(c));
      if (std::find(dirty_shas.begin(), dirty_shas.end(), c.git) == dirty_shas.end()) dirty_shas.push_back(c.git);
    }
  if (!dirty_files.empty())
    b.dirty.push_back("built from a dirty tree (uncommitted changes): git " + join_names(dirty_shas) +
                      (dirty_files.size() < d.contexts.size() ? " in " + join_names(dirty_files) : "") +
                      "; the figures may not be reproducible from that commit");
  b.dirty.insert(b.dirty.end(), d.publish_warnings.begin(), d.publish_warnings.end());

  // Each warning once, with the files that have it when not all do.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> files_of;
  for (const ReportContext& c : d.contexts)
    for (const std::string& w : c.warnings) {
      if (!files_of.count(w)) order.push_back(w);
      std::vector<std::string>& files = files_of[w];
      if (std::find(files.begin(), files.end(), short_name(c)) == files.end()) files.push_back(short_name(c));
    }
  for (const std::string& w : order)
    b.warnings.push_back(files_of[w].size() < d.contexts.size() ? join_names(files_of[w]) + ": " + w : w);

  b.probes = probe_table(d);
  return b;
}

}  // namespace noeira
