// NOEIRA_HD marks math that both backends call: __host__ __device__ under nvcc,
// plain inline functions for the C++ compiler.
#pragma once
#if defined(__CUDACC__)
#define NOEIRA_HD __host__ __device__ __forceinline__
#else
// always_inline: the loops calling these are vectorised only when the call (and its
// switch on a compile-time activation) disappears.
#define NOEIRA_HD inline __attribute__((always_inline))
#endif
