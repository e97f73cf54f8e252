#include "kernels/cpu/onednn_engine.h"

namespace noeira::onednn {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

bool runs_amx() {
  static const bool amx = [] {
    const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
    const auto with_amx = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_amx);
    return (isa & with_amx) == with_amx;  // the ISA values are nested bit sets
  }();
  return amx;
}

bool runs_avx512() {
  static const bool avx512 = [] {
    const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
    const auto with_avx512 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
    return (isa & with_avx512) == with_avx512;
  }();
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
