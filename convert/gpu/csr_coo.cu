// COO <-> CSR on the GPU.
// COO -> canonical CSR: two stable radix sorts (by column, then by row) give the entries in
// (row, column) order with equal keys still in input order; runs of equal keys are then
// summed by one thread each, sequentially from the run's first entry. A parallel reduction
// (cub's reduce_by_key) would reassociate the sum and could differ from the CPU's file-order
// sum in the last bit; the sequential sum reproduces cpu::coo_to_csr bit for bit. Entries
// already in strict (row, column) order (found while the indices are checked) skip all that:
// the result is their copy, with row_ptr from the rows.
// CSR -> COO: columns and values are copied; the row of every entry comes from a merge path
// over row_ptr (below), written coalesced.
#include <cuda_runtime.h>

#include <bit>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "convert/gpu/csr_coo.hpp"
#include "convert/gpu/merge_path.cuh"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/search.cuh"

namespace spconv::gpu {
namespace {

constexpr int block_threads = 256;
static_assert(block_threads == merge_block_threads, "the merge-path kernels load their tiles with merge_block_threads");

// One pass over the indices. The smallest position whose row is outside [0, row_bound) goes
// to first[0], whose column is outside [0, col_bound) to first[1] (so the error names the
// same entry as the CPU's sequential check), and the smallest i > 0 whose (row, column) does
// not strictly follow entry i - 1's to first[2]: none, and the entries are already canonical
// CSR order without duplicates. Entry i - 1 is the neighbouring thread's, so its second read
// comes from cache: each index array is read from memory once.
template <class I>
__global__ void check_entries(const I* rows, const I* cols, std::int64_t n, std::int64_t row_bound,
                              std::int64_t col_bound, unsigned long long* first) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const I r = rows[i], c = cols[i];
    const auto at = static_cast<unsigned long long>(i);
    if (r < 0 || static_cast<std::int64_t>(r) >= row_bound) atomicMin(first, at);
    if (c < 0 || static_cast<std::int64_t>(c) >= col_bound) atomicMin(first + 1, at);
    if (i > 0) {
      const I before_r = rows[i - 1], before_c = cols[i - 1];
      if (r < before_r || (r == before_r && c <= before_c)) atomicMin(first + 2, at);
    }
  }
}

template <class I>
__global__ void iota(I* out, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) out[i] = static_cast<I>(i);
}

// out[k] = in[perm[k]]
template <class T, class I>
__global__ void gather(T* out, const T* in, const I* perm, std::int64_t n) {
  for (std::int64_t k = first_index(); k < n; k += grid_stride()) out[k] = in[perm[k]];
}

// head[k] = 1 where entry k starts a run of equal (row, column) keys.
template <class U, class I>
__global__ void mark_heads(I* head, const U* rows, const U* cols, std::int64_t n) {
  for (std::int64_t k = first_index(); k < n; k += grid_stride())
    head[k] = (k == 0 || rows[k] != rows[k - 1] || cols[k] != cols[k - 1]) ? 1 : 0;
}

// One thread per run: the run's sum, left to right in input order, lands at its output slot
// (the inclusive scan of the heads minus one).
template <class V, class U, class I>
__global__ void sum_runs(std::int64_t n, const I* head, const I* slot, const U* rows, const U* cols, const I* perm,
                         const V* values, U* out_rows, I* out_cols, V* out_values) {
  for (std::int64_t k = first_index(); k < n; k += grid_stride()) {
    if (!head[k]) continue;
    V sum = values[perm[k]];
    for (std::int64_t j = k + 1; j < n && !head[j]; ++j) sum += values[perm[j]];
    const I o = slot[k] - 1;
    out_rows[o] = rows[k];
    out_cols[o] = static_cast<I>(cols[k]);
    out_values[o] = sum;
  }
}

// row_ptr[r] = the number of entries in rows before r = the first position in the sorted
// out_rows holding a row >= r (a binary search per row, so long runs of empty rows cost
// no more than full ones).
template <class U, class I>
__global__ void row_pointers(I* row_ptr, std::int64_t rows, const U* out_rows, std::int64_t unique) {
  for (std::int64_t r = first_index(); r <= rows; r += grid_stride()) {
    row_ptr[r] = static_cast<I>(lower_bound(out_rows, 0, unique, r));
  }
}


// row_idx[k] = the row of CSR entry k: row r ends at row_ptr[r + 1] (empty rows end where
// they start and hold no entry).
template <class I>
__global__ void __launch_bounds__(block_threads)
    rows_of_entries(I* row_idx, const std::int64_t* cut, const I* row_ptr, std::int64_t rows, std::int64_t nnz) {
  const merge_tile_runs<I> tile = load_merge_tile(cut, row_ptr + 1, rows, nnz);
  int run = 0;
#pragma unroll
  for (int i = 0; i < merge_items; ++i) {
    const std::int64_t k = tile.first_item + threadIdx.x + i * block_threads;
    if (k >= tile.end_item) break;
    run = tile.run_of(k, run);
    row_idx[k] = static_cast<I>(tile.first_run + run);
  }
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), std::string("gpu::coo_to_csr: ") + what); }

// A stable sort of (keys, values) by the low `bits` bits of the keys.
template <class U, class I>
void sort_pairs(gpu_context& ctx, const U* keys_in, U* keys_out, const I* values_in, I* values_out, I n, int bits) {
  std::size_t bytes = 0;
  check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in, keys_out, values_in, values_out, n, 0, bits,
                                             stream_of(ctx)),
             "gpu::coo_to_csr: sizing the radix sort");
  check_cuda(cub::DeviceRadixSort::SortPairs(ctx.workspace(bytes), bytes, keys_in, keys_out, values_in, values_out, n,
                                             0, bits, stream_of(ctx)),
             "gpu::coo_to_csr: radix sort");
}

template <class T>
T read_one(const T* device_ptr, gpu_context& ctx) {
  T v{};
  check_cuda(cudaMemcpyAsync(&v, device_ptr, sizeof(T), cudaMemcpyDeviceToHost, stream_of(ctx)),
             "gpu::coo_to_csr: reading back a result");
  ctx.synchronize();
  return v;
}

// validate(coo) on the device: the same checks in the same order with the same messages.
// Returns whether the entries are already in strict (row, column) order, found in the same
// pass and read back with the checks.
template <class V, class I>
bool validate_on_device(const coo<V, I, device>& a, gpu_context& ctx) {
  constexpr std::string_view n = "coo";
  check_shape(n, a.rows, a.cols, std::numeric_limits<I>::max());
  check_length(n, "col_idx", a.col_idx, a.row_idx.size());
  check_length(n, "values", a.values, a.row_idx.size());
  const auto nnz = static_cast<std::int64_t>(a.row_idx.size());
  if (nnz == 0) return true;
  // Three slots (rows, columns, order) for atomicMin, whose 64-bit form takes unsigned long long.
  device_buffer slots;
  slots.resize(3 * sizeof(unsigned long long), "gpu::coo_to_csr: index check");
  auto* first = static_cast<unsigned long long*>(slots.data());
  check_cuda(cudaMemsetAsync(first, 0xff, 3 * sizeof(unsigned long long), stream_of(ctx)),
             "gpu::coo_to_csr: clearing the index check");
  check_entries<<<launch_blocks(nnz, block_threads), block_threads, 0, stream_of(ctx)>>>(
      a.row_idx.data(), a.col_idx.data(), nnz, a.rows, a.cols, first);
  check_launch("checking the indices and their order");
  unsigned long long bad[3];
  check_cuda(cudaMemcpyAsync(bad, first, sizeof bad, cudaMemcpyDeviceToHost, stream_of(ctx)),
             "gpu::coo_to_csr: reading the index check");
  ctx.synchronize();
  const std::pair<const char*, const I*> arrays[2] = {{"row_idx", a.row_idx.data()}, {"col_idx", a.col_idx.data()}};
  const std::int64_t bounds[2] = {a.rows, a.cols};
  for (int i = 0; i < 2; ++i) {
    if (bad[i] == std::numeric_limits<unsigned long long>::max()) continue;
    const I v = read_one(arrays[i].second + bad[i], ctx);
    invalid(n, std::string(arrays[i].first) + "[" + std::to_string(bad[i]) + "] = " + std::to_string(v) +
                   " is out of range [0, " + std::to_string(bounds[i]) + ")");
  }
  return bad[2] == std::numeric_limits<unsigned long long>::max();
}

}  // namespace

template <class V, class I>
csr<V, I, device> coo_to_csr(const coo<V, I, device>& a, gpu_context& ctx) {
  using U = std::make_unsigned_t<I>;
  const bool in_order = validate_on_device(a, ctx);
  const std::int64_t nnz = a.nnz(), rows = a.rows;
  if (nnz > static_cast<std::int64_t>(std::numeric_limits<I>::max()))
    fail(errc::unsupported, std::to_string(nnz) + " entries do not fit " + std::string(type_name<I>()) +
                                " indices; use 64-bit indices (--index int64)");
  const cudaStream_t s = stream_of(ctx);
  const unsigned entry_blocks = launch_blocks(nnz, block_threads);
  csr<V, I, device> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.resize(rows + 1);
  if (nnz == 0) {
    check_cuda(cudaMemsetAsync(out.row_ptr.data(), 0, (rows + 1) * sizeof(I), s), "gpu::coo_to_csr: zero row_ptr");
    ctx.synchronize();
    return out;
  }
  const I n = static_cast<I>(nnz);
  if (in_order) {
    // Already canonical (sorted, no duplicates): columns and values are copied, row_ptr found
    // from the rows, where two radix sorts, two gathers and the run sums would give the same
    // bytes.
    out.col_idx.resize(nnz);
    out.values.resize(nnz);
    copy_on_device(out.col_idx.data(), a.col_idx.data(), nnz, ctx, "gpu::coo_to_csr: copying the columns");
    copy_on_device(out.values.data(), a.values.data(), nnz, ctx, "gpu::coo_to_csr: copying the values");
    row_pointers<<<launch_blocks(rows + 1, block_threads), block_threads, 0, s>>>(
        out.row_ptr.data(), rows, reinterpret_cast<const U*>(a.row_idx.data()), nnz);
    check_launch("building row_ptr");
    ctx.synchronize();
    return out;
  }

  // perm: the input position of each sorted entry. Radix sorts are stable, so sorting by
  // column and then by row orders by (row, column) with ties in input order. A sort over
  // zero key bits (one column or one row: all keys equal) would keep the order: skipped.
  device_array<I> perm(nnz), perm_next(nnz);
  iota<<<entry_blocks, block_threads, 0, s>>>(perm.data(), nnz);
  check_launch("numbering the entries");
  device_array<U> keys(nnz), sorted_rows(nnz);
  if (const int col_bits = std::bit_width(static_cast<std::uint64_t>(a.cols - 1)); col_bits > 0) {
    sort_pairs(ctx, reinterpret_cast<const U*>(a.col_idx.data()), keys.data(), perm.data(), perm_next.data(), n,
               col_bits);
    std::swap(perm, perm_next);
  }
  gather<<<entry_blocks, block_threads, 0, s>>>(keys.data(), reinterpret_cast<const U*>(a.row_idx.data()),
                                                 perm.data(), nnz);
  check_launch("gathering rows");
  const U* rows_in_order = keys.data();
  if (const int row_bits = std::bit_width(static_cast<std::uint64_t>(rows - 1)); row_bits > 0) {
    sort_pairs(ctx, keys.data(), sorted_rows.data(), perm.data(), perm_next.data(), n, row_bits);
    std::swap(perm, perm_next);
    rows_in_order = sorted_rows.data();
  }
  device_array<U> cols_in_order(nnz);
  gather<<<entry_blocks, block_threads, 0, s>>>(cols_in_order.data(), reinterpret_cast<const U*>(a.col_idx.data()),
                                                 perm.data(), nnz);
  check_launch("gathering columns");

  // Runs of equal keys: heads, their output slots (inclusive scan), the unique count.
  device_array<I>& head = perm_next;  // free again: reused
  mark_heads<<<entry_blocks, block_threads, 0, s>>>(head.data(), rows_in_order, cols_in_order.data(), nnz);
  check_launch("marking duplicate runs");
  device_array<I> slot(nnz);
  std::size_t bytes = 0;
  check_cuda(cub::DeviceScan::InclusiveSum(nullptr, bytes, head.data(), slot.data(), n, s),
             "gpu::coo_to_csr: sizing the scan");
  check_cuda(cub::DeviceScan::InclusiveSum(ctx.workspace(bytes), bytes, head.data(), slot.data(), n, s),
             "gpu::coo_to_csr: scan");
  const std::int64_t unique = read_one(slot.data() + (nnz - 1), ctx);

  out.col_idx.resize(unique);
  out.values.resize(unique);
  device_array<U> out_rows(unique);
  sum_runs<<<entry_blocks, block_threads, 0, s>>>(nnz, head.data(), slot.data(), rows_in_order, cols_in_order.data(),
                                                  perm.data(), a.values.data(), out_rows.data(), out.col_idx.data(),
                                                  out.values.data());
  check_launch("summing duplicates");
  row_pointers<<<launch_blocks(rows + 1, block_threads), block_threads, 0, s>>>(out.row_ptr.data(), rows,
                                                                                 out_rows.data(), unique);
  check_launch("building row_ptr");
  ctx.synchronize();
  return out;
}

template <class V, class I>
coo<V, I, device> csr_to_coo(const csr<V, I, device>& a, gpu_context& ctx) {
  const cudaStream_t s = stream_of(ctx);
  const std::int64_t nnz = a.nnz();
  coo<V, I, device> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_idx.resize(nnz);
  out.col_idx.resize(nnz);
  out.values.resize(nnz);
  if (nnz > 0) {
    const std::int64_t tiles = merge_tiles(a.rows, nnz);
    auto* cut = static_cast<std::int64_t*>(ctx.workspace((tiles + 1) * sizeof(std::int64_t)));
    merge_cuts<<<launch_blocks(tiles + 1, block_threads), block_threads, 0, s>>>(cut, tiles, a.row_ptr.data() + 1,
                                                                                 a.rows, nnz);
    check_cuda(cudaGetLastError(), "gpu::csr_to_coo: launching the merge path search");
    rows_of_entries<<<static_cast<unsigned>(tiles), block_threads, 0, s>>>(out.row_idx.data(), cut, a.row_ptr.data(),
                                                                           a.rows, nnz);
    check_cuda(cudaGetLastError(), "gpu::csr_to_coo: launching the row expansion");
    copy_on_device(out.col_idx.data(), a.col_idx.data(), nnz, ctx, "gpu::csr_to_coo: copying col_idx");
    copy_on_device(out.values.data(), a.values.data(), nnz, ctx, "gpu::csr_to_coo: copying values");
  }
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V, I)                                                                     \
  template csr<V, I, device> coo_to_csr<V, I>(const coo<V, I, device>&, gpu_context&); \
  template coo<V, I, device> csr_to_coo<V, I>(const csr<V, I, device>&, gpu_context&);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
