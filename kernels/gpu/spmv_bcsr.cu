// BCSR SpMV on the GPU: the block-row kernel of mbr-kannan.txt sec. II (fig. 2) and
// liu-thesis-csr5.txt sec. 5.4.4, with a group of lanes per block row. Written once with the
// block size as template parameters (0 = read at run time): with R known, the R sums of the
// block row stay in registers; with C known too, the block's C elements of x are loaded once
// into registers and the R x C products unroll.
#include <cuda_runtime.h>

#include <bit>
#include <string>

#include "formats/instantiate.hpp"
#include "kernels/gpu/block_row_sums.cuh"
#include "kernels/gpu/spmv.hpp"
#include "kernels/gpu/spmv_bcsr.hpp"
#include "kernels/gpu/spmv_csr_hola.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;
constexpr int warp_size = 32;

struct shape {
  std::int64_t mb, rows, cols;
  int r, c, lanes;  // lanes: a power of two in [1, 32]
};

// Each warp takes 32 / lanes consecutive block rows at a time; the loop bound is the same
// for every lane of the warp, so the full-mask shuffles always see all 32 lanes.
template <class V, int R, int C>
__global__ void block_rows(shape m, const I* __restrict__ block_ptr, const I* __restrict__ block_col,
                           const V* __restrict__ values, V alpha, const V* __restrict__ x, V beta, V* y) {
  constexpr int r_cap = R ? R : bcsr_max_block;
  const int r = R ? R : m.r, c = C ? C : m.c, lanes = m.lanes;
  const std::int64_t rc = std::int64_t{r} * c;
  const int lane = static_cast<int>(threadIdx.x % warp_size), sub = lane % lanes;
  const int per_warp = warp_size / lanes;
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / warp_size;
  for (std::int64_t first = warp * per_warp; first < m.mb; first += warps * per_warp) {
    const std::int64_t br = first + lane / lanes;
    V sum[r_cap];
#pragma unroll
    for (int i = 0; i < r_cap; ++i) sum[i] = V(0);
    if (br < m.mb) {
      for (std::int64_t k = static_cast<std::int64_t>(block_ptr[br]) + sub, end = block_ptr[br + 1]; k < end;
           k += lanes) {
        const V* blk = values + k * rc;
        const std::int64_t col0 = static_cast<std::int64_t>(block_col[k]) * c;
        // The last block column may overhang the matrix: its padding values are +0.0 and x
        // has no element there, so 0 stands in for x (never read past cols).
        const std::int64_t w = m.cols - col0;
        if constexpr (C != 0) {
          V xb[C];
#pragma unroll
          for (int j = 0; j < C; ++j) xb[j] = j < w ? x[col0 + j] : V(0);
#pragma unroll
          for (int i = 0; i < r_cap; ++i)
#pragma unroll
            for (int j = 0; j < C; ++j) sum[i] += blk[i * C + j] * xb[j];
        } else {
          for (int j = 0; j < c; ++j) {
            const V xj = j < w ? x[col0 + j] : V(0);
#pragma unroll
            for (int i = 0; i < r_cap; ++i)
              if (R != 0 || i < r) sum[i] += blk[i * c + j] * xj;
          }
        }
      }
    }
    write_block_row(sum, r, lanes, br < m.mb && sub == 0, br, m.rows, alpha, beta, y);
  }
}

template <class V>
using kernel_fn = void (*)(shape, const I*, const I*, const V*, V, const V*, V, V*);

template <class V, int R>
kernel_fn<V> pick_cols(int c) {
  if constexpr (R == 1) return &block_rows<V, 1, 0>;  // 1 x 1 runs HOLA-SpMV (spmv below)
  else return c == R ? &block_rows<V, R, R> : &block_rows<V, R, 0>;
}

// Compile-time sizes: the squares 2..4, 6 and 8 that the automatic rule picks most (and the
// CPU kernel's 3 x 3 and 6 x 6 for FEM matrices), and every c with r in {1, 2, 3, 4, 6, 8};
// the rest runs the generic kernel.
template <class V>
kernel_fn<V> pick(int r, int c) {
  switch (r) {
    case 1: return pick_cols<V, 1>(c);
    case 2: return pick_cols<V, 2>(c);
    case 3: return pick_cols<V, 3>(c);
    case 4: return pick_cols<V, 4>(c);
    case 6: return pick_cols<V, 6>(c);
    case 8: return pick_cols<V, 8>(c);
    default: return &block_rows<V, 0, 0>;
  }
}

}  // namespace

int bcsr_lanes_per_block_row(std::int64_t block_rows, std::int64_t nblocks) {
  if (block_rows <= 0 || nblocks <= block_rows) return 1;
  if (nblocks / block_rows >= csr_scalar_below) return csr_vector_lanes(block_rows, nblocks);
  const std::int64_t mean_up = (nblocks + block_rows - 1) / block_rows;  // 2 .. 10
  return static_cast<int>(std::bit_ceil(static_cast<std::uint64_t>(mean_up)));
}

template <class V>
void spmv(const bcsr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  const int r = a.params.block_rows, c = a.params.block_cols;
  if (r < 1 || r > bcsr_max_block || c < 1 || c > bcsr_max_block)
    fail(errc::usage, "gpu::spmv: bcsr block size " + std::to_string(r) + " x " + std::to_string(c) +
                          " is out of range [1, " + std::to_string(bcsr_max_block) + "]");
  const std::int64_t mb = (a.rows + r - 1) / r;
  if (a.block_ptr.size() != static_cast<std::size_t>(mb) + 1)
    fail(errc::usage, "gpu::spmv: bcsr block_ptr has " + std::to_string(a.block_ptr.size()) +
                          " elements, expected " + std::to_string(mb + 1));
  if (mb == 0) return;
  // 1 x 1 blocks: block_ptr, block_col and values are CSR's row_ptr, col_idx and values (no
  // padding rows or columns), so CSR's default kernel, HOLA-SpMV, runs them (csr_method,
  // kernels/gpu/spmv.hpp). The block-row kernel with R = C = 1 measured 0.62x cuSPARSE against
  // the CSR row kernel's 0.83x on the same arrays (H200, replicated set), and HOLA is faster
  // than the row kernel in geometric mean at every size measured.
  if (r == 1 && c == 1)
    return spmv_hola_arrays(a.rows, static_cast<std::int64_t>(a.block_col.size()), a.block_ptr.data(),
                            a.block_col.data(), a.values.data(), alpha, x, beta, y, ctx);
  const int lanes = bcsr_lanes_per_block_row(mb, static_cast<std::int64_t>(a.block_col.size()));
  const shape m{mb, a.rows, a.cols, r, c, lanes};
  const unsigned blocks = launch_blocks(mb * lanes, block_threads);
  const kernel_fn<V> kernel = pick<V>(r, c);
  kernel<<<blocks, block_threads, 0, static_cast<cudaStream_t>(ctx.stream())>>>(
      m, a.block_ptr.data(), a.block_col.data(), a.values.data(), alpha, x, beta, y);
  check_cuda(cudaGetLastError(), "gpu::spmv: launching the BCSR block-row kernel");
}

#define SPCONV_INST(V) \
  template void spmv<V>(const bcsr<V, I, device>&, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
