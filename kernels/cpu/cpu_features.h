// What this CPU's instruction set offers beyond the build's -march (CPUID), for kernels
// that pick an instruction with a target attribute and check before they run it.
#pragma once

namespace noeira {

// AVX512-BF16 (vdpbf16ps, vcvtne2ps2bf16): Cooper Lake, Sapphire Rapids and later Xeons;
// AMD Zen 4 and later. Read once.
bool cpu_has_avx512_bf16();

}  // namespace noeira
