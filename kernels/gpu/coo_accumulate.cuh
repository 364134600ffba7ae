// y += alpha * A * x for row-sorted COO entries on the GPU (liu-thesis-csr5.txt sec. 5.2.3):
// the kernel behind COO SpMV and HYB's COO tail. Include from .cu files only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string_view>

#include "formats/device.hpp"

namespace spconv::gpu::detail {

// A warp per 32 consecutive entries: an inclusive segmented scan by shuffles (lane k adds the
// partial sum d lanes up while that lane holds the same row: rows are sorted, so the lanes in
// between do too), then the last lane of each row piece adds it to y atomically. The order of
// the additions therefore varies from run to run (within the bound of specs/gpu.md).
template <class V, class I>
__global__ void coo_accumulate(std::int64_t n, const I* __restrict__ row, const I* __restrict__ col,
                               const V* __restrict__ val, V alpha, const V* __restrict__ x, V* y) {
  constexpr int warp = 32;
  const int lane = static_cast<int>(threadIdx.x % warp);
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t base = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) - lane; base < n;
       base += step) {
    const std::int64_t e = base + lane;
    const bool in = e < n;
    const I r = in ? row[e] : I(-1);
    V sum = in ? val[e] * x[col[e]] : V(0);
    for (int d = 1; d < warp; d *= 2) {
      const V other = __shfl_up_sync(0xffffffffu, sum, d);
      const I other_row = __shfl_up_sync(0xffffffffu, r, d);
      if (lane >= d && other_row == r) sum += other;
    }
    const I next_row = __shfl_down_sync(0xffffffffu, r, 1);
    if (in && (lane == warp - 1 || next_row != r)) atomicAdd(y + r, alpha * sum);
  }
}

// Queues coo_accumulate over n entries on `stream`; `what` names the caller in errors.
template <class V, class I>
void launch_coo_accumulate(std::int64_t n, const I* row, const I* col, const V* val, V alpha, const V* x, V* y,
                           cudaStream_t stream, std::string_view what) {
  if (n == 0) return;
  constexpr int threads = 256;  // a multiple of the warp
  // Rounded up to whole warps: every lane of a warp takes part in the shuffles.
  coo_accumulate<V, I><<<launch_blocks((n + 31) / 32 * 32, threads), threads, 0, stream>>>(n, row, col, val, alpha, x, y);
  check_cuda(cudaGetLastError(), what);
}

}  // namespace spconv::gpu::detail
