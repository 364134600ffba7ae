// HOLA-SpMV (hola-spmv-steinberger.txt sec. 3): strict non-zero splitting between blocks
// (sec. 3.1, Algorithm 2), per-thread non-zero splitting inside a block with row-end bit masks
// (sec. 3.2, Algorithms 3-4), adaptive handling of rows shared between threads (Algorithm 6's
// idea) and the special cases of sec. 3.3 (empty rows, more rows than the block's buffer).
//
// Where this differs from the paper, and why:
// - Data loading (Algorithm 5) transposes each warp's entries in registers with shuffles. Here
//   the block loads col_idx/values coalesced, premultiplies by x and stages the products in
//   shared memory, padded by one slot per thread's run so that reading a thread's run is free
//   of bank conflicts. Same traffic to global memory, simpler code, and no power-of-two
//   constraint on the entries per thread.
// - y = alpha*A*x + beta*y instead of y = A*x: the first kernel scales (instead of clears)
//   exactly the rows that blocks add to atomically (rows a block starts in) and the empty rows;
//   the core kernel writes every other row once, reading y only when beta != 0.
#include <cuda_runtime.h>

#include <string>

#include "formats/instantiate.hpp"
#include "kernels/gpu/spmv_csr_hola.hpp"

namespace spconv::gpu {
namespace {

constexpr int warp_size = 32;
constexpr int npt = hola_entries_per_thread;
constexpr int threads = hola_block_threads;
constexpr int npb = hola_entries_per_block;
// Local rows a block keeps in its shared output buffer; a block spanning more rows (many
// empty rows, sec. 3.3) takes the alternative path.
constexpr int buffer_rows = npb;
static_assert(npt <= 32, "row-end bits of a thread's entries live in one 32-bit mask");

template <class V>
__device__ __forceinline__ V scaled(V beta, const V* y, std::int64_t r) {
  return beta == V(0) ? V(0) : beta * y[r];  // beta == 0 never reads y (BLAS semantics)
}

// Algorithm 2 (AssignRowsGlobal), a thread per row: the row holding entry b*npb becomes block
// b's first row. Rows a block starts in receive atomic additions (from this block and the one
// before), so they are set to beta*y here; so are empty rows, which no block writes.
// starts[blocks] = rows - 1 bounds the last block.
template <class V, class I>
__global__ void assign_rows_global(std::int64_t rows, const I* __restrict__ ptr, I* starts, std::int64_t blocks,
                                   V beta, V* y) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += stride) {
    const std::int64_t a = ptr[r], b = ptr[r + 1];
    bool starts_block = false;
    if (a < b)
      for (std::int64_t blk = (a + npb - 1) / npb, last = (b - 1) / npb; blk <= last; ++blk) {
        starts[blk] = static_cast<I>(r);
        starts_block = true;
      }
    if (a == b || starts_block) y[r] = scaled(beta, y, r);
    if (r == rows - 1) starts[blocks] = static_cast<I>(rows - 1);
  }
}

// The last row of [lo, hi] that begins before entry `end`: ptr is non-decreasing and ptr[lo] <
// end, so a binary search finds it.
template <class I>
__device__ std::int64_t last_row_before(const I* ptr, std::int64_t lo, std::int64_t hi, std::int64_t end) {
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (ptr[mid] < end) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// Sum of v over the warp (every lane active).
template <class V>
__device__ __forceinline__ V warp_sum(V v) {
  for (int o = warp_size / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Algorithms 3-4 (CoreHola SpMV with AssignRowsLocal) for one block of npb entries.
template <class V, class I>
__global__ void __launch_bounds__(threads) hola_core(std::int64_t nnz, const I* __restrict__ ptr,
                                                     const I* __restrict__ col, const V* __restrict__ val,
                                                     const I* __restrict__ starts, V alpha,
                                                     const V* __restrict__ x, V beta, V* y) {
  __shared__ V product[npb + npb / npt];  // padded: entry l at l + l / npt
  __shared__ V buffer[buffer_rows];       // the block's sum per local row
  __shared__ int row_start[threads];      // local row of each thread's first entry
  __shared__ unsigned row_end_bits[threads];
  __shared__ int warp_has_empty[threads / warp_size];

  const int tid = static_cast<int>(threadIdx.x);
  const std::int64_t block_start = static_cast<std::int64_t>(blockIdx.x) * npb;
  const std::int64_t block_end = min(block_start + npb, nnz);
  const int count = static_cast<int>(block_end - block_start);
  const std::int64_t first_row = starts[blockIdx.x];
  const std::int64_t last_row = last_row_before(ptr, first_row, static_cast<std::int64_t>(starts[blockIdx.x + 1]), block_end);
  const std::int64_t local_rows = last_row - first_row + 1;

  // Premultiplied products, loaded coalesced (Algorithm 5's purpose, see the file comment).
  for (int l = tid; l < count; l += threads)
    product[l + l / npt] = val[block_start + l] * x[col[block_start + l]];

  if (local_rows > buffer_rows) {
    // Sec. 3.3, more rows than the buffer holds: each thread finds the row of its first entry,
    // walks its entries and adds each row piece to y directly. Rows that begin inside the block
    // and end in it belong to it alone: set them to beta*y first (the first kernel did the
    // others: the first row, a last row continuing into the next block, empty rows).
    for (std::int64_t r = first_row + 1 + tid; r <= last_row; r += threads)
      if (ptr[r] < ptr[r + 1] && ptr[r + 1] <= block_end) y[r] = scaled(beta, y, r);
    __syncthreads();
    const int p0 = tid * npt;
    if (p0 < count) {
      std::int64_t row = last_row_before(ptr, first_row, last_row, block_start + p0 + 1);
      V sum = 0;
      for (int i = 0; i < npt && p0 + i < count; ++i) {
        const std::int64_t e = block_start + p0 + i;
        while (ptr[row + 1] <= e) ++row;
        sum += product[p0 + i + (p0 + i) / npt];
        if (i + 1 == npt || p0 + i + 1 == count || ptr[row + 1] == e + 1) {
          atomicAdd(y + row, alpha * sum);
          sum = 0;
        }
      }
    }
    return;
  }

  // Algorithm 4 (AssignRowsLocal): per local row, the threads whose first entry lies in it and
  // the bit of the thread holding its last entry in this block.
  row_end_bits[tid] = 0;
  if (tid < threads / warp_size) warp_has_empty[tid] = 0;
  for (std::int64_t k = tid; k < local_rows; k += threads) buffer[k] = V(0);
  __syncthreads();
  for (std::int64_t k = tid; k < local_rows; k += threads) {
    const std::int64_t r = first_row + k;
    const std::int64_t a = max(static_cast<std::int64_t>(ptr[r]) - block_start, std::int64_t{0});
    const std::int64_t b = min(static_cast<std::int64_t>(ptr[r + 1]) - block_start, static_cast<std::int64_t>(count));
    if (a >= b) {
      // An empty row: the warp whose thread ends the row before it must skip it (sec. 3.3).
      const std::int64_t before = a > 0 ? (a - 1) / npt : 0;
      warp_has_empty[before / warp_size] = 1;
      continue;
    }
    for (std::int64_t t = (a + npt - 1) / npt; t <= (b - 1) / npt; ++t) row_start[t] = static_cast<int>(k);
    atomicOr(&row_end_bits[(b - 1) / npt], 1u << ((b - 1) % npt));
  }
  __syncthreads();

  // Summation: a thread's run of npt products, writing each row it ends to the buffer.
  const int p0 = tid * npt;
  const int n = max(0, min(npt, count - p0));
  const bool skip_empty = warp_has_empty[tid / warp_size] != 0;
  const unsigned bits = row_end_bits[tid];
  int row = n > 0 ? row_start[tid] : 0;
  V sum = 0;
  for (int i = 0; i < n; ++i) {
    sum += product[p0 + i + (p0 + i) / npt];
    if (bits & (1u << i)) {
      buffer[row] = sum;  // the one thread ending a row writes it; partial sums come later
      sum = 0;
      ++row;
      if (skip_empty)  // the next entry's row: skip rows that end at or before it
        while (first_row + row < last_row && ptr[first_row + row + 1] <= block_start + p0 + i + 1) ++row;
    }
  }
  __syncthreads();

  // Shared rows (Algorithm 6's adaptivity): a thread whose run does not end its last row holds
  // a partial sum of it. A warp whose lanes all hold partials of one row (a long row) reduces
  // by shuffles and adds once; otherwise each lane adds its own.
  const bool partial = n > 0 && !(bits & (1u << (n - 1)));
  const int lane = tid % warp_size;
  const int lane0_row = __shfl_sync(0xffffffffu, row, 0);
  if (__all_sync(0xffffffffu, partial && row == lane0_row)) {
    const V total = warp_sum(sum);
    if (lane == 0) atomicAdd(&buffer[row], total);
  } else if (partial) {
    atomicAdd(&buffer[row], sum);
  }
  __syncthreads();

  // Output: the first row and a last row that continues into the next block are shared with
  // other blocks (the first kernel set them to beta*y): add. Every other non-empty row is this
  // block's alone: write it once (empty rows were written by the first kernel).
  for (std::int64_t k = tid; k < local_rows; k += threads) {
    const std::int64_t r = first_row + k;
    if (ptr[r] == ptr[r + 1]) continue;
    if (k == 0 || (k == local_rows - 1 && ptr[r + 1] > block_end)) atomicAdd(y + r, alpha * buffer[k]);
    else y[r] = alpha * buffer[k] + scaled(beta, y, r);
  }
}

}  // namespace

template <class V, class I>
void spmv_hola(const csr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  if (a.row_ptr.size() != static_cast<std::size_t>(a.rows) + 1)
    fail(errc::usage, "gpu::spmv_hola: csr row_ptr has " + std::to_string(a.row_ptr.size()) + " elements, expected " +
                          std::to_string(a.rows + 1));
  if (a.rows == 0) return;
  const std::int64_t nnz = static_cast<std::int64_t>(a.col_idx.size());
  const std::int64_t blocks = (nnz + npb - 1) / npb;
  auto* starts = static_cast<I*>(ctx.workspace(static_cast<std::size_t>(blocks + 1) * sizeof(I)));
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  assign_rows_global<V, I><<<launch_blocks(a.rows, threads), threads, 0, s>>>(a.rows, a.row_ptr.data(), starts, blocks,
                                                                              beta, y);
  check_cuda(cudaGetLastError(), "gpu::spmv_hola: launching the row assignment kernel");
  if (blocks == 0) return;
  hola_core<V, I><<<static_cast<unsigned>(blocks), threads, 0, s>>>(nnz, a.row_ptr.data(), a.col_idx.data(),
                                                                    a.values.data(), starts, alpha, x, beta, y);
  check_cuda(cudaGetLastError(), "gpu::spmv_hola: launching the core kernel");
}

#define SPCONV_INST(V, I) \
  template void spmv_hola<V, I>(const csr<V, I, device>&, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
