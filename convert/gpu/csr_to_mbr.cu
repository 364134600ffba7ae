// CSR -> MBR on the GPU (shared/papers/mbr-kannan.txt sec. III; specs/formats/mbr.md,
// section "GPU"). The result equals cpu::csr_to_mbr bit for bit.
// MBR stores a block row's entries by block column, then by bit i*c + j (row-major inside
// the block); CSR holds them by row, then column. Within one block row, CSR order sorted
// *stably* by block column alone is (block column, row, column) order, which is MBR's: so
// one stable segmented sort (cub, a segment per block row, 32-bit block-column keys, the
// entry numbers as values) gives every value's MBR position. Then:
//   - heads: sorted entry t starts a block where its block row or block column differs
//     from entry t - 1's; an inclusive scan of the heads numbers the blocks;
//   - one thread per head writes the block's column, ORs its entries' bits into the bitmap
//     (at most r*c <= 64 entries) and stores it little-endian in bitmap_bytes bytes;
//   - block_row_ptr[br] = the first block whose block row is >= br (a binary search per
//     block row), value_ptr[br] = row_ptr[br * r] (block rows cover consecutive rows).
// With r = 1 a block row is one CSR row, already in block-column order: the sort is skipped.
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <string>

#include "convert/cpu/mbr.hpp"
#include "convert/gpu/mbr.hpp"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;

// value_ptr[br] = row_ptr[br * r]; value_ptr[block_rows] = row_ptr[rows] = nnz.
__global__ void value_offsets(I* value_ptr, std::int64_t block_rows, const I* row_ptr, std::int64_t rows, int r) {
  for (std::int64_t br = first_index(); br <= block_rows; br += grid_stride())
    value_ptr[br] = row_ptr[br * r < rows ? br * r : rows];
}

// Per CSR entry: its row (the last r with row_ptr[r] <= k), its block column, its number.
__global__ void locate_entries(std::int64_t nnz, const I* row_ptr, std::int64_t rows, const I* col_idx, int c,
                               I* row_of, I* block_col, I* number) {
  for (std::int64_t k = first_index(); k < nnz; k += grid_stride()) {
    std::int64_t lo = 0, hi = rows + 1;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (static_cast<std::int64_t>(row_ptr[mid]) <= k) lo = mid + 1;
      else hi = mid;
    }
    row_of[k] = static_cast<I>(lo - 1);
    block_col[k] = col_idx[k] / c;
    number[k] = static_cast<I>(k);
  }
}

// head[t] = 1 where the t-th entry in MBR order starts a block.
__global__ void mark_blocks(std::int64_t nnz, const I* order, const I* row_of, const I* block_col, int r, I* head) {
  for (std::int64_t t = first_index(); t < nnz; t += grid_stride())
    head[t] = t == 0 || row_of[order[t]] / r != row_of[order[t - 1]] / r || block_col[t] != block_col[t - 1];
}

// Every value to its MBR position; each block's head thread writes the block.
template <class V>
__global__ void write_blocks(std::int64_t nnz, const I* order, const I* head, const I* block_no, const I* row_of,
                             const I* col_idx, const I* block_col, const V* values, int r, int c, int w,
                             I* out_block_col, std::uint8_t* bitmaps, I* block_row_of, V* out_values) {
  for (std::int64_t t = first_index(); t < nnz; t += grid_stride()) {
    out_values[t] = values[order[t]];
    if (!head[t]) continue;
    const std::int64_t b = block_no[t] - 1;
    const I bc = block_col[t], br = row_of[order[t]] / r;
    std::uint64_t map = 0;
    for (std::int64_t u = t; u < nnz && (u == t || !head[u]); ++u) {
      const I k = order[u];
      const int bit = (row_of[k] - br * r) * c + (col_idx[k] - bc * c);
      map |= std::uint64_t{1} << bit;
    }
    out_block_col[b] = bc;
    block_row_of[b] = br;
    for (int byte = 0; byte < w; ++byte) bitmaps[b * w + byte] = static_cast<std::uint8_t>(map >> (8 * byte));
  }
}

// block_row_ptr[br] = the first block whose block row is >= br.
__global__ void block_row_pointers(I* block_row_ptr, std::int64_t block_rows, const I* block_row_of,
                                   std::int64_t blocks) {
  for (std::int64_t br = first_index(); br <= block_rows; br += grid_stride()) {
    std::int64_t lo = 0, hi = blocks;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (static_cast<std::int64_t>(block_row_of[mid]) < br) lo = mid + 1;
      else hi = mid;
    }
    block_row_ptr[br] = static_cast<I>(lo);
  }
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), std::string("gpu::csr_to_mbr: ") + what); }

}  // namespace

template <class V>
mbr<V, I, device> csr_to_mbr(const csr<V, I, device>& a, const mbr_params& resolved, gpu_context& ctx) {
  if (resolved.block_rows == 0 || resolved.block_cols == 0)
    fail(errc::usage, "gpu::csr_to_mbr: block size " + std::to_string(resolved.block_rows) + " x " +
                          std::to_string(resolved.block_cols) +
                          ": pass resolved parameters (cpu::resolve_mbr_params on a host copy), not an automatic "
                          "request");
  mbr<V, I, device> out;
  // With both sides fixed the rule reads nothing of the matrix (an empty host CSR stands in):
  // it range-checks with the CPU's messages and derives bitmap_bytes (a 0 there is derived,
  // any other value must be the derived one).
  out.params = cpu::resolve_mbr_params(csr<V, I>{}, resolved);
  const int r = out.params.block_rows, c = out.params.block_cols, w = out.params.bitmap_bytes;
  out.rows = a.rows;
  out.cols = a.cols;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  const std::int64_t block_rows = (a.rows + r - 1) / r, nnz = a.nnz();
  out.value_ptr.resize(block_rows + 1);
  out.block_row_ptr.resize(block_rows + 1);
  out.values.resize(nnz);
  value_offsets<<<launch_blocks(block_rows + 1, block_threads), block_threads, 0, s>>>(
      out.value_ptr.data(), block_rows, a.row_ptr.data(), a.rows, r);
  check_launch("building value_ptr");
  if (nnz == 0) {
    check_cuda(cudaMemsetAsync(out.block_row_ptr.data(), 0, (block_rows + 1) * sizeof(I), s),
               "gpu::csr_to_mbr: zero block_row_ptr");
    ctx.synchronize();
    return out;
  }

  const unsigned entry_blocks = launch_blocks(nnz, block_threads);
  device_array<I> row_of(nnz), block_col(nnz), number(nnz);
  locate_entries<<<entry_blocks, block_threads, 0, s>>>(nnz, a.row_ptr.data(), a.rows, a.col_idx.data(), c,
                                                        row_of.data(), block_col.data(), number.data());
  check_launch("locating entries");
  const I* order = number.data();          // the CSR entry at each MBR position
  const I* sorted_col = block_col.data();  // its block column
  device_array<I> order_sorted, col_sorted;
  if (r > 1) {
    order_sorted.resize(nnz);
    col_sorted.resize(nnz);
    std::size_t bytes = 0;
    check_cuda(cub::DeviceSegmentedSort::StableSortPairs(nullptr, bytes, block_col.data(), col_sorted.data(),
                                                         number.data(), order_sorted.data(), nnz, block_rows,
                                                         out.value_ptr.data(), out.value_ptr.data() + 1, s),
               "gpu::csr_to_mbr: sizing the block-row sort");
    check_cuda(cub::DeviceSegmentedSort::StableSortPairs(ctx.workspace(bytes), bytes, block_col.data(),
                                                         col_sorted.data(), number.data(), order_sorted.data(), nnz,
                                                         block_rows, out.value_ptr.data(), out.value_ptr.data() + 1,
                                                         s),
               "gpu::csr_to_mbr: sorting block rows by block column");
    order = order_sorted.data();
    sorted_col = col_sorted.data();
  }

  device_array<I> head(nnz), block_no(nnz);
  mark_blocks<<<entry_blocks, block_threads, 0, s>>>(nnz, order, row_of.data(), sorted_col, r, head.data());
  check_launch("marking blocks");
  std::size_t bytes = 0;
  check_cuda(cub::DeviceScan::InclusiveSum(nullptr, bytes, head.data(), block_no.data(), nnz, s),
             "gpu::csr_to_mbr: sizing the scan");
  check_cuda(cub::DeviceScan::InclusiveSum(ctx.workspace(bytes), bytes, head.data(), block_no.data(), nnz, s),
             "gpu::csr_to_mbr: numbering blocks");
  I blocks = 0;
  check_cuda(cudaMemcpyAsync(&blocks, block_no.data() + (nnz - 1), sizeof blocks, cudaMemcpyDeviceToHost, s),
             "gpu::csr_to_mbr: reading the block count");
  ctx.synchronize();

  out.block_col_idx.resize(blocks);
  out.bitmaps.resize(static_cast<std::size_t>(blocks) * w);
  device_array<I> block_row_of(blocks);
  write_blocks<<<entry_blocks, block_threads, 0, s>>>(nnz, order, head.data(), block_no.data(), row_of.data(),
                                                      a.col_idx.data(), sorted_col, a.values.data(), r, c, w,
                                                      out.block_col_idx.data(), out.bitmaps.data(),
                                                      block_row_of.data(), out.values.data());
  check_launch("writing blocks");
  block_row_pointers<<<launch_blocks(block_rows + 1, block_threads), block_threads, 0, s>>>(
      out.block_row_ptr.data(), block_rows, block_row_of.data(), blocks);
  check_launch("building block_row_ptr");
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V) \
  template mbr<V, I, device> csr_to_mbr<V>(const csr<V, I, device>&, const mbr_params&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
