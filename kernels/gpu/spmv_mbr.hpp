// MBR products on the GPU (shared/papers/mbr-kannan.txt sec. IV; specs/formats/mbr.md,
// section "GPU"): SpMV and the multiple-vector product SMMV with A, x and y in device memory,
// decoding each block's bitmap on the GPU. Both queue their work on ctx's stream and return:
// y is complete after ctx.synchronize() or a synchronous copy. beta == 0 writes y without
// reading it (it may hold NaN). The matrix must be valid (validate() on its host form).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/device.hpp"
#include "formats/host_device.hpp"
#include "formats/mbr.hpp"
#include "kernels/gpu/tile_windows.hpp"

namespace spconv::gpu {

// The kernels of gpu::spmv (kernels/gpu/spmv_mbr.cu):
// - block_rows: a group of lanes per block row, a lane per value (one launch, no workspace);
// - tiles: a warp per tile of up to 256 consecutive blocks (mbr_tile_windows), 32 at a time, a
//   lane per block or per row slice of a block (mbr_lane_per_block, mbr_tile_by_block), long
//   block rows' sums gathered in the lanes (mbr_tile_gathers), block
//   rows split between tiles added atomically (two launches: the
//   first finds each tile's first block row in the context's workspace and sets the split
//   rows to beta*y);
// - rows: a thread per matrix row, the row kernel of gpu::spmm (the CPU's bits).
// automatic is mbr_spmv_kernel's choice.
enum class mbr_kernel { automatic, block_rows, tiles, rows };

inline const char* mbr_kernel_name(mbr_kernel k) {
  switch (k) {
    case mbr_kernel::block_rows: return "block-row";
    case mbr_kernel::tiles: return "tile";
    case mbr_kernel::rows: return "row";
    default: return "automatic";
  }
}

// Which kernel gpu::spmv runs by default: block heights r in {1, 2, 4, 8} (every height the
// automatic block size picks) take the tile kernel at every size; other heights the row kernel.
// Measured on the H100 (double, geometric means against cuSPARSE; specs/formats/mbr.md):
// - the matrices replicated to 100M entries (1M-100M rows): the row kernel 0.53x, the
//   block-row kernel 0.36x (stop 18: a group waits on its block row's pointers, then its
//   bitmaps, then its values, once per block row, where the row kernel's warp covers 32 rows
//   with one such chain), the tile kernel 0.80x (stop 20; the 27-point stencil 1.07x against
//   the row kernel's 1.11x), 0.83x since stop 23, 0.92x since stop 30;
// - the 20 real matrices as they are (1.6K-115K rows, stop 27, device call 5, both rules twice
//   in one call): the tile kernel everywhere took 12.6 and 13.0 us in geometric mean against
//   17.3 and 18.1 us with the block-row kernel below 2^18 rows (stops 16-26). The block-row
//   kernel gives each block row to one group of lanes, so one long block row holds its group
//   while the GPU idles: arrow's dense first row took 1201 us against 18 us tiled,
//   Groebner_id2003_aug 78 -> 18 us, rajat01 58 -> 11 us, memplus 33 -> 15 us. Where block rows
//   are alike it is faster, one launch against two (lap3D_7pt_n20 4.8 us against 9.5, add32 6.6
//   against 10.8), and gpu::spmv runs it on request (mbr_kernel::block_rows).
// The block heights the block-row and tile kernels are instantiated for (R, their row sums).
inline bool mbr_lane_kernel_height(int r) { return r == 1 || r == 2 || r == 4 || r == 8; }
inline mbr_kernel mbr_spmv_kernel(int r) { return mbr_lane_kernel_height(r) ? mbr_kernel::tiles : mbr_kernel::rows; }

// Windows of 32 blocks per tile of the tile kernel (tile_windows): 8, tiles of 256 blocks, on
// the replicated set (2M blocks and more).
inline int mbr_tile_windows(std::int64_t blocks) { return tile_windows(blocks, 32); }

// How the tile kernel sums a window of 32 blocks: a lane per block where the window holds few
// values (at most 6 a block on average, 192 in all) or its blocks one row (r = 1: a block is
// one run) or one column (c = 1: every run is one value), else a lane per run (a row's slice of
// one block). A lane per run pays for listing the runs and for three shuffles a run, which
// blocks of one or two values a row do not repay; a lane per block reads its own block's values
// and x, 32 places apart in a warp's load, and waits for the window's fullest block, which
// dense blocks do not repay. Measured on the H100 (double, the real matrices replicated to 100M
// entries, `spconv bench --formats mbr`, stop 30, each set of binaries in one device call):
// - a lane per block for every window: 0.831x -> 0.785x cuSPARSE (call 1; lap3D_7pt_n20 0.83x
//   -> 1.02x, ca-AstroPh 0.37x -> 0.48x, memplus_rhs1 1.38x -> 1.92x; bcsstk33 1.08x -> 0.61x,
//   n1024-l1 1.02x -> 0.59x);
// - for the windows of at most 96, 144 or 192 values: 0.811x -> 0.839x, 0.863x, 0.870x (call
//   2; 256: 0.876x against 192's 0.894x in call 3, n1024-l1's 8 values a block 1.02x -> 0.59x);
//   staging such a window's values in shared memory first (coalesced loads): 0.826x at 144;
// - blocks of one row (call 3, `--block 1x8`, six matrices): 0.599x -> 0.645x.
inline constexpr int mbr_lane_per_block_values = 6;  // a block on average, for both rules below
SPCONV_HOST_DEVICE constexpr bool mbr_lane_per_block(int window_values, int r, int c) {
  return r == 1 || c == 1 || window_values <= mbr_lane_per_block_values * 32;
}

// Whether the tile kernel looks at mbr_lane_per_block at all: not where blocks hold more than 6
// values on average (and r, c > 1), which then run a kernel compiled without that path. Its
// windows mostly lose with a lane per block, and the path alone cost the kernel 1-4% on matrices
// none of whose windows take it (the branch and the code beside the lane-per-run loop). Device
// call 4 (same set, beside stop 29's kernel): the per-window choice alone 0.831x -> 0.892x, with
// this choice 0.906x (56.2% of copy bandwidth; bcsstk13 0.99x -> 1.02x, Groebner_id2003_aug
// 0.69x -> 0.71x, n1024-l1 0.99x -> 1.03x), the 27-point stencil 1.125x, 1.091x and 1.120x.
inline bool mbr_tile_by_block(std::int64_t values, std::int64_t blocks, int r, int c) {
  return r == 1 || c == 1 || values <= mbr_lane_per_block_values * blocks;
}

// Whether the tile kernel's lanes gather a block row's sums in their cells over the windows
// that lie inside it, added up once where it ends (the kernel's Gather), rather than summing the
// cells over the window's lanes in every window: where block rows span 64 blocks (two windows)
// or more on average, and the kernel sums windows a lane per block (mbr_tile_by_block). Measured
// on the H100 (double, replicated set, `spconv bench --formats mbr`, stop 31, each pair of
// binaries in one device call): gathering in every kernel took ca-AstroPh (8 x 1 blocks of one
// value, 164 blocks a block row) from 0.468x to 0.676x cuSPARSE, but cost the matrices whose
// windows it never takes 2-9% (n1024-l1 1.02x -> 0.95x, zenios 0.75x -> 0.69x), 0.921x -> 0.913x
// in all, the 27-point stencil 1.128x -> 1.093x: the kernel grows (registers, the fold). With
// this rule (device call 7, the other kernels unchanged to the register): 0.919x -> 0.937x
// (57.2% -> 58.3% of copy bandwidth), ca-AstroPh the one matrix it takes, 0.466x -> 0.673x, the
// rest within 1%, the stencil 1.135x both.
inline constexpr std::int64_t mbr_gather_blocks_per_block_row = 64;
inline bool mbr_tile_gathers(std::int64_t blocks, std::int64_t block_rows) {
  return blocks >= mbr_gather_blocks_per_block_row * block_rows;
}

// Lanes per block row in the block-row kernel: a power of two in [4, 32], the least that is
// at least half the mean number of values (entries) of a block row, so that a typical block
// row takes two chunks of a value per lane.
inline int mbr_lanes_per_block_row(std::int64_t block_rows, std::int64_t values) {
  const std::int64_t mean = values / (block_rows > 0 ? block_rows : 1);
  int lanes = 4;
  while (lanes < 32 && 2 * lanes < mean) lanes *= 2;
  return lanes;
}

// y = alpha*A*x + beta*y; x has a.cols elements, y a.rows, with the given kernel (automatic:
// mbr_spmv_kernel; block_rows and tiles with another height than 1, 2, 4, 8 are errc::usage).
// The block-row and tile kernels split a row's sum over lanes: the result is within the CSR
// reference's tolerance (cpu::spmv_tolerance of the longest row), not the CPU's bits; the row
// kernel has the same bits as cpu::spmv(const mbr&).
template <class V>
void spmv(const mbr<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx,
          mbr_kernel kernel = mbr_kernel::automatic);

// Y = alpha*A*X + beta*Y for k >= 1 vectors (k < 1: errc::usage): X row-major a.cols x k, Y
// row-major a.rows x k, as cpu::spmm; vectors are taken 8 at a time (one kernel per group).
// One thread per matrix row, for every k (k = 1 included) and block size: the same bits as
// cpu::spmm(const mbr&).
template <class V>
void spmm(const mbr<V, std::int32_t, device>& a, int k, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
