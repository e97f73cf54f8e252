// Option parsing helpers shared by the subcommands.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "nn/error.h"
#include "nn/tensor.h"

namespace noeira {

// "cpu" | "gpu" | "auto" (auto = gpu when a CUDA device is usable, else cpu).
Result<Device> resolve_target(const std::string& target);

// Whether a CUDA device is usable here; `why` says why not ("built without CUDA" in a
// build without the backend).
bool gpu_usable(std::string* why);

// --model, --dtype and --target, as `run` and `profile` take them.
void add_model_options(CLI::App* cmd, std::string& model, std::string& dtype, std::string& target);

// --dataset NAME, overriding the recipe's: one of datasets/catalog.h's names.
CLI::Option* add_dataset_option(CLI::App* cmd, std::string& dataset);

// Prints "noeira-bench: error: <message>" to stderr and returns `code`.
int report_error(const std::string& message, int code);

}  // namespace noeira
