#include "harness/cli/cli.h"

#include <cstdio>
#include <filesystem>
#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

#include "datasets/catalog.h"
#include "harness/env/env_report.h"
#include "harness/cli/cli_options.h"
#include "harness/cli/compare_command.h"
#include "harness/cli/fetch_data_command.h"
#include "harness/cli/profile_command.h"
#include "harness/cli/micro_command.h"
#include "harness/cli/report_command.h"
#include "harness/cli/suite_command.h"
#include "harness/cli/run_command.h"
#include "harness/cli/sample_command.h"
#include "harness/cli/train_command.h"
#include "models/recipe.h"

namespace noeira {

namespace {

std::function<int()> add_list_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("list", "List the models (recipes) and data sets");
  return [cmd]() {
    if (!cmd->parsed()) return kNotThisCommand;
    std::printf("models (recipes in %s):\n", recipe_dir().c_str());
    for (const std::string& name : list_recipes()) {
      Result<Recipe> r = load_recipe_for_model(name);
      if (r)
        std::printf("  %-13s %s [dataset %s, batch %lld, %s]\n", name.c_str(),
                    r->description.c_str(), r->dataset.c_str(), static_cast<long long>(r->batch),
                    r->gpt.steps > 0 ? (std::to_string(r->gpt.steps) + " steps").c_str()
                                     : (std::to_string(r->epochs) + " epochs").c_str());
      else
        std::printf("  %-13s (broken recipe: %s)\n", name.c_str(), r.error().message.c_str());
    }
    std::printf("datasets:\n");
    for (const ImageDatasetInfo& d : image_datasets())
      std::printf("  %-15s %s\n", d.name.c_str(), d.description.c_str());
    std::printf("  %-15s %s\n", "tinyshakespeare",
                "TinyShakespeare (text, 1,115,394 characters, 65-character vocabulary; 90% train "
                "/ 10% validation): the gpt family");
    return kExitOk;
  };
}

std::function<int()> add_env_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("env", "Describe this machine, this build and the GPU, and run the "
                                            "baseline probe of both sides (harness/env/baseline_probe.h)");
  auto o = std::make_shared<EnvOptions>();
  cmd->add_flag("--json", o->json, "Print JSON instead of text");
  cmd->add_flag("--no-probe", o->no_probe, "Skip the baseline probe (GEMM and bandwidth, ours and the twin's)");
  cmd->add_option("--threads", o->threads, "Threads of the probe's second row (default: all cores)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--python", o->python, "Python interpreter with torch for the twin's probe "
                                         "(default: $NOEIRA_PYTHON, the twin's venv, python3)");
  return [cmd, o]() {
    if (!cmd->parsed()) return kNotThisCommand;
    return print_environment(*o);
  };
}

// `noeira-bench --model gpt ...` means `noeira-bench run --model gpt ...`.
std::vector<std::string> with_default_subcommand(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (args.size() > 1 && args[1].size() > 1 && args[1][0] == '-' && args[1] != "-h" &&
      args[1] != "--help" && args[1] != "--version")
    args.insert(args.begin() + 1, "run");
  return args;
}

}  // namespace

int run_cli(int argc, char** argv) {
  std::vector<std::string> args = with_default_subcommand(argc, argv);
  std::string command_line;
  for (const std::string& a : args) command_line += (command_line.empty() ? "" : " ") + a;
  CLI::App app{"noeira-bench: trains the noeira models, times them, and compares them with a "
               "PyTorch twin on the same recipe and data",
               "noeira-bench"};
  app.require_subcommand(1);
  app.footer("Without a subcommand, options go to `run`: noeira-bench --model mlp --dtype fp32\n"
             "Exit codes: 0 ok, 1 the work failed (or compare found a regression), 2 unusable input.");
  app.set_version_flag("--version", "noeira-bench 0.1.0");
  std::vector<std::function<int()>> commands;
  commands.push_back(add_run_command(app, command_line));
  commands.push_back(add_train_command(app));
  commands.push_back(add_sample_command(app));
  commands.push_back(add_list_command(app));
  commands.push_back(add_env_command(app));
  commands.push_back(add_compare_command(app));
  commands.push_back(add_report_command(app));
  commands.push_back(add_suite_command(app));
  commands.push_back(add_micro_command(app));
  commands.push_back(add_fetch_data_command(app));
  commands.push_back(add_profile_command(app, command_line));
  const std::string first = args.size() > 1 ? args[1] : "";
  const auto known = app.get_subcommands([&](const CLI::App* c) { return c->check_name(first); });
  if (!first.empty() && first[0] != '-' && known.empty())
    return report_error("unknown subcommand '" + first + "'; run `noeira-bench --help` for the list",
                        kExitUsage);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 takes them backwards
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help/version or the parse error
    return code == 0 ? kExitOk : kExitUsage;
  }
  for (auto& run : commands)
    if (int rc = run(); rc != kNotThisCommand) return rc;
  return kExitUsage;
}

}  // namespace noeira
