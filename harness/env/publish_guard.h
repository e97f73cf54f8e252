// Writing into the repository's results/ folder (published reports, stored baselines) is
// refused from a dirty tree unless --allow-dirty, so a published figure always names the
// commit it can be rebuilt from; with --allow-dirty the report says what let it through.
//
// A target is published when it lies under <checkout>/results/ of a checkout of this
// project (a folder holding .git and results/SCHEMA.md). Dirty means either of:
// - the binary was built from a tree with uncommitted changes (build_info()'s git_dirty,
//   which every results file it writes records);
// - the checkout has uncommitted changes to tracked files now, outside the target folder
//   (re-writing a published report changes tracked files in it; untracked files are
//   ignored).
#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/error.h"

namespace noeira {

struct TreeState {
  bool binary_dirty = false;
  std::string binary_sha;            // the commit the binary was built from ("" unknown)
  std::vector<std::string> changed;  // `git status --porcelain` lines of tracked files outside the target
  std::string error;                 // non-empty: git could not be asked (why)
};
// What the guard asks about a checkout and a target folder in it (tests inject their own).
using TreeStateFn = std::function<TreeState(const std::filesystem::path& checkout,
                                            const std::filesystem::path& target)>;
// This binary's build-time state and `git status` of the checkout.
TreeState current_tree_state(const std::filesystem::path& checkout, const std::filesystem::path& target);

// The checkout whose results/ folder holds `target` (which need not exist yet), or none.
std::optional<std::filesystem::path> published_checkout(const std::filesystem::path& target);

// Before anything is written into `target` (a folder): ok with no warnings when it is not
// published or the tree is clean; an error naming why and the fix ("commit first, or pass
// --allow-dirty") when dirty; with allow_dirty, ok with one warning per reason, for the
// report's environment block (ReportData::publish_warnings).
Result<std::vector<std::string>> guard_publish(const std::filesystem::path& target, bool allow_dirty,
                                               const TreeStateFn& state = current_tree_state);

// The folder name of a machine's published results: "nvidia-h200" (a GPU run: the device's
// name), "intel-fam6-m207-2core" (a CPU run: vendor, family, model, cores; the model name
// when the CPU has no id), from host_info() and device_info().
std::string machine_slug(const nlohmann::json& host, const nlohmann::json& device, bool gpu);

// `suite --publish`: <checkout>/results/<slug>/ of the checkout holding the current
// directory; an error when it is not inside one.
Result<std::filesystem::path> publish_dir(const std::string& slug);

}  // namespace noeira
