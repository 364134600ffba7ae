// MBR SpMV and SMMV on the GPU (shared/papers/mbr-kannan.txt sec. IV, fig. 3-6).
//
// Both kernels give each row of a block row its own thread (lane), which walks blocks of the
// block row in stored order, loads each bitmap as one unsigned word of the bitmap's own width
// (sec. III's maptype; a template parameter, dispatched once per call on bitmap_bytes), keeps
// only its own slice (bits i*c .. i*c + c - 1) and visits the set bits with find-first-set then
// clear-lowest (sec. IV-A: z iterations per block instead of r*c tests; __ffsll is the
// instruction the paper's de Bruijn lookup emulates). The column inside the block is the bit's
// position in the slice, so the paper's division and remainder (sec. IV) disappear; the value
// index is the block's first value plus the set bits below the slice. Why a lane per row: the
// r lanes of a block read the same block_col_idx and bitmap words (broadcast loads) and
// consecutive runs of the block's values, which a block stores in bit order, so together they
// read the block's values in one sweep.
//
// SpMV with r in {1, 2, 4, 8} (the heights the automatic rule picks): a team of G * r lanes per
// block row, G groups of r lanes taking blocks g, g + G, ... of it, so a long block row is
// shared by G groups instead of walked by r threads alone. The block's first value is the
// block row's value_ptr plus the set bits of the team's earlier blocks: a scan of the blocks'
// popcounts over the groups at each step. A shuffle tree adds the groups' sums of each row.
// G follows CSR's lane rule over blocks, at most 32 / r (mbr_groups_per_block_row).
// SMMV (k vectors, sec. IV-B) and the other heights: a thread per matrix row walking every
// block of its block row, every decoded bit feeding K multiply-adds, K a template parameter
// (unrolled), K <= 8 per kernel.
//
// Both use round-to-nearest intrinsics (never contracted to FMA). Where one thread sums each
// row (G = 1, and the SMMV kernel) it adds the products in the CPU's order (blocks by column,
// then bits), so the result is cpu::spmm's bits; with G > 1 the groups' partial sums are
// added by the tree, within the CSR reference's tolerance.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "convert/gpu/mbr_rows.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/spmv.hpp"
#include "kernels/gpu/spmv_mbr.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;
constexpr int max_vectors = 8;  // vectors per kernel: the range where SMMV peaks (sec. V-A)

__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }

// Y[:, 0:K] = alpha * A * X[:, 0:K] + beta * Y[:, 0:K], X and Y row-major with leading
// dimension ld (x and y already point at the group's first vector).
template <class M, int K, class V>
__global__ void __launch_bounds__(block_threads)
    row_kernel(std::int64_t rows, int r, int c, const I* __restrict__ block_row_ptr,
               const I* __restrict__ block_col_idx, const M* __restrict__ bitmaps, const I* __restrict__ value_ptr,
               const V* __restrict__ values, std::int64_t ld, V alpha, const V* __restrict__ x, V beta, V* y) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; row < rows;
       row += stride) {
    const std::int64_t br = row / r;
    const int i = static_cast<int>(row - br * r);
    V acc[K];
#pragma unroll
    for (int l = 0; l < K; ++l) acc[l] = V(0);
    I v = value_ptr[br];
    for (I b = block_row_ptr[br], end = block_row_ptr[br + 1]; b < end; ++b) {
      const std::uint64_t map = bitmaps[b];
      const mbr_row_bits part = mbr_row_of(map, i, c);
      const V* const xb = x + static_cast<std::int64_t>(block_col_idx[b]) * c * ld;
      I u = v + part.before;
      for (std::uint64_t bits = part.cols; bits; bits &= bits - 1) {
        const V val = values[u++];
        const V* const xp = xb + static_cast<std::int64_t>(__ffsll(static_cast<long long>(bits)) - 1) * ld;
#pragma unroll
        for (int l = 0; l < K; ++l) acc[l] = add(acc[l], mul(val, xp[l]));
      }
      v += __popcll(map);
    }
    V* const yr = y + row * ld;
#pragma unroll
    for (int l = 0; l < K; ++l)
      // beta == 0 writes y without reading it (BLAS semantics: y may hold NaN).
      yr[l] = beta == V(0) ? mul(alpha, acc[l]) : add(mul(alpha, acc[l]), mul(beta, yr[l]));
  }
}

// One vector, r = R in {1, 2, 4, 8}: a team of G * R lanes per block row (see the top), lane
// (g, i) = (sub / R, sub % R) of the team takes row i of blocks g, g + G, ... Each warp takes
// 32 / (G * R) consecutive block rows at a time; the loop bound is the same for every lane of
// the warp, so the full-mask shuffles of the reduction see all 32 lanes, and the lanes of one
// team run the same number of block steps, so the team-mask scan sees the whole team.
struct block_row_shape {
  std::int64_t rows, block_rows;
  int c, groups;  // groups: G, a power of two with G * R <= 32
};

template <class M, int R, class V>
__global__ void __launch_bounds__(block_threads, 6)
    block_row_kernel(block_row_shape m, const I* __restrict__ block_row_ptr, const I* __restrict__ block_col_idx,
                     const M* __restrict__ bitmaps, const I* __restrict__ value_ptr, const V* __restrict__ values,
                     V alpha, const V* __restrict__ x, V beta, V* y) {
  constexpr int warp_size = 32;
  const int groups = m.groups, team = groups * R, c = m.c;
  const int lane = static_cast<int>(threadIdx.x % warp_size), sub = lane % team, per_warp = warp_size / team;
  const int i = sub % R, g = sub / R;
  const unsigned team_mask = team == warp_size ? 0xffffffffu : ((1u << team) - 1u) << (lane - sub);
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / warp_size;
  for (std::int64_t first = warp * per_warp; first < m.block_rows; first += warps * per_warp) {
    const std::int64_t br = first + lane / team;
    V sum = V(0);
    if (br < m.block_rows) {
      I base = value_ptr[br];
      for (I k0 = block_row_ptr[br], end = block_row_ptr[br + 1]; k0 < end; k0 += groups) {
        const I k = k0 + g;
        std::uint64_t map = 0;
        std::int64_t col0 = 0;
        if (k < end) {
          map = bitmaps[k];
          col0 = static_cast<std::int64_t>(block_col_idx[k]) * c;
        }
        // The set bits of the team's blocks up to and including this lane's: a scan over g
        // (the R lanes of one block hold the same count).
        const int n = __popcll(map);
        int upto = n;
        for (int d = 1; d < groups; d *= 2) {
          const int t = __shfl_up_sync(team_mask, upto, d * R, team);
          if (g >= d) upto += t;
        }
        const mbr_row_bits part = mbr_row_of(map, i, c);
        I u = base + upto - n + part.before;
        base += groups == 1 ? n : __shfl_sync(team_mask, upto, team - 1, team);
        for (std::uint64_t bits = part.cols; bits; bits &= bits - 1)
          sum = add(sum, mul(values[u++], x[col0 + __ffsll(static_cast<long long>(bits)) - 1]));
      }
    }
    // Row i's partial sums sit in the lanes i, i + R, ... of the team: a shuffle tree adds them
    // into lane i.
    for (int offset = team / 2; offset >= R; offset /= 2)
      sum = add(sum, __shfl_down_sync(0xffffffffu, sum, offset, team));
    // The last block row may overhang the matrix: its padding rows are not written.
    const std::int64_t row = br * R + i;
    if (br < m.block_rows && g == 0 && row < m.rows)
      // beta == 0 writes y without reading it (BLAS semantics: y may hold NaN).
      y[row] = beta == V(0) ? mul(alpha, sum) : add(mul(alpha, sum), mul(beta, y[row]));
  }
}

template <class M, int R, class V>
void launch_block_rows(const mbr<V, I, device>& a, V alpha, const V* x, V beta, V* y, cudaStream_t s) {
  const std::int64_t block_rows = (a.rows + R - 1) / R;
  const int groups = mbr_groups_per_block_row(block_rows, static_cast<std::int64_t>(a.block_col_idx.size()), R);
  const block_row_shape m{a.rows, block_rows, a.params.block_cols, groups};
  block_row_kernel<M, R, V><<<launch_blocks(block_rows * groups * R, block_threads), block_threads, 0, s>>>(
      m, a.block_row_ptr.data(), a.block_col_idx.data(), reinterpret_cast<const M*>(a.bitmaps.data()),
      a.value_ptr.data(), a.values.data(), alpha, x, beta, y);
}

// true when the block-row kernel took the product (r in {1, 2, 4, 8}).
template <class M, class V>
bool try_block_rows(const mbr<V, I, device>& a, V alpha, const V* x, V beta, V* y, cudaStream_t s) {
  switch (a.params.block_rows) {
    case 1: launch_block_rows<M, 1>(a, alpha, x, beta, y, s); return true;
    case 2: launch_block_rows<M, 2>(a, alpha, x, beta, y, s); return true;
    case 4: launch_block_rows<M, 4>(a, alpha, x, beta, y, s); return true;
    case 8: launch_block_rows<M, 8>(a, alpha, x, beta, y, s); return true;
    default: return false;
  }
}

template <class M, int K, class V>
void launch(const mbr<V, I, device>& a, std::int64_t ld, V alpha, const V* x, V beta, V* y, cudaStream_t s) {
  // A block's bitmap starts at byte b * sizeof(M) of an allocation aligned far beyond 8
  // bytes, so it reads as one aligned M.
  row_kernel<M, K, V><<<launch_blocks(a.rows, block_threads), block_threads, 0, s>>>(
      a.rows, a.params.block_rows, a.params.block_cols, a.block_row_ptr.data(), a.block_col_idx.data(),
      reinterpret_cast<const M*>(a.bitmaps.data()), a.value_ptr.data(), a.values.data(), ld, alpha, x, beta, y);
}

template <class M, class V>
void launch_group(int group, const mbr<V, I, device>& a, std::int64_t ld, V alpha, const V* x, V beta, V* y,
                  cudaStream_t s) {
  switch (group) {
    case 1: launch<M, 1>(a, ld, alpha, x, beta, y, s); break;
    case 2: launch<M, 2>(a, ld, alpha, x, beta, y, s); break;
    case 3: launch<M, 3>(a, ld, alpha, x, beta, y, s); break;
    case 4: launch<M, 4>(a, ld, alpha, x, beta, y, s); break;
    case 5: launch<M, 5>(a, ld, alpha, x, beta, y, s); break;
    case 6: launch<M, 6>(a, ld, alpha, x, beta, y, s); break;
    case 7: launch<M, 7>(a, ld, alpha, x, beta, y, s); break;
    default: launch<M, max_vectors>(a, ld, alpha, x, beta, y, s); break;
  }
}

// The checks of both products; `what` names the call in the messages.
template <class V>
void check_shape(const mbr<V, I, device>& a, const char* what) {
  const int r = a.params.block_rows, c = a.params.block_cols, w = a.params.bitmap_bytes;
  if (r < 1 || c < 1 || r * c > 64 || w != mbr_bitmap_bytes(static_cast<std::int64_t>(r) * c))
    fail(errc::usage, std::string(what) + ": mbr block size " + std::to_string(r) + " x " + std::to_string(c) +
                          " with bitmap_bytes " + std::to_string(w) + " is not a valid mbr block");
  const std::int64_t block_rows = (a.rows + r - 1) / r;
  if (a.block_row_ptr.size() != static_cast<std::size_t>(block_rows) + 1 ||
      a.value_ptr.size() != static_cast<std::size_t>(block_rows) + 1)
    fail(errc::usage, std::string(what) + ": mbr block_row_ptr / value_ptr have " +
                          std::to_string(a.block_row_ptr.size()) + " / " + std::to_string(a.value_ptr.size()) +
                          " elements, expected " + std::to_string(block_rows + 1));
}

}  // namespace

int mbr_groups_per_block_row(std::int64_t block_rows, std::int64_t nblocks, int r) {
  return std::min(csr_vector_lanes(block_rows, nblocks), std::max(1, 32 / r));
}

template <class V>
void spmm(const mbr<V, I, device>& a, int k, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  if (k < 1) fail(errc::usage, "gpu::spmm: mbr k = " + std::to_string(k) + " vectors (needs k >= 1)");
  check_shape(a, "gpu::spmm");
  if (a.rows == 0) return;
  const int w = a.params.bitmap_bytes;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  for (int j0 = 0; j0 < k; j0 += max_vectors) {
    const int group = std::min(max_vectors, k - j0);
    switch (w) {
      case 1: launch_group<std::uint8_t>(group, a, k, alpha, x + j0, beta, y + j0, s); break;
      case 2: launch_group<std::uint16_t>(group, a, k, alpha, x + j0, beta, y + j0, s); break;
      case 4: launch_group<std::uint32_t>(group, a, k, alpha, x + j0, beta, y + j0, s); break;
      default: launch_group<std::uint64_t>(group, a, k, alpha, x + j0, beta, y + j0, s); break;
    }
    check_cuda(cudaGetLastError(), "gpu::spmm: launching the mbr row kernel (" + std::to_string(group) +
                                       " vectors, " + std::to_string(w) + "-byte bitmaps)");
  }
}

template <class V>
void spmv(const mbr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  check_shape(a, "gpu::spmv");
  if (a.rows == 0) return;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  bool done = false;
  switch (a.params.bitmap_bytes) {
    case 1: done = try_block_rows<std::uint8_t>(a, alpha, x, beta, y, s); break;
    case 2: done = try_block_rows<std::uint16_t>(a, alpha, x, beta, y, s); break;
    case 4: done = try_block_rows<std::uint32_t>(a, alpha, x, beta, y, s); break;
    default: done = try_block_rows<std::uint64_t>(a, alpha, x, beta, y, s); break;
  }
  if (!done) return spmm(a, 1, alpha, x, beta, y, ctx);
  check_cuda(cudaGetLastError(), "gpu::spmv: launching the mbr block-row kernel (" +
                                     std::to_string(a.params.block_rows) + " rows per block)");
}

#define SPCONV_INST(V)                                                                      \
  template void spmv<V>(const mbr<V, I, device>&, V, const V*, V, V*, gpu_context&); \
  template void spmm<V>(const mbr<V, I, device>&, int, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
