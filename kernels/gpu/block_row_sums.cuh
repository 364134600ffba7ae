// The end of the GPU block-row kernels (BCSR, kernels/gpu/spmv_bcsr.cu; MBR's block-row
// kernel, kernels/gpu/spmv_mbr.cu; include from .cu files only): a group of `lanes` lanes of
// one warp has summed a block row (BCSR: a block per lane at a time; MBR: a value per lane),
// each lane holding partial sums of the block row's r rows. Both formats write their block
// rows the same way.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace spconv::gpu {

// A shuffle tree within the group (width lanes) leaves the r totals in the group's first
// lane; when `write` (that lane, of a block row that exists), it writes y for rows br * r + i
// inside the matrix (the last block row may overhang: its padding rows are not written).
// sum holds Cap >= r registers; r must be the same in every lane of the warp, and every lane
// of the warp must call this (full-mask shuffles). beta == 0 writes y without reading it
// (BLAS semantics: y may hold NaN).
template <int Cap, class V>
__device__ __forceinline__ void write_block_row(V (&sum)[Cap], int r, int lanes, bool write, std::int64_t br,
                                                std::int64_t rows, V alpha, V beta, V* y) {
#pragma unroll
  for (int i = 0; i < Cap; ++i)
    if (i < r)
      for (int offset = lanes / 2; offset > 0; offset /= 2)
        sum[i] += __shfl_down_sync(0xffffffffu, sum[i], offset, lanes);
  if (write) {
    const std::int64_t row0 = br * r, h = rows - row0 < r ? rows - row0 : r;
#pragma unroll
    for (int i = 0; i < Cap; ++i)
      if (i < h) y[row0 + i] = beta == V(0) ? alpha * sum[i] : alpha * sum[i] + beta * y[row0 + i];
  }
}

}  // namespace spconv::gpu
