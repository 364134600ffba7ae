// y = beta * y on the device, shared by the kernels that add into y atomically (COO,
// compressed COO, HOLA-SpMV) and so scale it first (include from .cu files only). beta == 0
// writes 0 without reading y (BLAS semantics: y may hold NaN).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace spconv::gpu {

template <class V>
__device__ __forceinline__ V scaled_y(V beta, const V* y, std::int64_t r) {
  return beta == V(0) ? V(0) : beta * y[r];
}

// Every element of y[0, n), a grid-stride loop.
template <class V>
__global__ void scale_y(std::int64_t n, V beta, V* y) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = scaled_y(beta, y, i);
}

}  // namespace spconv::gpu
