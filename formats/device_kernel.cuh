// Small helpers shared by the CUDA sources (include from .cu files only): grid-stride loop
// indices, the context's stream as a cudaStream_t, device-to-device copies, allocation
// rounding, the 16-byte alignment that vector loads need, and naming the conversion a device
// error happened in.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "formats/device.hpp"
#include "formats/error.hpp"

namespace spconv::gpu {

// A grid-stride loop: for (i = first_index(); i < n; i += grid_stride()), 64-bit so that
// arrays beyond 2^31 elements are covered.
__device__ __forceinline__ std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

inline cudaStream_t stream_of(gpu_context& ctx) { return static_cast<cudaStream_t>(ctx.stream()); }

// Copies n elements of device memory on ctx's stream (asynchronous); `what` names the copy in
// an error.
template <class T>
void copy_on_device(T* to, const T* from, std::int64_t n, gpu_context& ctx, const std::string& what) {
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(T);
  check_cuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream_of(ctx)), what);
}

// Bytes rounded up to 256, the alignment of the pieces carved out of one scratch block.
inline std::size_t round_up(std::size_t n) { return (n + 255) / 256 * 256; }

// Whether every pointer may be read as 16-byte words (the kernels' vector loads; an array from
// the pool is, a view into the middle of one may not be).
template <class... P>
bool on_16_bytes(const P*... p) {
  return ((reinterpret_cast<std::uintptr_t>(p) % 16 == 0) && ...);
}

// Out of device memory (or any CUDA failure) names the conversion it happened in.
template <class F>
auto in_context(const char* what, F&& f) {
  try {
    return f();
  } catch (const error& e) {
    if (e.code() != errc::device) throw;
    fail(errc::device, std::string(what) + ": " + e.what());
  }
}

}  // namespace spconv::gpu
