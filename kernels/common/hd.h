// NOEIRA_HD marks math that both backends call: __host__ __device__ under nvcc,
// plain inline functions for the C++ compiler.
#pragma once
#if defined(__CUDACC__)
#define NOEIRA_HD __host__ __device__ __forceinline__
#else
#define NOEIRA_HD inline
#endif
