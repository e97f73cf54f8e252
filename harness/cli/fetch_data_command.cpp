#include "harness/cli/fetch_data_command.h"

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/cifar10.h"
#include "datasets/mnist.h"
#include "datasets/tinyshakespeare.h"
#include "harness/cli/cli.h"
#include "harness/cli/cli_options.h"
#include "harness/exit_codes.h"

namespace noeira {

namespace {

struct FetchOptions {
  std::string datasets = "mnist,tinyshakespeare,cifar10-subset";
  std::string data_dir;
};

// Where the data set's files are (the directory), or why not.
Result<std::filesystem::path> fetch(const std::string& name, const DataSource& src) {
  if (Result<MnistVariant> v = parse_mnist_variant(name)) {
    const MnistFiles f = mnist_files(*v);
    DataSource s = src;
    s.system_dirs = f.system_dirs;
    std::filesystem::path dir;
    for (const DataFile* file : {&f.train_images, &f.train_labels, &f.test_images, &f.test_labels}) {
      Result<std::filesystem::path> p = locate(*file, s);
      if (!p) return p.error();
      dir = p->parent_path();
    }
    return dir;
  }
  if (name == "cifar10") return locate_cifar10_batches(cifar10_files(), src);
  if (name == "cifar10-subset") {
    Result<ImageSplit> d = load_cifar10(Cifar10Variant::kSubset, src);
    if (!d) return d.error();
    for (const std::filesystem::path& dir : data_dirs(src)) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(dir / cifar10_subset_files().train.relative_path, ec))
        return dir / "cifar10";
    }
    return std::filesystem::path("cifar10");
  }
  if (name == "tinyshakespeare") {
    Result<std::filesystem::path> p = locate(tinyshakespeare_file(), src);
    if (!p) return p.error();
    return p->parent_path();
  }
  return make_error("unknown data set '" + name +
                    "'; use mnist, fashion-mnist, cifar10, cifar10-subset or tinyshakespeare");
}

}  // namespace

std::function<int()> add_fetch_data_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "fetch-data", "Find or download (sha256-checked, into the cache) the data sets the tests need");
  auto o = std::make_shared<FetchOptions>();
  cmd->add_option("--datasets", o->datasets,
                  "Comma-separated data sets (default mnist,tinyshakespeare,cifar10-subset)");
  cmd->add_option("--data-dir", o->data_dir, "Directory searched first (default: $NOEIRA_DATA, then the cache)");
  return [cmd, o]() {
    if (!cmd->parsed()) return kNotThisCommand;
    DataSource src;
    if (!o->data_dir.empty()) src.data_dir = o->data_dir;
    std::printf("data: looking in");
    for (const std::filesystem::path& d : data_dirs(src)) std::printf(" %s", d.c_str());
    std::printf(" (downloads go to the last%s)\n", downloads_supported() ? "" : "; this build cannot download");
    std::fflush(stdout);
    std::vector<std::string> missing;
    std::stringstream names(o->datasets);
    std::string name;
    while (std::getline(names, name, ',')) {
      if (name.empty()) continue;
      Result<std::filesystem::path> where = fetch(name, src);
      if (where) {
        std::printf("  %-16s ok (%s)\n", name.c_str(), where->c_str());
      } else {
        std::printf("  %-16s MISSING: %s\n", name.c_str(), where.error().message.c_str());
        missing.push_back(name);
      }
      std::fflush(stdout);
    }
    if (missing.empty()) return kExitOk;
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    std::printf("missing: %s; the tests that read %s will fail. Put the files in a directory "
                "and point NOEIRA_DATA at it (the layout: <dir>/mnist/, <dir>/tinyshakespeare/, "
                "<dir>/cifar10/)\n",
                list.c_str(), missing.size() == 1 ? "it" : "them");
    return kExitFailure;
  };
}

}  // namespace noeira
