// The TF32 switch for fp32 GEMMs and convolutions on the GPU: on unless NOEIRA_TF32 is 0,
// off or false. Read by the CUDA backend (cuda_options_from_env) and by the harness, whose
// MFU column divides an fp32 run by the TF32 tensor-core peak when it is on.
#pragma once
#include <cstdlib>
#include <cstring>

namespace noeira {

inline bool tf32_from_env() {
  const char* v = std::getenv("NOEIRA_TF32");
  return !(v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0 ||
                 std::strcmp(v, "false") == 0));
}

}  // namespace noeira
