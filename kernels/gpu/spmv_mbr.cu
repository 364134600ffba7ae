// MBR SpMV and SMMV on the GPU (shared/papers/mbr-kannan.txt sec. IV, fig. 3-6).
// One thread per matrix row: row i of block row br walks the blocks of br in stored order,
// loads each bitmap once as one unsigned word of the bitmap's own width (sec. III's maptype;
// a template parameter, dispatched once per call on bitmap_bytes), keeps only its own slice
// (bits i*c .. i*c + c - 1) and visits the set bits with find-first-set then clear-lowest
// (sec. IV-A: z iterations per block instead of r*c tests; __ffsll is the instruction the
// paper's de Bruijn lookup emulates). The column inside the block is the bit's position in
// the slice, so the paper's division and remainder (sec. IV) disappear; the value index is
// the block's first value plus the set bits below the slice. For k vectors (sec. IV-B) every
// decoded bit feeds K multiply-adds with K a template parameter (unrolled), K <= 8 per kernel.
// Why a thread per row: the r threads of a block row sit in one warp and read the same
// block_col_idx and bitmap words (broadcast loads), each output element is summed by one
// thread in the CPU's order (blocks by column, then bits), so the products are the CPU's bits
// (round-to-nearest intrinsics, never contracted to FMA) and need no atomics or reduction.
// The cost: a row of a long block row walks every block of it, its own entries or not, and
// rows of very different lengths leave lanes idle, as in CSR-scalar.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "convert/gpu/mbr_rows.cuh"
#include "formats/instantiate.hpp"
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

}  // namespace

template <class V>
void spmm(const mbr<V, I, device>& a, int k, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  if (k < 1) fail(errc::usage, "gpu::spmm: mbr k = " + std::to_string(k) + " vectors (needs k >= 1)");
  const int r = a.params.block_rows, c = a.params.block_cols, w = a.params.bitmap_bytes;
  if (r < 1 || c < 1 || r * c > 64 || w != mbr_bitmap_bytes(static_cast<std::int64_t>(r) * c))
    fail(errc::usage, "gpu::spmm: mbr block size " + std::to_string(r) + " x " + std::to_string(c) +
                          " with bitmap_bytes " + std::to_string(w) + " is not a valid mbr block");
  const std::int64_t block_rows = (a.rows + r - 1) / r;
  if (a.block_row_ptr.size() != static_cast<std::size_t>(block_rows) + 1 ||
      a.value_ptr.size() != static_cast<std::size_t>(block_rows) + 1)
    fail(errc::usage, "gpu::spmm: mbr block_row_ptr / value_ptr have " + std::to_string(a.block_row_ptr.size()) +
                          " / " + std::to_string(a.value_ptr.size()) + " elements, expected " +
                          std::to_string(block_rows + 1));
  if (a.rows == 0) return;
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
  spmm(a, 1, alpha, x, beta, y, ctx);
}

#define SPCONV_INST(V)                                                                      \
  template void spmv<V>(const mbr<V, I, device>&, V, const V*, V, V*, gpu_context&); \
  template void spmm<V>(const mbr<V, I, device>&, int, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
