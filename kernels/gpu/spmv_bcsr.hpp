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

// Lanes per block row (blocks larger than 1 x 1; those run CSR's HOLA-SpMV), by the mean
// number of blocks per block row m: below 10 (csr_scalar_below), m rounded up to a power of two
// (2 to 16), so that a lane holds about one block; from 10, CSR's rule (csr_vector_lanes,
// kernels/gpu/spmv.hpp): the largest power of two not above m, a warp from 64. Measured on the
// H100 (replicated set): memplus_rhs1 in 8 x 1 blocks (m just above 1) ran 1.89x cuSPARSE with
// 2 lanes and 1.21x with CSR's one lane per block row (a lane then sums 8 rows); fidapex6 in
// 2 x 1 blocks (m ~ 34) ran 0.73x with CSR's 16 lanes and 0.53x with 32.
int bcsr_lanes_per_block_row(std::int64_t block_rows, std::int64_t nblocks);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
