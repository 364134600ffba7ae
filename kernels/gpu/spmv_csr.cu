// Our CSR SpMV kernel: the row-block methods of liu-thesis-csr5.txt sec. 8.3.1, CSR-scalar
// (Algorithm 28) and CSR-vector (Algorithm 29), as one kernel over the vector width.
#include <cuda_runtime.h>

#include <string>

#include "formats/instantiate.hpp"
#include "kernels/gpu/slot_batch.cuh"
#include "kernels/gpu/spmv.hpp"

namespace spconv::gpu {
namespace {

constexpr int block_threads = 256;  // a multiple of the warp, so warps never straddle blocks
constexpr int warp_size = 32;
constexpr int csr_batch = 4;  // entries whose loads a lane issues together

// beta == 0 writes y without reading it (BLAS semantics: y may be uninitialised or NaN).
template <class V>
__device__ __forceinline__ V combine(V alpha, V sum, V beta, const V* y, std::int64_t r) {
  return beta == V(0) ? alpha * sum : alpha * sum + beta * y[r];
}

// A vector of L lanes per row; lane j of the vector sums entries j, j + L, ... of its row, a
// shuffle tree inside the vector adds the partial sums. All lanes of a warp run the same number
// of iterations (a row index past the end only idles its vector), so the full-mask shuffles
// always see the whole warp.
template <class V, class I, int L>
__global__ void __launch_bounds__(block_threads)
    vector_per_row(std::int64_t rows, const I* __restrict__ ptr, const I* __restrict__ col, const V* __restrict__ val,
                   V alpha, const V* __restrict__ x, V beta, V* y) {
  const int lane = static_cast<int>(threadIdx.x % L);
  const std::int64_t vectors = static_cast<std::int64_t>(gridDim.x) * blockDim.x / L;
  const std::int64_t first = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / L;
  // The warp's first row decides whether the warp goes on, the same value in all its lanes.
  const std::int64_t warp_first = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size *
                                  (warp_size / L);
  for (std::int64_t r = first, w = warp_first; w < rows; r += vectors, w += vectors) {
    V sum = 0;
    if (r < rows) {
      // 64-bit k: k + L must not overflow a 32-bit index near its maximum.
      std::int64_t k = static_cast<std::int64_t>(ptr[r]) + lane;
      const std::int64_t end = ptr[r + 1];
      // A thread per row (L = 1) takes its entries csr_batch at a time: all their column and
      // value loads are issued, then their x loads, then the adds in the entries' order, so
      // the thread has csr_batch loads in flight instead of one chain of col -> x -> add per
      // entry. Measured (replicated set): +4% to +16% on 8 of the 11 matrices with a thread
      // per row, -5% and -7% on two (H100; specs/gpu.md), but -4% to -9% with vectors of 8
      // to 32 lanes (H200), which already keep several loads in flight per row, so vectors
      // keep the plain loop.
      if constexpr (L == 1)
        for (; k + csr_batch - 1 < end; k += csr_batch) {
          I c[csr_batch];
          V v[csr_batch], xv[csr_batch];
          load_slots(col, val, k, 1, x, [](I j, const V* xs) { return xs[j]; }, c, v, xv);
#pragma unroll
          for (int b = 0; b < csr_batch; ++b) sum += v[b] * xv[b];
        }
      for (; k < end; k += L) sum += val[k] * x[col[k]];
    }
    for (int offset = L / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset, L);
    if (lane == 0 && r < rows) y[r] = combine(alpha, sum, beta, y, r);
  }
}

template <class V, class I, int L>
void launch(std::int64_t rows, const I* ptr, const I* col, const V* val, V alpha, const V* x, V beta, V* y,
            cudaStream_t stream) {
  vector_per_row<V, I, L><<<launch_blocks(rows * L, block_threads), block_threads, 0, stream>>>(rows, ptr, col, val,
                                                                                             alpha, x, beta, y);
  check_cuda(cudaGetLastError(), "gpu::spmv: launching the CSR kernel with " + std::to_string(L) + " lanes per row");
}

}  // namespace

int csr_vector_lanes(std::int64_t rows, std::int64_t nnz) {
  if (rows <= 0) return 1;
  const std::int64_t mean = nnz / rows;  // floor: the thresholds are integers
  if (mean < csr_scalar_below) return 1;
  if (mean >= csr_warp_from) return 32;
  int lanes = 1;
  while (lanes < 16 && 2 * std::int64_t{lanes} <= mean) lanes *= 2;
  return lanes;
}

template <class V, class I>
void spmv(const csr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx, int lanes) {
  if (a.row_ptr.size() != static_cast<std::size_t>(a.rows) + 1)
    fail(errc::usage, "gpu::spmv: csr row_ptr has " + std::to_string(a.row_ptr.size()) + " elements, expected " +
                          std::to_string(a.rows + 1));
  if (lanes == 0) lanes = csr_vector_lanes(a.rows, a.nnz());
  if (a.rows == 0) return;
  const auto stream = static_cast<cudaStream_t>(ctx.stream());
  const I* const ptr = a.row_ptr.data();
  const I* const col = a.col_idx.data();
  const V* const val = a.values.data();
  switch (lanes) {
    case 1: return launch<V, I, 1>(a.rows, ptr, col, val, alpha, x, beta, y, stream);
    case 2: return launch<V, I, 2>(a.rows, ptr, col, val, alpha, x, beta, y, stream);
    case 4: return launch<V, I, 4>(a.rows, ptr, col, val, alpha, x, beta, y, stream);
    case 8: return launch<V, I, 8>(a.rows, ptr, col, val, alpha, x, beta, y, stream);
    case 16: return launch<V, I, 16>(a.rows, ptr, col, val, alpha, x, beta, y, stream);
    case 32: return launch<V, I, 32>(a.rows, ptr, col, val, alpha, x, beta, y, stream);
    default:
      fail(errc::usage, "gpu::spmv: " + std::to_string(lanes) +
                            " lanes per CSR row: expected 0 (automatic) or a power of two from 1 to 32");
  }
}

#define SPCONV_INST(V, I) \
  template void spmv<V, I>(const csr<V, I, device>&, V, const V*, V, V*, gpu_context&, int);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
