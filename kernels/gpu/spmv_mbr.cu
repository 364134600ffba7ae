// MBR SpMV and SMMV on the GPU (shared/papers/mbr-kannan.txt sec. III-IV, fig. 3-6).
// Both kernels decode a block the same way: its bitmap is loaded once as one unsigned word of
// the bitmap's own width (sec. III's maptype; a template parameter, dispatched once per call on
// bitmap_bytes), a matrix row i of the block keeps its slice (bits i*c .. i*c + c - 1) and
// visits the set bits with find-first-set then clear-lowest (sec. IV-A, fig. 5: z iterations
// per block instead of r*c tests; __ffsll is the instruction the paper's de Bruijn lookup
// emulates). The column inside the block is the bit's position in the slice, so the paper's
// division and remainder (sec. IV) disappear; values are stored in bit order, so a row's
// values follow the block's set bits below its slice.
//
// Which kernel runs:
// - gpu::spmv with r in {1, 2, 4, 8}, every height the automatic block size can pick
//   (cpu::resolve_mbr_params), on matrices of fewer than 2^18 rows (mbr_uses_block_row_kernel,
//   spmv_mbr.hpp, where the measurements are): the block-row kernel. A group of L lanes of one warp takes a
//   block row (L a power of two by the mean number of blocks per block row); lane `sub` takes
//   blocks sub, L + sub, 2L + sub, ... of it, as the BCSR kernel's lanes do (sec. II, fig. 2),
//   and decodes each whole block (fig. 3-4) into the block row's R = r sums, kept in
//   registers (R a template parameter). A block's first value is value_ptr[br] plus the set
//   bits of the block row's earlier blocks: per chunk of L blocks a shuffle scan of the lanes'
//   popcounts, plus the running total of the earlier chunks. A shuffle tree adds the group's
//   sums. Why: the row kernel below makes every row of a block row walk all of its blocks, so a
//   long block row holds its r threads for the whole walk while the rest of the warp idles, and
//   a warp's threads read values of different block rows far apart (H100, double, replicated to
//   100M entries: arrow 0.07x, ca-AstroPh 0.18x, rajat01 0.26x cuSPARSE). Here L lanes share a
//   block row and neighbouring lanes read neighbouring blocks. Lanes split a row's sum, and
//   products may be contracted to FMA (nvcc's default, as in the BCSR kernel), so the result
//   is held to the CSR reference's tolerance, not to the CPU's bits.
// - gpu::spmm (k >= 1 vectors, k = 1 included), and gpu::spmv with another r or on larger
//   matrices: the row kernel.
//   One thread per matrix row: row i of block row br walks the blocks of br in stored order
//   and decodes its own slice of each. For k vectors (sec. IV-B) every decoded bit feeds K
//   multiply-adds with K a template parameter (unrolled), K <= 8 per kernel, so the decode is
//   shared by the K vectors. The r threads of a block row sit in one warp and read the same
//   block_col_idx and bitmap words (broadcast loads); each output element is summed by one
//   thread in the CPU's order (blocks by column, then bits) with round-to-nearest intrinsics,
//   never contracted to FMA, so the products are the CPU's bits, without atomics or reduction.
//   Its cost is CSR-scalar's: a long block row holds its rows' threads, and rows of very
//   different lengths leave lanes idle.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "convert/gpu/mbr_rows.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/block_row_sums.cuh"
#include "kernels/gpu/search.cuh"
#include "kernels/gpu/spmv_bcsr.hpp"
#include "kernels/gpu/spmv_mbr.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;
constexpr int warp_size = 32;
constexpr unsigned full_mask = 0xffffffffu;
constexpr int max_vectors = 8;  // vectors per kernel: the range where SMMV peaks (sec. V-A)

__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }

// Calls f(j) for each set bit j of a row's slice, lowest first (sec. IV-A, fig. 5): the loop
// runs once per entry and its test is the only condition; j is the column inside the block.
template <class F>
__device__ __forceinline__ void for_each_column(std::uint64_t cols, F&& f) {
  for (; cols; cols &= cols - 1) f(__ffsll(static_cast<long long>(cols)) - 1);
}

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
      for_each_column(part.cols, [&](int j) {
        const V val = values[u++];
        const V* const xp = xb + static_cast<std::int64_t>(j) * ld;
#pragma unroll
        for (int l = 0; l < K; ++l) acc[l] = add(acc[l], mul(val, xp[l]));
      });
      v += __popcll(map);
    }
    V* const yr = y + row * ld;
#pragma unroll
    for (int l = 0; l < K; ++l)
      // beta == 0 writes y without reading it (BLAS semantics: y may hold NaN).
      yr[l] = beta == V(0) ? mul(alpha, acc[l]) : add(mul(alpha, acc[l]), mul(beta, yr[l]));
  }
}

struct block_row_shape {
  std::int64_t block_rows, rows;  // ceil(rows / r), rows
  int c, lanes;                   // lanes: a power of two in [1, 32]
};

// y = alpha*A*x + beta*y for blocks of height R. Each warp takes 32 / lanes consecutive block
// rows at a time; that loop's bound, and the chunk loop's (the longest of the warp's block
// rows), are the same for every lane of the warp, so every full-mask shuffle and reduction is
// reached by all 32 lanes, whatever their block rows' lengths.
// At least 5 blocks per SM (up to 51 registers): with only the block size as a bound, ptxas
// (CUDA 13.0) held R = 2 and R = 8 to 32 and 48 registers and spilled 4 to 16 bytes; with 5
// blocks every instance fits without spilling.
template <class M, int R, class V>
__global__ void __launch_bounds__(block_threads, 5)
    block_row_kernel(block_row_shape m, const I* __restrict__ block_row_ptr, const I* __restrict__ block_col_idx,
                     const M* __restrict__ bitmaps, const I* __restrict__ value_ptr, const V* __restrict__ values,
                     V alpha, const V* __restrict__ x, V beta, V* y) {
  const int lanes = m.lanes, lane = static_cast<int>(threadIdx.x % warp_size), sub = lane % lanes;
  const int per_warp = warp_size / lanes;
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / warp_size;
  for (std::int64_t first = warp * per_warp; first < m.block_rows; first += warps * per_warp) {
    const std::int64_t br = first + lane / lanes;
    // A group past the last block row walks an empty one: it loads nothing and counts 0.
    const bool live = br < m.block_rows;
    const I b0 = live ? block_row_ptr[br] : 0;
    // Lengths and chunk starts are unsigned: a start stays below 2^31 + 32, so never wraps.
    const std::uint32_t len = live ? static_cast<std::uint32_t>(block_row_ptr[br + 1] - b0) : 0u;
    I base = live ? value_ptr[br] : 0;  // the first value of the chunk's first block
    V sum[R];
#pragma unroll
    for (int i = 0; i < R; ++i) sum[i] = V(0);
    const std::uint32_t longest = __reduce_max_sync(full_mask, len);
    for (std::uint32_t chunk = 0; chunk < longest; chunk += static_cast<std::uint32_t>(lanes)) {
      // Lanes past their block row's end (or the whole group, once its block row is done)
      // take part in the shuffles with an empty bitmap.
      const bool has = chunk + static_cast<std::uint32_t>(sub) < len;
      const I blk = b0 + static_cast<I>(has ? chunk + static_cast<std::uint32_t>(sub) : 0u);
      const std::uint64_t map = has ? bitmaps[blk] : M(0);
      const int count = __popcll(map);
      // Inclusive scan of the group's popcounts (width lanes): lane sub's block starts after
      // the values of the chunk's blocks before it; the last lane holds the chunk's total.
      const int upto = group_inclusive_sum(count, lanes);
      const int total = __shfl_sync(full_mask, upto, lanes - 1, lanes);
      if (has) {
        I u = base + (upto - count);  // values are in bit order: row i's follow rows 0..i-1's
        const V* const xb = x + static_cast<std::int64_t>(block_col_idx[blk]) * m.c;
#pragma unroll
        for (int i = 0; i < R; ++i)
          for_each_column(mbr_row_of(map, i, m.c).cols, [&](int j) { sum[i] += values[u++] * xb[j]; });
      }
      base += total;
    }
    write_block_row(sum, R, lanes, live && sub == 0, br, m.rows, alpha, beta, y);
  }
}

template <class M, int R, class V>
void launch_block_rows(const mbr<V, I, device>& a, std::int64_t block_rows, V alpha, const V* x, V beta, V* y,
                       cudaStream_t s) {
  // BCSR's rule for lanes per block row fits: the unit a lane takes is a block in both
  // formats, so a group of about the mean number of blocks walks a typical block row in one
  // chunk, and long block rows get up to a warp (the rule and its measurements:
  // kernels/gpu/spmv_bcsr.hpp).
  const int lanes = bcsr_lanes_per_block_row(block_rows, static_cast<std::int64_t>(a.block_col_idx.size()));
  const block_row_shape m{block_rows, a.rows, a.params.block_cols, lanes};
  // A block's bitmap starts at byte b * sizeof(M) of an allocation aligned far beyond 8
  // bytes, so it reads as one aligned M (in both kernels).
  block_row_kernel<M, R, V><<<launch_blocks(block_rows * lanes, block_threads), block_threads, 0, s>>>(
      m, a.block_row_ptr.data(), a.block_col_idx.data(), reinterpret_cast<const M*>(a.bitmaps.data()),
      a.value_ptr.data(), a.values.data(), alpha, x, beta, y);
}

template <class M, int K, class V>
void launch_rows(const mbr<V, I, device>& a, std::int64_t ld, V alpha, const V* x, V beta, V* y, cudaStream_t s) {
  row_kernel<M, K, V><<<launch_blocks(a.rows, block_threads), block_threads, 0, s>>>(
      a.rows, a.params.block_rows, a.params.block_cols, a.block_row_ptr.data(), a.block_col_idx.data(),
      reinterpret_cast<const M*>(a.bitmaps.data()), a.value_ptr.data(), a.values.data(), ld, alpha, x, beta, y);
}

template <class M, class V>
void launch_group(int group, const mbr<V, I, device>& a, std::int64_t ld, V alpha, const V* x, V beta, V* y,
                  cudaStream_t s) {
  switch (group) {
    case 1: launch_rows<M, 1>(a, ld, alpha, x, beta, y, s); break;
    case 2: launch_rows<M, 2>(a, ld, alpha, x, beta, y, s); break;
    case 3: launch_rows<M, 3>(a, ld, alpha, x, beta, y, s); break;
    case 4: launch_rows<M, 4>(a, ld, alpha, x, beta, y, s); break;
    case 5: launch_rows<M, 5>(a, ld, alpha, x, beta, y, s); break;
    case 6: launch_rows<M, 6>(a, ld, alpha, x, beta, y, s); break;
    case 7: launch_rows<M, 7>(a, ld, alpha, x, beta, y, s); break;
    default: launch_rows<M, max_vectors>(a, ld, alpha, x, beta, y, s); break;
  }
}

// Calls f with a value of the bitmap's word type for bitmap_bytes w (checked before): one
// dispatch per call, so the kernels load words of the bitmap's own width (sec. III).
template <class F>
void with_bitmap_type(int w, F&& f) {
  switch (w) {
    case 1: f(std::uint8_t{}); break;
    case 2: f(std::uint16_t{}); break;
    case 4: f(std::uint32_t{}); break;
    default: f(std::uint64_t{}); break;
  }
}

// The number of block rows, ceil(rows / r), after checking what both kernels rely on.
template <class V>
std::int64_t checked_block_rows(const mbr<V, I, device>& a, const std::string& fn) {
  const int r = a.params.block_rows, c = a.params.block_cols, w = a.params.bitmap_bytes;
  if (r < 1 || c < 1 || r * c > 64 || w != mbr_bitmap_bytes(static_cast<std::int64_t>(r) * c))
    fail(errc::usage, fn + ": mbr block size " + std::to_string(r) + " x " + std::to_string(c) +
                          " with bitmap_bytes " + std::to_string(w) + " is not a valid mbr block");
  const std::int64_t block_rows = (a.rows + r - 1) / r;
  if (a.block_row_ptr.size() != static_cast<std::size_t>(block_rows) + 1 ||
      a.value_ptr.size() != static_cast<std::size_t>(block_rows) + 1)
    fail(errc::usage, fn + ": mbr block_row_ptr / value_ptr have " + std::to_string(a.block_row_ptr.size()) +
                          " / " + std::to_string(a.value_ptr.size()) + " elements, expected " +
                          std::to_string(block_rows + 1));
  return block_rows;
}

}  // namespace

template <class V>
void spmm(const mbr<V, I, device>& a, int k, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  if (k < 1) fail(errc::usage, "gpu::spmm: mbr k = " + std::to_string(k) + " vectors (needs k >= 1)");
  checked_block_rows(a, "gpu::spmm");
  if (a.rows == 0) return;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  const int w = a.params.bitmap_bytes;
  for (int j0 = 0; j0 < k; j0 += max_vectors) {
    const int group = std::min(max_vectors, k - j0);
    with_bitmap_type(w, [&](auto word) { launch_group<decltype(word)>(group, a, k, alpha, x + j0, beta, y + j0, s); });
    check_cuda(cudaGetLastError(), "gpu::spmm: launching the mbr row kernel (" + std::to_string(group) +
                                       " vectors, " + std::to_string(w) + "-byte bitmaps)");
  }
}

template <class V>
void spmv(const mbr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  const std::int64_t block_rows = checked_block_rows(a, "gpu::spmv");
  if (a.rows == 0) return;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  const int r = a.params.block_rows, w = a.params.bitmap_bytes;
  const bool block_row_kernel = mbr_uses_block_row_kernel(a.rows, r);
  with_bitmap_type(w, [&](auto word) {
    using M = decltype(word);
    switch (block_row_kernel ? r : 0) {
      case 1: launch_block_rows<M, 1>(a, block_rows, alpha, x, beta, y, s); break;
      case 2: launch_block_rows<M, 2>(a, block_rows, alpha, x, beta, y, s); break;
      case 4: launch_block_rows<M, 4>(a, block_rows, alpha, x, beta, y, s); break;
      case 8: launch_block_rows<M, 8>(a, block_rows, alpha, x, beta, y, s); break;
      default: launch_rows<M, 1>(a, 1, alpha, x, beta, y, s); break;
    }
  });
  check_cuda(cudaGetLastError(), std::string("gpu::spmv: launching the mbr ") +
                                     (block_row_kernel ? "block-row" : "row") + " kernel (" +
                                     std::to_string(r) + "-row blocks, " + std::to_string(w) + "-byte bitmaps)");
}

#define SPCONV_INST(V)                                                                      \
  template void spmv<V>(const mbr<V, I, device>&, V, const V*, V, V*, gpu_context&); \
  template void spmm<V>(const mbr<V, I, device>&, int, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
