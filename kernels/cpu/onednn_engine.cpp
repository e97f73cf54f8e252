#include "kernels/cpu/onednn_engine.h"

namespace noeira::onednn {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

namespace {

// Whether oneDNN's effective ISA includes `wanted` (the ISA values are nested bit sets).
bool runs(dnnl_cpu_isa_t wanted) {
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  return (isa & static_cast<unsigned>(wanted)) == static_cast<unsigned>(wanted);
}

}  // namespace

bool runs_amx() {
  static const bool amx = runs(dnnl_cpu_isa_avx512_core_amx);
  return amx;
}

bool runs_avx512() {
  static const bool avx512 = runs(dnnl_cpu_isa_avx512_core);
  return avx512;
}

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

std::vector<dnnl::stream> make_streams(int threads) {
  std::vector<dnnl::stream> streams;
  streams.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) streams.emplace_back(cpu_engine());
  return streams;
}

}  // namespace noeira::onednn
