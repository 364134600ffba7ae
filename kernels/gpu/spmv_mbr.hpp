// MBR products on the GPU (shared/papers/mbr-kannan.txt sec. IV; specs/formats/mbr.md,
// section "GPU"): SpMV and the multiple-vector product SMMV with A, x and y in device memory,
// decoding each block's bitmap on the GPU. Both queue their work on ctx's stream and return:
// y is complete after ctx.synchronize() or a synchronous copy. beta == 0 writes y without
// reading it (it may hold NaN). The matrix must be valid (validate() on its host form).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/device.hpp"
#include "formats/mbr.hpp"

namespace spconv::gpu {

// y = alpha*A*x + beta*y; x has a.cols elements, y a.rows. Block heights 1, 2, 4 and 8: a team
// of mbr_groups_per_block_row groups of r lanes per block row; with one group, or another
// height (a thread per matrix row), the same bits as cpu::spmv(const mbr&); with more groups
// within the CSR reference's tolerance (the groups' partial sums are added by a shuffle tree).
template <class V>
void spmv(const mbr<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

// Groups of r lanes per block row in the SpMV kernel (r in {1, 2, 4, 8}): CSR's lane rule
// (csr_vector_lanes, kernels/gpu/spmv.hpp) with the block as the unit, by the mean number of
// blocks per block row m (one group below 10, 32 from 64, else the largest power of two not
// above m), at most 32 / r so that a team fits a warp.
int mbr_groups_per_block_row(std::int64_t block_rows, std::int64_t nblocks, int r);

// Y = alpha*A*X + beta*Y for k >= 1 vectors (k < 1: errc::usage): X row-major a.cols x k, Y
// row-major a.rows x k, as cpu::spmm; vectors are taken 8 at a time (one kernel per group).
// Same bits as cpu::spmm(const mbr&).
template <class V>
void spmm(const mbr<V, std::int32_t, device>& a, int k, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
