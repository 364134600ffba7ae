// CSR -> BCSR on the GPU (specs/formats/bcsr.md, "GPU"; liu-thesis-csr5.txt sec. 5.4.4).
// The CPU merges the r sorted rows of a block row and opens a block whenever an entry passes
// the end of the current one; the blocks it finds are the distinct (block row, block column)
// pairs of the entries, in increasing order. Here every entry gets that pair as one integer
// key and a stable radix sort (cub) groups the entries of each block, still in CSR order
// (rows, then columns, increasing); the heads of the runs of equal keys, scanned, number the
// blocks. Each entry then lands at its position inside its block's r*c values, which start as
// +0.0 fill. Entries of one block in CSR order have increasing positions (i*c + j), and the
// blocks are in order, so the +0.0 entries, compacted in sorted order, are already the sorted
// stored_zeros list the CPU builds per block row.
#include <cuda_runtime.h>

#include <bit>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <string>
#include <utility>

#include "convert/gpu/bcsr.hpp"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
using block_key = std::uint64_t;  // (block row << col_bits) | block column: at most 31 + 31 bits
constexpr int block_threads = 256;

// +0.0 is the fill value: a value is fill (or a stored zero) when all its bits are zero.
__device__ __forceinline__ bool is_fill(float v) { return __float_as_uint(v) == 0u; }
__device__ __forceinline__ bool is_fill(double v) { return __double_as_longlong(v) == 0; }

// keys[k] = the block of entry k; sub[k] = its row within the block row. The row is the last
// r with row_ptr[r] <= k (empty rows share their pointer with the next row).
__global__ void block_keys(std::int64_t nnz, const I* row_ptr, std::int64_t rows, const I* col_idx, int r, int c,
                           int col_bits, block_key* keys, std::uint8_t* sub) {
  for (std::int64_t k = first_index(); k < nnz; k += grid_stride()) {
    std::int64_t lo = 0, hi = rows + 1;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (static_cast<std::int64_t>(row_ptr[mid]) <= k) lo = mid + 1;
      else hi = mid;
    }
    const std::int64_t row = lo - 1, br = row / r;
    keys[k] = (static_cast<block_key>(br) << col_bits) | static_cast<block_key>(col_idx[k] / c);
    sub[k] = static_cast<std::uint8_t>(row - br * r);
  }
}

__global__ void iota(I* out, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) out[i] = static_cast<I>(i);
}

__global__ void mark_heads(I* head, const block_key* keys, std::int64_t n) {
  for (std::int64_t k = first_index(); k < n; k += grid_stride()) head[k] = (k == 0 || keys[k] != keys[k - 1]) ? 1 : 0;
}

// block_ptr[br] = the blocks before block row br = the block number of the first sorted entry
// whose key is in a block row >= br (a binary search), or all blocks when there is none.
__global__ void block_pointers(I* block_ptr, std::int64_t mb, const block_key* keys, const I* slot, std::int64_t nnz,
                               int col_bits, std::int64_t nblocks) {
  for (std::int64_t br = first_index(); br <= mb; br += grid_stride()) {
    const block_key target = static_cast<block_key>(br) << col_bits;
    std::int64_t lo = 0, hi = nnz;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (keys[mid] < target) lo = mid + 1;
      else hi = mid;
    }
    block_ptr[br] = static_cast<I>(lo < nnz ? slot[lo] - 1 : nblocks);
  }
}

// Sorted entry k (input entry perm[k]) goes to block slot[k] - 1; the run's head also writes
// the block column. zero[k] marks the entries whose bits are +0.0, at[k] is their position.
template <class V>
__global__ void scatter(std::int64_t nnz, const block_key* keys, const I* perm, const I* slot, const std::uint8_t* sub,
                        const I* col_idx, const V* values_in, int c, std::int64_t rc, block_key col_mask, I* block_col,
                        V* values, I* at, std::uint8_t* zero) {
  for (std::int64_t k = first_index(); k < nnz; k += grid_stride()) {
    const std::int64_t blk = slot[k] - 1, bc = static_cast<std::int64_t>(keys[k] & col_mask);
    const I e = perm[k];
    if (k == 0 || slot[k] != slot[k - 1]) block_col[blk] = static_cast<I>(bc);
    const std::int64_t pos = blk * rc + static_cast<std::int64_t>(sub[e]) * c + (col_idx[e] - bc * c);
    const V v = values_in[e];
    values[pos] = v;
    at[k] = static_cast<I>(pos);
    zero[k] = is_fill(v) ? 1 : 0;
  }
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), std::string("gpu::csr_to_bcsr: ") + what); }

template <class T>
T read_one(const T* device_ptr, gpu_context& ctx) {
  T v{};
  check_cuda(cudaMemcpyAsync(&v, device_ptr, sizeof(T), cudaMemcpyDeviceToHost, stream_of(ctx)),
             "gpu::csr_to_bcsr: reading back a count");
  ctx.synchronize();
  return v;
}

void check_side(const char* field, std::int32_t v) {
  if (v < 1 || v > bcsr_max_block)
    fail(errc::usage, std::string("gpu::csr_to_bcsr: ") + field + " = " + std::to_string(v) + " is out of range [1, " +
                          std::to_string(bcsr_max_block) +
                          "]: pass a resolved block size (cpu::resolve_bcsr_params chooses the automatic sides)");
}

}  // namespace

template <class V>
bcsr<V, I, device> csr_to_bcsr(const csr<V, I, device>& a, const bcsr_params& resolved, gpu_context& ctx) {
  check_side("block_rows", resolved.block_rows);
  check_side("block_cols", resolved.block_cols);
  const cudaStream_t s = stream_of(ctx);
  const int r = resolved.block_rows, c = resolved.block_cols;
  const std::int64_t rc = std::int64_t{r} * c, nnz = a.nnz(), rows = a.rows;
  const std::int64_t mb = (rows + r - 1) / r, nbc = (a.cols + c - 1) / c;
  bcsr<V, I, device> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.params = resolved;
  out.block_ptr.resize(mb + 1);
  if (nnz == 0) {
    check_cuda(cudaMemsetAsync(out.block_ptr.data(), 0, (mb + 1) * sizeof(I), s), "gpu::csr_to_bcsr: zero block_ptr");
    ctx.synchronize();
    return out;
  }
  const unsigned entry_blocks = launch_blocks(nnz, block_threads);
  const int col_bits = std::bit_width(static_cast<std::uint64_t>(nbc - 1));
  const int key_bits = col_bits + std::bit_width(static_cast<std::uint64_t>(mb - 1));

  device_array<block_key> keys(nnz), sorted_keys;
  device_array<std::uint8_t> sub(nnz);
  block_keys<<<entry_blocks, block_threads, 0, s>>>(nnz, a.row_ptr.data(), rows, a.col_idx.data(), r, c, col_bits,
                                                    keys.data(), sub.data());
  check_launch("computing block keys");
  device_array<I> perm(nnz), perm_next(nnz);
  iota<<<entry_blocks, block_threads, 0, s>>>(perm.data(), nnz);
  check_launch("numbering the entries");
  // A stable sort over the key bits in use. With one block row and one block column every
  // key is 0 and the entries are already grouped: no sort.
  if (key_bits > 0) {
    sorted_keys.resize(nnz);
    std::size_t bytes = 0;
    check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), sorted_keys.data(), perm.data(),
                                               perm_next.data(), nnz, 0, key_bits, s),
               "gpu::csr_to_bcsr: sizing the radix sort");
    check_cuda(cub::DeviceRadixSort::SortPairs(ctx.workspace(bytes), bytes, keys.data(), sorted_keys.data(),
                                               perm.data(), perm_next.data(), nnz, 0, key_bits, s),
               "gpu::csr_to_bcsr: radix sort");
    std::swap(keys, sorted_keys);
    std::swap(perm, perm_next);
  }

  // Blocks: run heads, scanned (slot[k] = the block of sorted entry k, plus one).
  device_array<I> head(nnz), slot(nnz);
  mark_heads<<<entry_blocks, block_threads, 0, s>>>(head.data(), keys.data(), nnz);
  check_launch("marking blocks");
  std::size_t bytes = 0;
  check_cuda(cub::DeviceScan::InclusiveSum(nullptr, bytes, head.data(), slot.data(), nnz, s),
             "gpu::csr_to_bcsr: sizing the scan");
  check_cuda(cub::DeviceScan::InclusiveSum(ctx.workspace(bytes), bytes, head.data(), slot.data(), nnz, s),
             "gpu::csr_to_bcsr: scan");
  const std::int64_t nblocks = read_one(slot.data() + (nnz - 1), ctx), nvalues = nblocks * rc;
  const std::int64_t limit = bcsr_max_values(nnz, rows);
  if (nvalues > limit)
    fail(errc::unsupported,
         "bcsr: " + std::to_string(r) + " x " + std::to_string(c) + " blocks need " + std::to_string(nvalues) +
             " values for " + std::to_string(nnz) + " entries, beyond the limit of " + std::to_string(limit) +
             " values (min(2^31 - 1, 64 * (nnz + rows + 1) + 2^20)); use a smaller block size or 0 (automatic)");

  block_pointers<<<launch_blocks(mb + 1, block_threads), block_threads, 0, s>>>(
      out.block_ptr.data(), mb, keys.data(), slot.data(), nnz, col_bits, nblocks);
  check_launch("building block_ptr");
  out.block_col.resize(nblocks);
  out.values.resize(nvalues);
  check_cuda(cudaMemsetAsync(out.values.data(), 0, nvalues * sizeof(V), s), "gpu::csr_to_bcsr: +0.0 fill");
  // Values and block columns; then the +0.0 entries' positions, compacted in sorted order.
  device_array<I>& at = head;  // the heads are scanned: reused for the positions
  device_array<std::uint8_t> zero(nnz);
  scatter<V><<<entry_blocks, block_threads, 0, s>>>(nnz, keys.data(), perm.data(), slot.data(), sub.data(),
                                                    a.col_idx.data(), a.values.data(), c, rc,
                                                    (block_key{1} << col_bits) - 1, out.block_col.data(),
                                                    out.values.data(), at.data(), zero.data());
  check_launch("filling the blocks");
  device_array<I>& selected = perm_next;  // free after the sort
  device_array<std::int64_t> count(1);
  check_cuda(cub::DeviceSelect::Flagged(nullptr, bytes, at.data(), zero.data(), selected.data(), count.data(), nnz, s),
             "gpu::csr_to_bcsr: sizing the stored-zero selection");
  check_cuda(cub::DeviceSelect::Flagged(ctx.workspace(bytes), bytes, at.data(), zero.data(), selected.data(),
                                        count.data(), nnz, s),
             "gpu::csr_to_bcsr: selecting the stored zeros");
  const std::int64_t zeros = read_one(count.data(), ctx);
  out.stored_zeros.resize(zeros);
  if (zeros > 0)
    check_cuda(cudaMemcpyAsync(out.stored_zeros.data(), selected.data(), zeros * sizeof(I), cudaMemcpyDeviceToDevice, s),
               "gpu::csr_to_bcsr: copying stored_zeros");
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V)                                                                               \
  template bcsr<V, I, device> csr_to_bcsr<V>(const csr<V, I, device>&, const bcsr_params&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
