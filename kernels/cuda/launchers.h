// Launchers of the op files (kernels/cuda/<op>.cu) that other files call too. Every other
// launcher stays inside its op's file. Each enqueues on `stream` and returns the first
// launch error; nothing here allocates or synchronises.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/ops.h"

namespace noeira::cuda {

// elementwise.cu: Ops::cast's kernel (contract there), for cuDNN's widening casts
// (cudnn_conv.cpp). 16-byte groups whenever both buffers are aligned.
cudaError_t launch_cast(cudaStream_t stream, ConstView x, View y);
// elementwise.cu: Ops::add_relu_backward's kernel, for conv2d_backward's dx epilogue
// (conv2d.cu). In place too: dx may be a itself (each thread reads its elements before
// writing them); dx must not overlap b or post.
cudaError_t launch_add_relu_backward(cudaStream_t stream, ConstView a, ConstView b,
                                     ConstView post, View dx);
// elementwise.cu: Ops::act_backward_saved's kernel, for linear_backward_data's dact
// (linear.cu). In place too: dx may be dy itself (each thread reads its elements before
// writing them); dx must not overlap dact.
cudaError_t launch_act_backward_saved(cudaStream_t stream, ConstView dy, ConstView dact,
                                      View dx);

// conv2d.cu: the convolution's own kernels around cuDNN (cudnn_conv.cpp).
// y (B, C, S) = in + bias[c], rounded once to y's dtype. `in` is fp32 (B, C, S); it may
// be y's own memory when y is fp32.
cudaError_t launch_channel_bias_add(cudaStream_t stream, const float* in, const float* bias,
                                    View y, int64_t B, int64_t C, int64_t S);
// db[c] += sum of dy (B, C, S) over (B, S), in double in the order of channel_sum.h;
// `partials` holds channel_partials_bytes(C, B * S) bytes.
cudaError_t launch_channel_bias_grad(cudaStream_t stream, ConstView dy, int64_t B, int64_t C,
                                     int64_t S, float* db, void* partials);

// attention_heads.cu: the head layout changes of attention's GEMM paths (attention.cu,
// attention_bf16.cu); `op` names the step in the shape errors. The heads buffer holds
// (parts, B, nh, T, hd) with its parts part_stride elements apart (>= B * T * C; to_heads
// packs them). to_heads: dst <- src (B, T, parts * C) (parts = 3 for qkv, 1 for a (B, T,
// C) tensor), widened to fp32, or (to_heads_bf16, bf16 src) copied; from_heads: y (B, T,
// parts * C) <- the fp32 heads, rounded once to y's dtype.
cudaError_t to_heads(cudaStream_t stream, const char* op, ConstView src, float* dst, int parts,
                     int64_t B, int64_t T, int64_t C, int64_t nh);
cudaError_t to_heads_bf16(cudaStream_t stream, const char* op, ConstView src, bf16_t* dst,
                          int parts, int64_t B, int64_t T, int64_t C, int64_t nh,
                          int64_t part_stride);
cudaError_t from_heads(cudaStream_t stream, const char* op, const float* src, View y, int parts,
                       int64_t B, int64_t T, int64_t C, int64_t nh, int64_t part_stride);

}  // namespace noeira::cuda
