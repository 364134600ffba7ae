// HOLA-SpMV (hola-spmv-steinberger.txt sec. 3): strict non-zero splitting between blocks
// (sec. 3.1, Algorithm 2), per-thread non-zero splitting inside a block with row-end bit masks
// (sec. 3.2, Algorithms 3-4), adaptive handling of rows shared between threads (Algorithm 6's
// idea) and the special cases of sec. 3.3 (empty rows, more rows than the block's buffer).
//
// Where this differs from the paper, and why:
// - Data loading (Algorithm 5) transposes each warp's entries in registers with shuffles. Here
//   the block loads col_idx/values coalesced, 16 bytes of values a lane (hola_loads),
//   premultiplies by x and stages the products in shared memory, laid out so that neither the
//   stores nor each thread's reading of its run meet bank conflicts (product_slot). Same
//   traffic to global memory, simpler code, and no power-of-two constraint on the entries per
//   thread. Algorithm 5 itself was measured (H200, double,
//   replicated set, stop 37 calls 1-2): a warp owns a window of 256 entries, lane l loads
//   entries l + 32i, and 8 shuffle rounds between two rotations of its 8 registers hand lane l
//   entries 8l .. 8l + 7. It took n1024-l1's core kernel from 90% to 76% of the L1/shared
//   pipe, in 425 us against 417 (Nsight Compute), and the set from 1.154x to 1.037x cuSPARSE
//   (1.102x at 48 registers, 5 blocks an SM). The loads' order costs that: loading the warps'
//   windows, with the staging kept, ran 1.057x. Here the block's 8 warps load 512 consecutive
//   entries at a time in double (not profiled: their gathers of x likely meet in L1).
// - Partial sums of rows shared between threads are combined by a segmented scan over the warp
//   (one shared atomic per warp at most) rather than by shared atomics per thread, which the
//   profile showed stalling the kernel on rows of ~20 entries; blocks of short rows sum a row
//   per thread (see "Short rows").
// - y = alpha*A*x + beta*y instead of y = A*x: the first kernel scales (instead of clears)
//   exactly the rows that blocks add to atomically (rows a block starts in); the core kernel
//   writes every other row once, empty rows included, reading y only when beta != 0.
// - For matrices of many rows the first kernel searches row_ptr per block instead of reading
//   all of it with a thread per row (hola_row_assignment, spmv_csr_hola.hpp).
#include <cuda_runtime.h>

#include <string>

#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/scale_y.cuh"
#include "kernels/gpu/search.cuh"
#include "kernels/gpu/spmv_csr_hola.hpp"

namespace spconv::gpu {
namespace {

constexpr int warp_size = 32;
constexpr int npt = hola_entries_per_thread;
constexpr int threads = hola_block_threads;
constexpr int npb = hola_entries_per_block;
// Local rows a block keeps in its shared output buffer: blocks of more rows take the short-row
// path, so the buffer is a fraction of the block's entries and more blocks fit an SM.
constexpr int buffer_rows = npb / hola_short_row_entries;
static_assert(npt <= 32, "row-end bits of a thread's entries live in one 32-bit mask");

// The block's products sit in shared memory in chunks of 16 bytes (chunk_entries<V> entries),
// chunk q at q ^ (q / 8 % 8): a warp's 16-byte stores of consecutive chunks (loads by chunk),
// its 8-byte stores of consecutive entries (loads by entry) and each thread's 16-byte loads of
// its own run (npt / chunk_entries chunks a lane apart) all meet no bank conflicts. The layout
// before stop 39 (a slot of padding after each run, entry l at l + l / npt) gave the chunks'
// stores two-way conflicts: chunks ran 1.164x cuSPARSE with it, 1.202x with this one (H200,
// double, replicated set, stop 39 device calls 1 and 2; stop 38's kernel 1.160x in both).
template <class V>
constexpr int chunk_entries = 16 / static_cast<int>(sizeof(V));
static_assert(npt % chunk_entries<float> == 0 && npt % chunk_entries<double> == 0, "runs of whole chunks");
__device__ __forceinline__ int swizzled(int q) { return q ^ (q >> 3 & 7); }
template <class V>
__device__ __forceinline__ int product_slot(int l) {
  return swizzled(l / chunk_entries<V>) * chunk_entries<V> + l % chunk_entries<V>;
}

// N entries of T, loaded together (16-byte words where N * sizeof(T) >= 16).
template <class T, int N>
struct alignas(N * sizeof(T) < 16 ? N * sizeof(T) : 16) pack {
  T v[N];
};

// The core kernel is launched as the first kernel's programmatic dependent (sm_90): its blocks
// may start while the first kernel runs, load their columns and values, and wait for the first
// kernel's results (every write of it, to the bounds and to y) only before reading the bounds.
// H200, double, stop 39 device call 7, beside the plain launch: replicated set 1.224x ->
// 1.231x cuSPARSE (19 of 20 matrices +0.2% to +1.0%), stencil 1.175x -> 1.177x; the matrices
// as they are 9.70 -> 9.74 us in geometric mean (their times move by 10-20% between runs).
__device__ __forceinline__ void allow_core_launch() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ __forceinline__ void wait_for_row_assignment() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// The block's products into shared memory, its first row and its number of rows (from the
// first kernel's bounds) into first_row and local_rows, the end of the thread's local row
// (every row of a block on the bit-mask path, which has fewer rows than threads) into
// row_ends. Chunks: lane tid loads the chunks tid, tid + threads, ... of a whole block
// (hola_loads). All npt column and value loads are written before the bounds are read and
// before the first x load, and the row end is loaded with the x loads, so that the latency
// of the bounds passes under that of the data, and the row end's under that of x.
// (At 40 registers ptxas interleaves the later column and value loads with the first x loads:
// Nsight Compute's SASS, H200, stop 38 call 3. Taking them out of the registers by cp.async
// ran slower: specs/gpu.md.)
template <bool Chunks, class V, class I>
__device__ __forceinline__ void load_products(int tid, int count, std::int64_t block_start,
                                              const I* __restrict__ bounds, std::int64_t& first_row,
                                              std::int64_t& local_rows, const I* __restrict__ ptr,
                                              const I* __restrict__ col, const V* __restrict__ val,
                                              const V* __restrict__ x, V* product, I* row_ends) {
  constexpr int w = Chunks ? chunk_entries<V> : 1;  // entries a load
  I c[npt];
  V v[npt];
#pragma unroll
  for (int k = 0; k < npt / w; ++k) {
    const int l = (k * threads + tid) * w;
    if (Chunks || l < count) {
      const auto cs = *reinterpret_cast<const pack<I, w>*>(col + block_start + l);
      const auto vs = *reinterpret_cast<const pack<V, w>*>(val + block_start + l);
#pragma unroll
      for (int u = 0; u < w; ++u) {
        c[k * w + u] = cs.v[u];
        v[k * w + u] = vs.v[u];
      }
    }
  }
  // The block's first and last row (the first kernel's bounds), read only now. Read first, they
  // made every block wait for them before its first column load: ptxas moved them to uniform
  // registers there, and that wait held 12.5% of the stall samples on n1024-l1 (Nsight Compute,
  // H200, stop 39 device call 4). Read here: replicated set 1.199x -> 1.222x cuSPARSE in two
  // runs each, n1024-l1 +2.4% and that wait 2.9% (call 5); the stencil 1.174x -> 1.175x.
  wait_for_row_assignment();
  first_row = bounds[2 * blockIdx.x];
  local_rows = bounds[2 * blockIdx.x + 1] - first_row + 1;
  const I own_end = tid < local_rows ? ptr[first_row + tid + 1] : I{0};
#pragma unroll
  for (int k = 0; k < npt / w; ++k) {
    const int l = (k * threads + tid) * w;
    if (Chunks || l < count) {
      pack<V, w> p;
#pragma unroll
      for (int u = 0; u < w; ++u) p.v[u] = v[k * w + u] * x[c[k * w + u]];
      *reinterpret_cast<pack<V, w>*>(product + product_slot<V>(l)) = p;
    }
  }
  if (tid < local_rows) row_ends[tid] = own_end;
}

// The first kernel (Algorithm 2, AssignRowsGlobal) writes bounds[2b] = block b's first row
// (the row holding entry b*npb) and bounds[2b + 1] = its last (the row holding the block's last
// entry), so that the core kernel reads both with one load and searches nothing. Rows a block
// starts in receive atomic additions (from this block and the one before), so the first kernel
// sets them to beta*y; the core kernel writes every other row, empty ones included (the paper
// zeroes all of y in its thread-per-row first kernel, which the search below has no thread for).

// hola_row_assignment::scatter, a thread per row (Algorithm 2 as in the paper).
template <class V, class I>
__global__ void assign_rows_scatter(std::int64_t rows, std::int64_t nnz, const I* __restrict__ ptr, I* bounds,
                                    V beta, V* y) {
  allow_core_launch();
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += stride) {
    const std::int64_t a = ptr[r], b = ptr[r + 1];
    if (a == b) continue;
    bool starts_block = false;
    for (std::int64_t blk = (a + npb - 1) / npb, last = (b - 1) / npb; blk <= last; ++blk) {
      bounds[2 * blk] = static_cast<I>(r);
      starts_block = true;
    }
    // Blocks whose last entry, min((blk + 1) * npb, nnz) - 1, lies in [a, b).
    for (std::int64_t blk = a / npb, last = b / npb - 1; blk <= last; ++blk) bounds[2 * blk + 1] = static_cast<I>(r);
    if (b == nnz) bounds[2 * ((nnz - 1) / npb) + 1] = static_cast<I>(r);
    if (starts_block) y[r] = scaled_y(beta, y, r);
  }
}

// hola_row_assignment::search, a thread per block. A row is set to beta*y by the first block
// starting in it: block b - 1 starts in it too when it begins at or before entry (b - 1)*npb.
template <class V, class I>
__global__ void assign_rows_search(std::int64_t rows, std::int64_t nnz, const I* __restrict__ ptr, I* bounds,
                                   std::int64_t blocks, V beta, V* y) {
  allow_core_launch();
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks; b += stride) {
    const std::int64_t start = b * npb, end = min(start + npb, nnz);
    const std::int64_t first = row_of_entry(ptr, rows, nnz, start), last = row_of_entry(ptr, rows, nnz, end - 1);
    bounds[2 * b] = static_cast<I>(first);
    bounds[2 * b + 1] = static_cast<I>(last);
    if (b == 0 || ptr[first] > start - npb) y[first] = scaled_y(beta, y, first);
  }
}

// Algorithms 3-4 (CoreHola SpMV with AssignRowsLocal) for one block of npb entries. Six blocks
// per SM (40 registers, no spill with 32-bit indices; ~23 KB of shared memory for double): the
// block's phases wait on loads and barriers, and more resident blocks overlap them. Measured
// on the H100 (double, replicated set): 5 blocks per SM (48 registers) 1.06x cuSPARSE, 6 blocks
// 1.07x, 8 blocks (32 registers, spilling) 0.99x, losing most on long rows. Each block's last
// row from the first kernel instead of a search here, and the row ends cached, then took 6
// blocks from 1.07x to 1.09x (stencil 1.10x to 1.14x), most where rows begin at a block's
// end, which the search took longest on (n1024-l1 0.91x to 1.07x); the search-based first
// kernel for matrices of many rows took it to 1.17x (memplus_rhs1 1.04x to 1.48x). On the H200
// 7 blocks per SM ran 1.077x against 6 blocks' 1.154x (stop 33, device call 2), 5 blocks
// 1.125x against 1.155x (stop 37, device call 5).
template <class V, class I>
__global__ void __launch_bounds__(threads, 6) hola_core(std::int64_t rows, std::int64_t nnz,
                                                     const I* __restrict__ ptr,
                                                     const I* __restrict__ col, const V* __restrict__ val,
                                                     const I* __restrict__ bounds, V alpha,
                                                     const V* __restrict__ x, V beta, V* y, bool chunks) {
  __shared__ __align__(16) V product[npb];  // entry l at product_slot<V>(l)
  __shared__ V buffer[buffer_rows];       // the block's sum per local row
  __shared__ int row_start[threads];      // local row of each thread's first entry
  __shared__ unsigned row_end_bits[threads];
  __shared__ int warp_has_empty[threads / warp_size];
  // ptr[first_row + k + 1] for the local rows k < threads: all rows of a block on the bit-mask
  // path, the first of a thread's rows on the short-row path. Caching a short-row block's
  // further rows too (8 KiB) cost the other blocks more: 1.01x against 1.07x before it (H100;
  // likely the smaller L1 that 8 KiB more per resident block leaves to the x gathers, not
  // profiled), and so did loading them in registers before the barrier (1.02x).
  __shared__ I row_ends[threads];

  const int tid = static_cast<int>(threadIdx.x);
  const std::int64_t block_start = static_cast<std::int64_t>(blockIdx.x) * npb;
  const std::int64_t block_end = min(block_start + npb, nnz);
  const int count = static_cast<int>(block_end - block_start);
  // Premultiplied products, loaded coalesced (Algorithm 5's purpose, see the file comment).
  std::int64_t first_row, local_rows;
  if (chunks && count == npb)
    load_products<true>(tid, count, block_start, bounds, first_row, local_rows, ptr, col, val, x, product, row_ends);
  else
    load_products<false>(tid, count, block_start, bounds, first_row, local_rows, ptr, col, val, x, product, row_ends);
  const std::int64_t last_row = first_row + local_rows - 1;
  // The rows after the previous block's last row and before this block's first are empty
  // (the rows between two consecutive non-empty rows): this block writes them, as the last
  // block writes those after its last row.
  const std::int64_t gap_from = blockIdx.x == 0 ? 0 : bounds[2 * blockIdx.x - 1] + 1;
  for (std::int64_t r = gap_from + tid; r < first_row; r += threads) y[r] = scaled_y(beta, y, r);
  if (blockIdx.x == gridDim.x - 1)
    for (std::int64_t r = last_row + 1 + tid; r < rows; r += threads) y[r] = scaled_y(beta, y, r);
  // Local row k's entries are [row_begin(k), row_end(k)); row_begin(0) is block_start rather
  // than ptr[first_row], which only ever serves clipped to the block.
  const auto row_end = [&](std::int64_t k) -> std::int64_t {
    return k < threads ? row_ends[k] : ptr[first_row + k + 1];
  };
  const auto row_begin = [&](std::int64_t k) -> std::int64_t { return k == 0 ? block_start : row_end(k - 1); };

  // Short rows (a locally adaptive choice, sec. 3.2's spirit): where the block's rows average
  // fewer than hola_short_row_entries entries, the bit masks, the buffer and the shared-row
  // pass cost more per entry than they save; a thread per row sums its products from shared
  // memory and writes y directly (rows shared with other blocks by atomic adds, as below).
  // This is also sec. 3.3's alternative for a block spanning more rows than its buffer (many
  // empty rows): the other path only sees blocks of at most npb / hola_short_row_entries rows.
  if (count < hola_short_row_entries * local_rows) {
    __syncthreads();
    for (std::int64_t k = tid; k < local_rows; k += threads) {
      const std::int64_t r = first_row + k;
      const std::int64_t ra = row_begin(k), rb = row_end(k);
      const int a = static_cast<int>(max(ra - block_start, std::int64_t{0}));
      const int b = static_cast<int>(min(rb - block_start, static_cast<std::int64_t>(count)));
      V sum = 0;
      for (int l = a; l < b; ++l) sum += product[product_slot<V>(l)];
      if (k == 0 || (k == local_rows - 1 && rb > block_end)) atomicAdd(y + r, alpha * sum);
      else y[r] = alpha * sum + scaled_y(beta, y, r);
    }
    return;
  }

  // Algorithm 4 (AssignRowsLocal): per local row, the threads whose first entry lies in it and
  // the bit of the thread holding its last entry in this block. Every non-empty local row gets
  // exactly one bit (the block's last entry always ends its row here), so the summation writes
  // each row of the buffer once and the buffer needs no clearing.
  row_end_bits[tid] = 0;
  if (tid < threads / warp_size) warp_has_empty[tid] = 0;
  __syncthreads();
  for (std::int64_t k = tid; k < local_rows; k += threads) {
    const std::int64_t a = max(row_begin(k) - block_start, std::int64_t{0});
    const std::int64_t b = min(row_end(k) - block_start, static_cast<std::int64_t>(count));
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

  // Summation: a thread's run of npt products. A row that begins and ends in the run is written
  // to the buffer at once. The run's first row, when the run ends it, may have begun in lanes
  // before: its sum (head) waits for their partial sums. What follows the run's last row end
  // (carry) belongs to a row a later lane ends.
  const int p0 = tid * npt;
  const int n = max(0, min(npt, count - p0));
  const bool skip_empty = warp_has_empty[tid / warp_size] != 0;
  const unsigned bits = row_end_bits[tid];
  int row = n > 0 ? row_start[tid] : 0;
  const int head_row = row;
  V sum = 0, head = 0;
  bool ends = false;
  // The run comes in 16-byte loads, all before the loop (a chunk loaded only when the loop
  // reaches it ran 1.198x cuSPARSE against 1.202x: H200, stop 39 call 3), and the loop is
  // unrolled: the loop over n had taken a quarter of the kernel's instructions (16 a product;
  // Nsight Compute, H200, n1024-l1 replicated, stop 38 call 3); unrolled, 1.154x -> 1.162x
  // (call 4).
  constexpr int cw = chunk_entries<V>;
  V run[npt];
#pragma unroll
  for (int j = 0; j < npt / cw; ++j) {
    const auto p = *reinterpret_cast<const pack<V, cw>*>(product + product_slot<V>(p0 + j * cw));
#pragma unroll
    for (int u = 0; u < cw; ++u) run[j * cw + u] = p.v[u];
  }
#pragma unroll
  for (int i = 0; i < npt; ++i) {
    if (i >= n) break;
    sum += run[i];
    if (bits & (1u << i)) {
      if (ends) buffer[row] = sum;
      else head = sum;
      ends = true;
      sum = 0;
      ++row;
      if (skip_empty)  // the next entry's row: skip rows that end at or before it
        while (row < local_rows - 1 && row_end(row) <= block_start + p0 + i + 1) ++row;
    }
  }

  // Shared rows (Algorithm 6's purpose, by a warp segmented scan instead of shared-memory
  // atomics per lane): carries[L] = the carries of the lanes from the last lane before L that
  // ends a row up to L, inclusive. A lane ending a row adds carries[L - 1] to its head; the
  // warp's last lane, if it ends no row there, leaves its carries to a later warp, which takes
  // them by one atomic add after the barrier (after every plain write of the buffer).
  const int lane = tid % warp_size;
  V carries = sum;
  if (!__all_sync(0xffffffffu, ends || n == 0)) {  // some lane passes a row through
    bool head_found = ends || n == 0;
    for (int d = 1; d < warp_size; d *= 2) {
      const V other = __shfl_up_sync(0xffffffffu, carries, d);
      const bool other_found = __shfl_up_sync(0xffffffffu, head_found, d);
      if (lane >= d && !head_found) {
        carries += other;
        head_found = other_found;
      }
    }
  }
  const V carry_in = __shfl_up_sync(0xffffffffu, carries, 1);
  if (ends) buffer[head_row] = head + (lane > 0 ? carry_in : V(0));
  __syncthreads();
  if (lane == warp_size - 1 && n > 0 && !(bits & (1u << (n - 1)))) atomicAdd(&buffer[row], carries);
  __syncthreads();

  // Output: the first row and a last row that continues into the next block are shared with
  // other blocks (the first kernel set them to beta*y): add. Every other non-empty row is this
  // block's alone: write it once (empty rows were written by the first kernel).
  for (std::int64_t k = tid; k < local_rows; k += threads) {
    const std::int64_t r = first_row + k, rb = row_end(k);
    const V sum = row_begin(k) == rb ? V(0) : buffer[k];  // an empty row (no buffer slot): beta*y
    if (k == 0 || (k == local_rows - 1 && rb > block_end)) atomicAdd(y + r, alpha * sum);
    else y[r] = alpha * sum + scaled_y(beta, y, r);
  }
}

}  // namespace

template <class V, class I>
void spmv_hola_arrays(std::int64_t rows, std::int64_t nnz, const I* ptr, const I* col, const V* val, V alpha,
                      const V* x, V beta, V* y, gpu_context& ctx, hola_row_assignment assign,
                      hola_loads loads) {
  if (rows == 0) return;
  const std::int64_t blocks = (nnz + npb - 1) / npb;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  if (blocks == 0) {  // no entries: every row is empty
    scale_y<V><<<launch_blocks(rows, threads), threads, 0, s>>>(rows, beta, y);
    check_cuda(cudaGetLastError(), "gpu::spmv_hola: launching the y scaling");
    return;
  }
  auto* bounds = static_cast<I*>(ctx.workspace(static_cast<std::size_t>(2 * blocks) * sizeof(I)));
  const bool search = assign == hola_row_assignment::search ||
                      (assign == hola_row_assignment::automatic && hola_searches_rows(rows));
  if (search)
    assign_rows_search<V, I><<<launch_blocks(blocks, threads), threads, 0, s>>>(rows, nnz, ptr, bounds, blocks, beta,
                                                                               y);
  else
    assign_rows_scatter<V, I><<<launch_blocks(rows, threads), threads, 0, s>>>(rows, nnz, ptr, bounds, beta, y);
  check_cuda(cudaGetLastError(), "gpu::spmv_hola: launching the row assignment kernel");
  const bool chunks = loads == hola_loads::chunk && on_16_bytes(col, val);
  cudaLaunchAttribute dependent{};
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t launch{};
  launch.gridDim = dim3(static_cast<unsigned>(blocks));
  launch.blockDim = dim3(threads);
  launch.stream = s;
  launch.attrs = &dependent;
  launch.numAttrs = 1;
  check_cuda(cudaLaunchKernelEx(&launch, hola_core<V, I>, rows, nnz, ptr, col, val, bounds, alpha, x, beta, y, chunks),
             "gpu::spmv_hola: launching the core kernel");
}

template <class V, class I>
void spmv_hola(const csr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx,
               hola_row_assignment assign, hola_loads loads) {
  if (a.row_ptr.size() != static_cast<std::size_t>(a.rows) + 1)
    fail(errc::usage, "gpu::spmv_hola: csr row_ptr has " + std::to_string(a.row_ptr.size()) + " elements, expected " +
                          std::to_string(a.rows + 1));
  spmv_hola_arrays(a.rows, static_cast<std::int64_t>(a.col_idx.size()), a.row_ptr.data(), a.col_idx.data(),
                   a.values.data(), alpha, x, beta, y, ctx, assign, loads);
}

#define SPCONV_INST(V, I)                                                                                         \
  template void spmv_hola<V, I>(const csr<V, I, device>&, V, const V*, V, V*, gpu_context&, hola_row_assignment, \
                                hola_loads);                                                                     \
  template void spmv_hola_arrays<V, I>(std::int64_t, std::int64_t, const I*, const I*, const V*, V, const V*, V, V*, \
                                       gpu_context&, hola_row_assignment, hola_loads);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
