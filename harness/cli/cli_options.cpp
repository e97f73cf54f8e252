#include "harness/cli/cli_options.h"

#include <cstdio>

#include "datasets/catalog.h"
#include "kernels/backend.h"

namespace noeira {

#if defined(NOEIRA_WITH_CUDA)
bool cuda_device_usable(std::string* why);  // kernels/cuda
#endif

bool gpu_usable(std::string* why) {
#if defined(NOEIRA_WITH_CUDA)
  return cuda_device_usable(why);
#else
  *why = "built without CUDA";
  return false;
#endif
}

Result<Device> resolve_target(const std::string& target) {
  if (target == "cpu") return Device::kCpu;
  if (target == "gpu") return Device::kGpu;
  if (target == "auto") {
    std::string why;
    return gpu_usable(&why) ? Device::kGpu : Device::kCpu;
  }
  return make_error("--target must be auto, cpu or gpu (got '" + target + "')");
}

CLI::Option* add_dataset_option(CLI::App* cmd, std::string& dataset) {
  return cmd->add_option("--dataset", dataset, "Override the recipe's data set")
      ->check(CLI::IsMember(image_dataset_names()));
}

int report_error(const std::string& message, int code) {
  std::fprintf(stderr, "noeira-bench: error: %s\n", message.c_str());
  return code;
}

void add_model_options(CLI::App* cmd, std::string& model, std::string& dtype, std::string& target) {
  cmd->add_option("--model", model, "Model (a recipe in models/recipes)")->capture_default_str();
  cmd->add_option("--dtype", dtype, "Precision")->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--target", target, "auto (gpu when a CUDA device is usable), cpu or gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}))->capture_default_str();
}

}  // namespace noeira
