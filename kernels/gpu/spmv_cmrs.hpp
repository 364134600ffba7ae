// CMRS SpMV on the GPU, y = alpha*A*x + beta*y, with A, x and y in device memory: the
// warp-per-strip kernels of shared/papers/cmrs-koza.txt (Algorithm 1 in sec. 4, the basic
// kernel of appendix 9 and the modified kernel of appendix 10 for the sec. 6.7 layout), and a
// tile kernel for the basic layout in CSR order that splits the slots evenly between warps;
// specs/formats/cmrs.md, section "GPU". Queues its work on ctx's stream and returns: y is
// complete after ctx.synchronize() or a synchronous copy. beta == 0 writes y without reading
// it (it may hold NaN). x has a.cols elements, y a.rows; the matrix must be valid (validate()
// on its host form).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/cmrs.hpp"
#include "formats/device.hpp"
#include "kernels/gpu/tile_windows.hpp"

namespace spconv::gpu {

// Whether gpu::spmv runs the basic layout (M = 32) with the pipelined kernel rather than a warp
// per strip: when strips hold at most 64 slots on average (two a lane). Such strips cost a
// warp little more than the memory latencies of their bounds, slots and x in turn, which the
// pipelined kernel overlaps across a warp's strips; longer strips keep the latencies busy
// already and lose to the pipeline's registers and fixed grid. Measured on the H100 (double,
// the real matrices replicated to 100M entries, stop 18): the pipeline for every strip length
// gave luxembourg 33% -> 45% of copy bandwidth, arrow 27% -> 35%, bayer10 55% -> 64%, but
// sparse-images 94% -> 76% and the 27-point stencil (216 slots a strip) 84% -> 72%; cut at 64
// slots, the geometric mean over the set went 58.8% -> 62.4% (cut at 32: 59.1%, 80: 61.9%).
inline bool cmrs_short_strips(std::int64_t slots, std::int64_t strips) { return slots <= 64 * strips; }

// The kernels of gpu::spmv (kernels/gpu/spmv_cmrs.cu):
// - strips: the paper's, a warp per strip (the register or the pipelined kernel for the basic
//   layout, cmrs_short_strips; appendix 10's shared buffer for the sec. 6.7 layout): the bits
//   of cpu::spmv(const cmrs&);
// - tiles: the basic layout in CSR order (modulo 32, sort_columns false) only: a warp per tile
//   of up to 1024 consecutive slots (cmrs_tile_windows), 4 a lane at a time, whatever strips
//   they belong to, rows summed by a segmented scan, strips split between tiles added
//   atomically (two launches: the first finds each tile's first strip in the context's
//   workspace and sets the split strips' rows to beta*y). Rows are summed in another order
//   than the CPU's, so the result is held to the CSR tolerance, not to the CPU's bits.
// automatic is cmrs_spmv_kernel's choice.
enum class cmrs_kernel { automatic, strips, tiles };
inline const char* cmrs_kernel_name(cmrs_kernel k) {
  switch (k) {
    case cmrs_kernel::strips: return "strip";
    case cmrs_kernel::tiles: return "tile";
    default: return "automatic";
  }
}

// Whether the tile kernel can run a layout: the slots of a strip in CSR order, so that a row's
// slots are consecutive and rows increase along the slots.
inline bool cmrs_tile_layout(const cmrs_params& p) { return p.modulo == cmrs_warp && !p.sort_columns; }

// Which kernel gpu::spmv runs by default: the tile kernel where the layout allows it and the
// matrix has cmrs_tile_kernel_rows rows or more; the strip kernels otherwise. Measured on the
// H100 (double, geometric means against cuSPARSE, `spconv bench ../shared/matrices/real
// --device gpu --formats cmrs ...`):
// - the 20 real matrices replicated to 100M entries (stop 22, device call 4, both rules in one
//   call): tiles for every matrix 1.163x (85.3% of copy bandwidth) against 1.162x (85.2%) for
//   stop 21's rule, the tile kernel only where strips average fewer than 128 slots. Tiled, the
//   long strips gain on Groebner_id2003_aug (0.92x -> 1.02x), fidapex6 (1.02x -> 1.14x),
//   bcsstk13 and sparse-images (2-3%) and lose on n1024-l1 (1.23x -> 1.10x: strips of exactly
//   128 slots, the register kernel's ideal, at twice the tile kernel's occupancy), ca-AstroPh
//   (0.95x -> 0.85x) and bcsstk33 (1.08x -> 1.06x);
// - the 27-point stencil (216 slots a strip): 1.115x tiled (87.0%) against 1.069x (85.0%);
// - the matrices as they are (1.6K-115K rows): 1.53x with the strip kernels, 1.07x tiled (stop
//   21, device call 2), the tile kernel's two launches and few warps against one launch: most
//   take under 6 us.
inline constexpr std::int64_t cmrs_tile_kernel_rows = std::int64_t{1} << 18;
inline cmrs_kernel cmrs_spmv_kernel(const cmrs_params& p, std::int64_t rows) {
  return cmrs_tile_layout(p) && rows >= cmrs_tile_kernel_rows ? cmrs_kernel::tiles : cmrs_kernel::strips;
}

// Windows of 128 slots (4 a lane) per tile of the tile kernel (tile_windows).
inline int cmrs_tile_windows(std::int64_t slots) { return tile_windows(slots, 128); }

// y = alpha*A*x + beta*y with the given kernel (automatic: cmrs_spmv_kernel; tiles on another
// layout is errc::usage). The strip kernels give the same bits as cpu::spmv(const cmrs&) for
// every input (same buffer cells, same order of additions, no contraction to FMA); the tile
// kernel is within the CSR reference's tolerance (cpu::spmv_tolerance of the longest row).
// Parameters outside the format's range are errc::usage.
template <class V>
void spmv(const cmrs<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx,
          cmrs_kernel kernel = cmrs_kernel::automatic);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
