// BCSR -> canonical CSR on the GPU (specs/formats/bcsr.md, "GPU"). A *slice* is one row of
// one block: c values. Listed block row by block row, then by row within the block row, then
// by block, the slices are in CSR order (a row's entries are its slices of the block row's
// blocks, block columns increasing), so an exclusive scan of the entries per slice in that
// order gives every slice its first CSR position, and row_ptr is read off the scan at each
// row's first slice. One thread per slice counts, then copies, its entries: the positions
// that are not +0.0 fill, or that stored_zeros lists (a binary search, as on the CPU).
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>
#include <string>

#include "convert/gpu/bcsr.hpp"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/search.cuh"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;

__device__ __forceinline__ bool is_fill(float v) { return __float_as_uint(v) == 0u; }
__device__ __forceinline__ bool is_fill(double v) { return __double_as_longlong(v) == 0; }

// What a slice thread needs: the matrix arrays and shape.
template <class V>
struct view {
  const I* block_ptr;
  const I* block_col;
  const V* values;
  const I* zeros;
  std::int64_t mb, nzeros, rows, cols;
  int r, c;
};

// Slice s (block k = s / r, row i = s % r): its position in CSR slice order and the range of
// its values that lies inside the matrix (the last block row and column may overhang).
struct slice {
  std::int64_t ordered;  // index in CSR slice order
  std::int64_t base;     // position of its first value
  std::int64_t col0;     // column of its first value
  int width;             // values inside the matrix (0 for a padding row)
};

template <class V>
__device__ slice locate(const view<V>& m, std::int64_t s) {
  const std::int64_t k = s / m.r, i = s - k * m.r;
  // The block row: the last br with block_ptr[br] <= k (empty block rows share pointers).
  const std::int64_t br = upper_bound(m.block_ptr, 0, m.mb + 1, k) - 1;
  const std::int64_t first = m.block_ptr[br], count = m.block_ptr[br + 1] - first;
  slice out;
  out.ordered = first * m.r + i * count + (k - first);
  out.base = (k * m.r + i) * m.c;
  out.col0 = static_cast<std::int64_t>(m.block_col[k]) * m.c;
  const bool inside = br * m.r + i < m.rows;
  const std::int64_t left = m.cols - out.col0;  // columns of the matrix from col0 on
  out.width = !inside ? 0 : left < m.c ? static_cast<int>(left) : m.c;
  return out;
}

template <class V>
__device__ __forceinline__ bool is_entry(const view<V>& m, std::int64_t pos, V v) {
  if (!is_fill(v)) return true;
  const std::int64_t at = lower_bound(m.zeros, 0, m.nzeros, pos);
  return at < m.nzeros && m.zeros[at] == pos;
}

// counts[ordered] = the entries of the slice.
template <class V>
__global__ void count_slices(view<V> m, std::int64_t slices, I* counts) {
  for (std::int64_t s = first_index(); s < slices; s += grid_stride()) {
    const slice sl = locate(m, s);
    I n = 0;
    for (int j = 0; j < sl.width; ++j) n += is_entry(m, sl.base + j, m.values[sl.base + j]) ? 1 : 0;
    counts[sl.ordered] = n;
  }
}

template <class V>
__global__ void copy_slices(view<V> m, std::int64_t slices, const I* start, I* col_idx, V* values) {
  for (std::int64_t s = first_index(); s < slices; s += grid_stride()) {
    const slice sl = locate(m, s);
    std::int64_t at = start[sl.ordered];
    for (int j = 0; j < sl.width; ++j) {
      const V v = m.values[sl.base + j];
      if (!is_entry(m, sl.base + j, v)) continue;
      col_idx[at] = static_cast<I>(sl.col0 + j);
      values[at] = v;
      ++at;
    }
  }
}

// Row br*r + i starts at the block row's first slice of row i: slice order index
// block_ptr[br]*r + i*(blocks of br). An empty block row has no slices; the formula then
// gives block_ptr[br]*r, where the next block row's slices start, which is the same count.
__global__ void row_pointers(I* row_ptr, std::int64_t rows, const I* block_ptr, int r, const I* start,
                             std::int64_t slices) {
  for (std::int64_t row = first_index(); row <= rows; row += grid_stride()) {
    if (row == rows) {
      row_ptr[row] = start[slices];
      continue;
    }
    const std::int64_t br = row / r, i = row - br * r;
    const std::int64_t first = block_ptr[br], count = block_ptr[br + 1] - first;
    row_ptr[row] = start[first * r + i * count];
  }
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), std::string("gpu::bcsr_to_csr: ") + what); }

}  // namespace

template <class V>
csr<V, I, device> bcsr_to_csr(const bcsr<V, I, device>& a, gpu_context& ctx) {
  const cudaStream_t s = stream_of(ctx);
  const int r = a.params.block_rows;
  const std::int64_t mb = static_cast<std::int64_t>(a.block_ptr.size()) - 1;
  const std::int64_t slices = static_cast<std::int64_t>(a.block_col.size()) * r;
  csr<V, I, device> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.resize(a.rows + 1);
  if (slices == 0) {
    check_cuda(cudaMemsetAsync(out.row_ptr.data(), 0, (a.rows + 1) * sizeof(I), s), "gpu::bcsr_to_csr: zero row_ptr");
    ctx.synchronize();
    return out;
  }
  if (r == 1 && a.params.block_cols == 1) {
    // 1 x 1 blocks: every block is one entry (validate(): no block holds only fill, and there
    // is no padding), so the CSR is BCSR's arrays as they are. The automatic block size of 19
    // of the 20 real matrices; the slice passes took 11.6 cuSPARSE SpMV-times there (stop 31).
    const auto nnz = static_cast<std::int64_t>(a.block_col.size());
    out.col_idx.resize(nnz);
    out.values.resize(nnz);
    copy_on_device(out.row_ptr.data(), a.block_ptr.data(), a.rows + 1, ctx, "gpu::bcsr_to_csr: copying block_ptr");
    copy_on_device(out.col_idx.data(), a.block_col.data(), nnz, ctx, "gpu::bcsr_to_csr: copying block_col");
    copy_on_device(out.values.data(), a.values.data(), nnz, ctx, "gpu::bcsr_to_csr: copying values");
    ctx.synchronize();
    return out;
  }
  const view<V> m{a.block_ptr.data(), a.block_col.data(), a.values.data(), a.stored_zeros.data(), mb,
                  static_cast<std::int64_t>(a.stored_zeros.size()), a.rows, a.cols, r, a.params.block_cols};
  const unsigned slice_blocks = launch_blocks(slices, block_threads);

  // counts has one more element, 0, so that the exclusive scan also yields the total.
  device_array<I> counts(slices + 1), start(slices + 1);
  check_cuda(cudaMemsetAsync(counts.data() + slices, 0, sizeof(I), s), "gpu::bcsr_to_csr: clearing the count");
  count_slices<V><<<slice_blocks, block_threads, 0, s>>>(m, slices, counts.data());
  check_launch("counting entries");
  std::size_t bytes = 0;
  check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts.data(), start.data(), slices + 1, s),
             "gpu::bcsr_to_csr: sizing the scan");
  check_cuda(cub::DeviceScan::ExclusiveSum(ctx.workspace(bytes), bytes, counts.data(), start.data(), slices + 1, s),
             "gpu::bcsr_to_csr: scan");
  I nnz = 0;
  check_cuda(cudaMemcpyAsync(&nnz, start.data() + slices, sizeof(I), cudaMemcpyDeviceToHost, s),
             "gpu::bcsr_to_csr: reading the entry count");
  ctx.synchronize();

  out.col_idx.resize(nnz);
  out.values.resize(nnz);
  row_pointers<<<launch_blocks(a.rows + 1, block_threads), block_threads, 0, s>>>(
      out.row_ptr.data(), a.rows, a.block_ptr.data(), r, start.data(), slices);
  check_launch("building row_ptr");
  copy_slices<V><<<slice_blocks, block_threads, 0, s>>>(m, slices, start.data(), out.col_idx.data(),
                                                         out.values.data());
  check_launch("copying entries");
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V) template csr<V, I, device> bcsr_to_csr<V>(const bcsr<V, I, device>&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
