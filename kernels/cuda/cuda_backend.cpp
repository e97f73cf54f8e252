// The CUDA backend's entry point. The device ops arrive with the CUDA backend issue;
// until then asking for the GPU target says so plainly.
#include "nn/backend.h"

namespace noeira {

bool cuda_device_usable(std::string* why);

Result<Backend> make_cuda_backend() {
  std::string why;
  if (!cuda_device_usable(&why)) return make_error("target gpu: " + why + "; use --target cpu");
  return make_error("target gpu: the CUDA training backend is not implemented in this build "
                    "yet; use --target cpu");
}

}  // namespace noeira
