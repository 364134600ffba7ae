// BCSR SpMV on the GPU, y = alpha*A*x + beta*y, with A, x and y in device memory
// (kernels/gpu/spmv_bcsr.cu; specs/formats/bcsr.md, "GPU"). Queued on ctx's stream without
// waiting: y is complete after ctx.synchronize() or a synchronous copy. As in BLAS, beta == 0
// means y is only written, never read (it may hold NaN). x has a.cols elements, y a.rows; the
// matrix must be valid (validate() on its host copy).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/bcsr.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// The block-row kernel (mbr-kannan.txt sec. II, fig. 2, on a GPU): a group of lanes of one
// warp per block row; each lane walks every lanes-th block of the block row, keeping the
// block row's r sums in registers and loading a block's c elements of x once; a shuffle tree
// adds the lanes' sums. The block size is a template parameter of the kernel for the common
// sizes (r = c in {1, 2, 3, 4, 6, 8}; r in {1, 2, 3, 4, 6, 8} with any c), so the loops over
// a block unroll; other sizes run the generic kernel with run-time bounds. Fill takes part as
// 0 * x, as in the CPU kernel.
template <class V>
void spmv(const bcsr<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

// Lanes per block row: CSR's rule (csr_vector_lanes, kernels/gpu/spmv.hpp) with the block as
// the unit, by the mean number of blocks per block row m: one lane (a thread per block row)
// below 10, a warp from 64, else the largest power of two not above m. With 1 x 1 blocks the
// arrays are CSR's and so is the kernel's shape. Rounding the mean up instead (8 lanes for
// block rows of 5 blocks) left most lanes of short block rows idle: BCSR ran at ~0.5x of the
// CSR kernel on the same arrays (H100, replicated set, 2026-11-23).
int bcsr_lanes_per_block_row(std::int64_t block_rows, std::int64_t nblocks);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
