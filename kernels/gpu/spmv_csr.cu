// Our CSR SpMV kernels: the row-block methods of liu-thesis-csr5.txt sec. 8.3.1,
// CSR-scalar (Algorithm 28) and CSR-vector (Algorithm 29) with a warp as the vector unit.
#include <cuda_runtime.h>

#include "formats/instantiate.hpp"
#include "kernels/gpu/spmv.hpp"

namespace spconv::gpu {
namespace {

constexpr int block_threads = 256;  // a multiple of the warp, so warps never straddle blocks
constexpr int warp_size = 32;

// beta == 0 writes y without reading it (BLAS semantics: y may be uninitialised or NaN).
template <class V>
__device__ __forceinline__ V combine(V alpha, V sum, V beta, const V* y, std::int64_t r) {
  return beta == V(0) ? alpha * sum : alpha * sum + beta * y[r];
}

template <class V, class I>
__global__ void thread_per_row(std::int64_t rows, const I* __restrict__ ptr, const I* __restrict__ col,
                               const V* __restrict__ val, V alpha, const V* __restrict__ x, V beta, V* y) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += stride) {
    V sum = 0;
    for (I k = ptr[r], end = ptr[r + 1]; k < end; ++k) sum += val[k] * x[col[k]];
    y[r] = combine(alpha, sum, beta, y, r);
  }
}

// Lane j of the row's warp sums entries j, j + 32, ...; a shuffle tree adds the 32 partial
// sums. Every lane of a warp works on the same row, so the full-mask shuffles are safe.
template <class V, class I>
__global__ void warp_per_row(std::int64_t rows, const I* __restrict__ ptr, const I* __restrict__ col,
                             const V* __restrict__ val, V alpha, const V* __restrict__ x, V beta, V* y) {
  const int lane = static_cast<int>(threadIdx.x % warp_size);
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / warp_size;
  for (std::int64_t r = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size; r < rows;
       r += warps) {
    V sum = 0;
    // 64-bit k: k + 32 must not overflow a 32-bit index near its maximum.
    for (std::int64_t k = static_cast<std::int64_t>(ptr[r]) + lane, end = ptr[r + 1]; k < end; k += warp_size)
      sum += val[k] * x[col[k]];
    for (int offset = warp_size / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) y[r] = combine(alpha, sum, beta, y, r);
  }
}

}  // namespace

csr_kernel choose_csr_kernel(std::int64_t rows, std::int64_t nnz) {
  if (rows <= 0) return csr_kernel::thread_per_row;
  const double mean = static_cast<double>(nnz) / static_cast<double>(rows);
  return mean >= csr_warp_min_mean_row ? csr_kernel::warp_per_row : csr_kernel::thread_per_row;
}

template <class V, class I>
void spmv(const csr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx, csr_kernel kernel) {
  if (a.row_ptr.size() != static_cast<std::size_t>(a.rows) + 1)
    fail(errc::usage, "gpu::spmv: csr row_ptr has " + std::to_string(a.row_ptr.size()) + " elements, expected " +
                          std::to_string(a.rows + 1));
  if (a.rows == 0) return;
  if (kernel == csr_kernel::automatic) kernel = choose_csr_kernel(a.rows, a.nnz());
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  if (kernel == csr_kernel::warp_per_row) {
    warp_per_row<V, I><<<launch_blocks(a.rows * warp_size, block_threads), block_threads, 0, stream>>>(
        a.rows, a.row_ptr.data(), a.col_idx.data(), a.values.data(), alpha, x, beta, y);
    check_cuda(cudaGetLastError(), "gpu::spmv: launching the warp-per-row CSR kernel");
  } else {
    thread_per_row<V, I><<<launch_blocks(a.rows, block_threads), block_threads, 0, stream>>>(
        a.rows, a.row_ptr.data(), a.col_idx.data(), a.values.data(), alpha, x, beta, y);
    check_cuda(cudaGetLastError(), "gpu::spmv: launching the thread-per-row CSR kernel");
  }
}

#define SPCONV_INST(V, I) \
  template void spmv<V, I>(const csr<V, I, device>&, V, const V*, V, V*, gpu_context&, csr_kernel);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
