// Tiles of equally many consecutive stored items (MBR blocks, CMRS slots) over groups of rows
// stored CSR-like (MBR block rows, CMRS strips: group g holds items ptr[g] .. ptr[g + 1] - 1
// and rows g*r .. g*r + r - 1), as the tile kernels of spmv_mbr.cu and spmv_cmrs.cu take them:
// a warp per tile, whatever groups the tile's items belong to (HOLA's strict splitting,
// hola-spmv-steinberger.txt sec. 3.1). Include from .cu files only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "formats/device.hpp"
#include "formats/device_kernel.cuh"
#include "kernels/gpu/scale_y.cuh"
#include "kernels/gpu/search.cuh"

namespace spconv::gpu {

struct tile_split {
  std::int64_t groups, rows, items;  // ptr[groups] = items
  std::int64_t tiles, tile_items;    // ceil(items / tile_items) tiles of tile_items items
};

// Rows that several warps add to: a group split between tiles receives atomic additions from
// each, so before the tile kernel the tile holding its first item sets its rows to beta*y (a
// thread per tile; each split group starts in one tile, where it holds the tile's last item
// and runs past the tile's end). first[t] is the group holding the tile's first item (0 for
// tile 0, so that leading empty groups are written): a non-empty group, as empty groups
// starting at a tile's first item belong to the tile before, which writes every group ending
// at or before its end.
template <class V, class I>
__global__ void tile_rows(tile_split m, int r, const I* __restrict__ ptr, I* first, V beta, V* y) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= m.tiles) return;
  const std::int64_t b0 = t * m.tile_items, b1 = min(b0 + m.tile_items, m.items);
  first[t] = t == 0 ? 0 : static_cast<I>(row_of_entry(ptr, m.groups, m.items, b0));
  const std::int64_t last = row_of_entry(ptr, m.groups, m.items, b1 - 1);
  if (ptr[last] >= b0 && ptr[last + 1] > b1)
    for (std::int64_t row = last * r; row < min((last + 1) * r, m.rows); ++row) y[row] = scaled_y(beta, y, row);
}

// Queues tile_rows on `stream` for m (items > 0) and returns first[], m.tiles elements in the
// context's workspace; `what` names the caller in errors.
template <class V, class I>
I* assign_tiles(const tile_split& m, int r, const I* ptr, V beta, V* y, gpu_context& ctx, const std::string& what) {
  constexpr int threads = 256;
  auto* first = static_cast<I*>(ctx.workspace(static_cast<std::size_t>(m.tiles) * sizeof(I)));
  tile_rows<V, I><<<launch_blocks(m.tiles, threads), threads, 0, static_cast<cudaStream_t>(ctx.stream())>>>(
      m, r, ptr, first, beta, y);
  check_cuda(cudaGetLastError(), what + ": launching the tile assignment");
  return first;
}

}  // namespace spconv::gpu
