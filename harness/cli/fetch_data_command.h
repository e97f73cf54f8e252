#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace noeira {

// `noeira-bench fetch-data [--datasets LIST] [--data-dir DIR]`: finds every file of the
// data sets (default: those the tests need: mnist, tinyshakespeare, cifar10-subset),
// downloading what is missing into the cache (datasets/data_files.h: sha256-checked), and
// prints one line per data set: where it is, or what is missing and how to get it. Exit 1
// when any is missing (scripts/test runs it before the tests on a machine without
// NOEIRA_DATA). A failed lookup creates nothing in any data directory.
std::function<int()> add_fetch_data_command(CLI::App& app);

}  // namespace noeira
