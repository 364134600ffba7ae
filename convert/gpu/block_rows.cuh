// The first half of the GPU CSR -> MBR and CSR -> BCSR converters (convert/gpu/csr_to_mbr.cu,
// convert/gpu/csr_to_bcsr.cu; include from those .cu files only): every CSR entry's place in
// block order, and the blocks numbered.
//
// Both formats cut the matrix into r x c blocks and store, per block row, the blocks holding
// entries in increasing block column, and a block's entries row-major inside it (MBR: in
// increasing bit i*c + j, mbr-kannan.txt sec. III; BCSR: at value i*c + j of the block,
// liu-thesis-csr5.txt sec. 5.4.4). So both walk a block row's entries in (block column q,
// row, column) order, "block order"; CSR holds them by row, then column: r sorted rows.
//
// Ranks by counting, not by sorting: with the rows sorted, the entries that come before the
// entry (i, j) of a block row in block order (q = j / c) are
//   - in each row above i, those of columns < (q + 1) * c,
//   - in row i, those before it,
//   - in each row below i, those of columns < q * c,
// one binary search per other row of the block row. The entry opens (heads) its block when no
// row above holds a column in [q * c, (q + 1) * c) and the entry before it in row i lies left
// of q * c. Work is split by entries (a warp per 32 * per_lane consecutive ones), so long
// rows and block rows of many blocks cost logarithmic searches, never a serial walk: r - 1
// searches per entry, in rows that lie next to each other in memory. An inclusive scan of the
// heads in block order numbers the blocks; the heads before a block row's first entry are its
// block pointer.
#pragma once
#include <cuda_runtime.h>
#include <thrust/iterator/transform_iterator.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cub/device/device_scan.cuh>
#include <string>

#include "formats/csr.hpp"
#include "formats/device.hpp"
#include "formats/device_kernel.cuh"

namespace spconv::gpu::block_rows {
// Internal linkage: each of the two converters compiles its own copy of these kernels.
namespace {

using I = std::int32_t;
constexpr int threads = 256;  // a multiple of the warp size: order_entries steps by warps
// Entries per lane and step of order_entries: one search over all rows serves 32 * per_lane
// entries, the rest search the few rows of the span.
constexpr int per_lane = 4;

// Bits all zero: +0.0, BCSR's fill value (formats/bcsr.hpp), told by bits since -0.0 == 0.
__device__ __forceinline__ bool all_bits_zero(float v) { return __float_as_uint(v) == 0u; }
__device__ __forceinline__ bool all_bits_zero(double v) { return __double_as_longlong(v) == 0; }

// The row holding entry k, searched in [lo, hi] where row_ptr[lo] <= k < row_ptr[hi + 1]:
// the last row whose start is <= k (empty rows share their start with the next row).
__device__ __forceinline__ std::int64_t row_holding(const I* row_ptr, std::int64_t lo, std::int64_t hi,
                                                    std::int64_t k) {
  ++hi;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (row_ptr[mid] <= k) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

// The first position in [lo, hi) whose column is >= bound, or hi (columns sorted there).
// Unsigned: a bound (q + 1) * c may pass 2^31 - 1.
__device__ __forceinline__ I first_at_or_after(const I* col, I lo, I hi, std::uint32_t bound) {
  while (lo < hi) {
    const I mid = lo + (hi - lo) / 2;
    if (static_cast<std::uint32_t>(col[mid]) < bound) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Puts every entry at its block-order position t: out[t] = its value, head[t] = 1 where it
// opens its block, place[t] = i*c + j inside the block (< r*c <= 256: MBR's bit, BCSR's value
// offset), head_col[t] = the block column at heads only. With zero_count given, adds the
// entries whose bits are all zero to it (BCSR's stored zeros).
template <class V>
__global__ void order_entries(std::int64_t nnz, const I* row_ptr, std::int64_t rows, const I* col, const V* val,
                              int r, int c, V* out, std::uint8_t* head, std::uint8_t* place, I* head_col,
                              I* zero_count) {
  constexpr unsigned warp = 0xffffffffu;
  const int lane = static_cast<int>(threadIdx.x % 32);
  I zeros = 0;
  // A warp takes the span of 32 * per_lane consecutive entries starting at base (the same in
  // all its lanes, so they step together): lanes 0 and 1 find the rows of the span's first
  // and last entries by a search over all rows, and each lane then searches only the rows
  // between, for its entries base + lane + 32 m (coalesced).
  const std::int64_t span = 32 * per_lane;
  for (std::int64_t base = (first_index() - lane) * per_lane; base < nnz; base += grid_stride() * per_lane) {
    const std::int64_t last = base + span - 1 < nnz ? base + span - 1 : nnz - 1;
    long long found = 0;
    if (lane < 2) found = row_holding(row_ptr, 0, rows - 1, lane == 0 ? base : last);
    const std::int64_t row_lo = __shfl_sync(warp, found, 0), row_hi = __shfl_sync(warp, found, 1);
    for (std::int64_t k = base + lane; k <= last; k += 32) {
      // Entry positions and columns are below nnz, rows below `rows`: all fit I.
      const I e = static_cast<I>(k), i = static_cast<I>(row_holding(row_ptr, row_lo, row_hi, k));
      const I j = col[e];
      const std::uint32_t q = static_cast<std::uint32_t>(j) / static_cast<std::uint32_t>(c);
      const std::uint32_t left = q * static_cast<std::uint32_t>(c), right = left + static_cast<std::uint32_t>(c);
      const I r0 = i / r * r;
      const I r_end = static_cast<I>(rows - r0 < r ? rows : std::int64_t{r0} + r);
      const I start = row_ptr[i];
      I t = row_ptr[r0] + (e - start);
      bool opens = e == start || static_cast<std::uint32_t>(col[e - 1]) < left;
      I s = row_ptr[r0];
      for (I p = r0; p < r_end; ++p) {
        const I f = row_ptr[p + 1];
        if (p != i) {
          const I at_left = first_at_or_after(col, s, f, left);
          if (p < i) {
            // A row holds at most c entries in [left, right), one per column.
            const I at_right = first_at_or_after(col, at_left, f - at_left < c ? f : at_left + c, right);
            t += at_right - s;
            opens = opens && at_right == at_left;
          } else {
            t += at_left - s;
          }
        }
        s = f;
      }
      const V v = val[e];
      out[t] = v;
      head[t] = opens ? 1 : 0;
      place[t] = static_cast<std::uint8_t>((i - r0) * c + (j - static_cast<I>(left)));
      if (opens) head_col[t] = static_cast<I>(q);
      if (zero_count != nullptr && all_bits_zero(v)) ++zeros;
    }
  }
  // Every lane gets here (the loop above steps whole warps): one atomic per warp at most.
  if (zero_count != nullptr) {
    const I n = __reduce_add_sync(warp, zeros);
    if (lane == 0 && n > 0) atomicAdd(zero_count, n);
  }
}

// block_ptr[br] = the blocks of the block rows before br: the heads among the entries before
// the block row's first, v = row_ptr[min(br * r, rows)], which is block_no[v - 1] (0 when
// v = 0; block_no is never read for a matrix without entries). value_ptr[br] = v where given
// (MBR). block_ptr[mb] (mb = ceil(rows / r)) is then the number of blocks.
__global__ void block_row_offsets(std::int64_t mb, const I* row_ptr, std::int64_t rows, int r, const I* block_no,
                                  I* block_ptr, I* value_ptr) {
  for (std::int64_t br = first_index(); br <= mb; br += grid_stride()) {
    const I v = row_ptr[br * r < rows ? br * r : rows];
    block_ptr[br] = v == 0 ? 0 : block_no[v - 1];
    if (value_ptr != nullptr) value_ptr[br] = v;
  }
}

// The scan's input: a head flag as an I, so that the block numbers are summed in I.
struct head_as_index {
  __host__ __device__ I operator()(std::uint8_t h) const { return h; }
};

// a's entries in block order (see the top of this file), by block-order position t.
struct block_order {
  device_array<std::uint8_t> head;   // 1 where the entry opens its block
  device_array<std::uint8_t> place;  // i*c + j inside its block
  device_array<I> head_col;          // the block's column, written at heads only
  device_array<I> block_no;          // heads in [0, t]: entry t lies in block block_no[t] - 1
};

void check_launch(const std::string& who, const char* what) { check_cuda(cudaGetLastError(), who + ": " + what); }

// Orders a's entries into blocks of r x c (r*c <= 256): values to `out` (nnz elements) in block
// order, the arrays of block_order, the stored zeros counted into *zero_count when given;
// block_ptr (ceil(rows / r) + 1 elements) and, where given, value_ptr (as many) are written,
// block_ptr's last element being the number of blocks. Queued on ctx's stream; no wait. A
// matrix without entries gets its pointers only (all 0). `who` names the conversion in errors.
template <class V>
block_order order_by_blocks(const csr<V, I, device>& a, int r, int c, V* out, I* zero_count, I* block_ptr,
                            I* value_ptr, gpu_context& ctx, const std::string& who) {
  const cudaStream_t s = stream_of(ctx);
  const std::int64_t nnz = a.nnz(), mb = (a.rows + r - 1) / r;
  block_order o;
  if (nnz > 0) {
    o.head.resize(nnz);
    o.place.resize(nnz);
    o.head_col.resize(nnz);
    o.block_no.resize(nnz);
    order_entries<V><<<launch_blocks((nnz + per_lane - 1) / per_lane, threads), threads, 0, s>>>(
        nnz, a.row_ptr.data(), a.rows, a.col_idx.data(), a.values.data(), r, c, out, o.head.data(), o.place.data(),
        o.head_col.data(), zero_count);
    check_launch(who, "putting the entries in block order");
    const auto heads = thrust::make_transform_iterator(o.head.data(), head_as_index{});
    std::size_t bytes = 0;
    check_cuda(cub::DeviceScan::InclusiveSum(nullptr, bytes, heads, o.block_no.data(), nnz, s),
               who + ": sizing the block numbering");
    check_cuda(cub::DeviceScan::InclusiveSum(ctx.workspace(bytes), bytes, heads, o.block_no.data(), nnz, s),
               who + ": numbering the blocks");
  }
  block_row_offsets<<<launch_blocks(mb + 1, threads), threads, 0, s>>>(
      mb, a.row_ptr.data(), a.rows, r, o.block_no.data(), block_ptr, value_ptr);
  check_launch(who, "writing the block row pointers");
  return o;
}

// Waits for ctx's stream and reads the N elements of device memory at device_ptr.
template <std::size_t N = 1>
std::array<I, N> read_back(const I* device_ptr, gpu_context& ctx, const std::string& who) {
  std::array<I, N> v{};
  check_cuda(cudaMemcpyAsync(v.data(), device_ptr, sizeof v, cudaMemcpyDeviceToHost, stream_of(ctx)),
             who + ": reading back the counts");
  ctx.synchronize();
  return v;
}

}  // namespace
}  // namespace spconv::gpu::block_rows
