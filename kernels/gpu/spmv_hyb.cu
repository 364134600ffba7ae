// HYB SpMV on the GPU (liu-thesis-csr5.txt sec. 5.3.1: Bell and Garland's HYB, an ELL kernel,
// sec. 5.2.2, for the regular part and a COO kernel, sec. 5.2.3, for the tail).
#include <cuda_runtime.h>

#include <string>

#include "formats/instantiate.hpp"
#include "kernels/gpu/coo_accumulate.cuh"
#include "kernels/gpu/slot_batch.cuh"
#include "kernels/gpu/spmv_hyb.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;

// Slots of a row whose loads ell_rows issues together.
constexpr int ell_batch = 4;

// ELL, a thread per row. Padding only follows a row's entries, so the row ends at its first
// padding slot (recognised by its column, never by its value). The slots are taken ell_batch
// at a time: their column and value loads, then the x loads of those that are entries, are
// issued before the first addition, so a thread waits one memory latency per batch instead of
// two per slot (the test for padding after every column load kept the loop to one slot in
// flight); a batch may read up to ell_batch - 1 padding slots past the row's end, inside the
// ELL arrays. The additions keep the slots' order.
template <class V>
__global__ void ell_rows(std::int64_t rows, std::int64_t w, const I* __restrict__ col, const V* __restrict__ val,
                         V alpha, const V* __restrict__ x, V beta, V* y) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += stride) {
    V sum = 0;
    const std::int64_t end = w * rows;
    std::int64_t s = r;
    bool more = true;
    for (; more && s + (ell_batch - 1) * rows < end; s += ell_batch * rows) {
      I c[ell_batch];
      V v[ell_batch], xv[ell_batch];
      load_slots(col, val, s, rows, x, [](I j, const V* xs) { return j == ell_padding ? V(0) : xs[j]; }, c, v, xv);
#pragma unroll
      for (int q = 0; q < ell_batch; ++q) {
        more = more && c[q] != ell_padding;
        if (more) sum += v[q] * xv[q];
      }
    }
    for (; more && s < end; s += rows) {
      const I c = col[s];
      if (c == ell_padding) break;
      sum += val[s] * x[c];
    }
    // beta == 0 writes y without reading it (BLAS semantics).
    y[r] = beta == V(0) ? alpha * sum : alpha * sum + beta * y[r];
  }
}

}  // namespace

template <class V>
void spmv(const hyb<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  const std::int64_t rows = a.rows, w = a.params.ell_width, tail = a.coo.nnz();
  if (w < 0 || a.ell.col_idx.size() != static_cast<std::size_t>(rows * w) ||
      a.coo.row_idx.size() != static_cast<std::size_t>(tail) || a.coo.col_idx.size() != static_cast<std::size_t>(tail))
    fail(errc::usage, "gpu::spmv: hyb arrays do not match rows " + std::to_string(rows) + " and ell_width " +
                          std::to_string(w) + " (ell/col_idx has " + std::to_string(a.ell.col_idx.size()) +
                          " elements)");
  if (rows == 0) return;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  ell_rows<V><<<launch_blocks(rows, block_threads), block_threads, 0, s>>>(
      rows, w, a.ell.col_idx.data(), a.ell.values.data(), alpha, x, beta, y);
  check_cuda(cudaGetLastError(), "gpu::spmv: launching the hyb ELL kernel");
  // The tail holds the entries of rows longer than the ELL width, not rows of one entry.
  detail::launch_coo_accumulate(tail, a.coo.row_idx.data(), a.coo.col_idx.data(), a.coo.values.data(), alpha, x, y,
                                false, s, "gpu::spmv: launching the hyb COO tail kernel");
}

#define SPCONV_INST(V) template void spmv<V>(const hyb<V, std::int32_t, device>&, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
