// SPCONV_HOST_DEVICE: marks a function that host code and CUDA kernels share (a rule or a
// hash that both sides must compute alike); empty where the host compiler alone reads it.
#pragma once

#ifdef __CUDACC__
#define SPCONV_HOST_DEVICE __host__ __device__
#else
#define SPCONV_HOST_DEVICE
#endif
