#include "harness/cli/cli_options.h"

#include <cstdio>

#include "datasets/catalog.h"
#include "kernels/backend.h"

namespace noeira {

#if defined(NOEIRA_WITH_CUDA)
bool cuda_device_usable(std::string* why);  // kernels/cuda
#endif

Result<Device> resolve_target(const std::string& target) {
  if (target == "cpu") return Device::kCpu;
  if (target == "gpu") return Device::kGpu;
  if (target == "auto") {
#if defined(NOEIRA_WITH_CUDA)
    std::string why;
    if (cuda_device_usable(&why)) return Device::kGpu;
#endif
    return Device::kCpu;
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

}  // namespace noeira
