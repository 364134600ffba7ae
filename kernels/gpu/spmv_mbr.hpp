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

// Which kernel gpu::spmv runs: the block-row kernel (a group of lanes per block row, a lane
// per value) for block heights r in {1, 2, 4, 8}, every height the automatic block size picks,
// on matrices of fewer than mbr_block_row_kernel_rows rows; else the row kernel of spmm (a
// thread per matrix row). With fewer rows than the GPU holds threads (an H100: 132 SMs x 2048)
// the row kernel cannot fill the GPU, and a long block row holds its r threads while the rest
// wait; the block-row kernel puts up to a warp on each block row. Measured on the H100
// (double, the 20 real matrices as they are, 1.6K-115K rows, geometric means against
// cuSPARSE): the row kernel 0.22x (stop 16); a lane per block, stop 16's block-row kernel,
// 0.41x; a lane per value searching each value's block, 0.57x (stop 17); a lane per value
// with the window's values listed in shared memory, this one, 0.73x against stop 17's 0.56x in
// one device call (stop 18; SpMV time 17.5 against 22.4 us in geometric mean). On the matrices
// replicated to 100M entries (1M-100M rows) the row kernel runs 0.53x and the block-row kernel
// 0.36x (stop 18, same call as the row kernel's figure; 0.37x and 0.39x with 4 and 8 lanes for
// every block row): there a group waits on its block row's pointers, then its bitmaps, then
// its values, once per block row, where the row kernel's warp covers 32 rows with one such
// chain, so larger matrices keep the row kernel.
inline constexpr std::int64_t mbr_block_row_kernel_rows = std::int64_t{1} << 18;
inline bool mbr_uses_block_row_kernel(std::int64_t rows, int r) {
  return (r == 1 || r == 2 || r == 4 || r == 8) && rows < mbr_block_row_kernel_rows;
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

// y = alpha*A*x + beta*y; x has a.cols elements, y a.rows. With the block-row kernel
// (mbr_uses_block_row_kernel) the result is within the CSR reference's tolerance
// (cpu::spmv_tolerance of the longest row), not the CPU's bits; with the row kernel it has the
// same bits as cpu::spmv(const mbr&).
template <class V>
void spmv(const mbr<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

// Y = alpha*A*X + beta*Y for k >= 1 vectors (k < 1: errc::usage): X row-major a.cols x k, Y
// row-major a.rows x k, as cpu::spmm; vectors are taken 8 at a time (one kernel per group).
// One thread per matrix row, for every k (k = 1 included) and block size: the same bits as
// cpu::spmm(const mbr&).
template <class V>
void spmm(const mbr<V, std::int32_t, device>& a, int k, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
