// The size of the tiles of the GPU tile kernels (MBR, CMRS; kernels/gpu/tile_rows.cuh): a warp
// takes a tile of 1 to 8 windows of consecutive items (a window being what its 32 lanes take at
// once).
#pragma once
#include <cstdint>

namespace spconv::gpu {

// 8 windows per tile (a warp's loop over them amortising its tile's set-up) once the matrix
// has items for 8192 such tiles, about two waves of an H100 (132 SMs x 32-36 warps of these
// kernels); fewer on smaller matrices, down to 1, so that the warps still cover the GPU. On
// the 20 real matrices as they are (1.6K-115K rows), MBR tiles of 256 blocks ran 0.31x
// cuSPARSE against the block-row kernel's 0.70-0.77x (stop 20, device call 11), most of the GPU
// idle. Tiles of 4, 16 and 32 windows measured against 8 (H100, double, replicated to 100M
// entries, stop 44, specs/formats/mbr.md; 4 windows beside 8 in one device call, 16 and 32 in
// another): MBR 1.003x against 1.012x cuSPARSE, 0.965x and 0.909x against 1.011x; CMRS 1.144x
// against 1.194x, 1.192x and 1.160x against 1.193x.
inline int tile_windows(std::int64_t items, std::int64_t window_items) {
  const std::int64_t windows = items / (window_items * 8192);
  return windows < 1 ? 1 : windows > 8 ? 8 : static_cast<int>(windows);
}

}  // namespace spconv::gpu
