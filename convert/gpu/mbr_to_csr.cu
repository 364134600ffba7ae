// MBR -> canonical CSR on the GPU (shared/papers/mbr-kannan.txt sec. III; specs/formats/mbr.md,
// section "GPU"). The result equals cpu::mbr_to_csr bit for bit.
// One thread per matrix row: row i of block row br visits the blocks of br in stored order
// (increasing block column) and takes its slice of each bitmap (bits i*c .. i*c + c - 1,
// convert/gpu/mbr_rows.cuh); its values in a block start after the block's lower set bits.
// Pass 1 counts each row's set bits, an exclusive scan (cub) gives row_ptr, pass 2 writes each
// row's columns and values in increasing column, which is canonical CSR. Each bitmap is read
// as one word of its own width (a byte at a time, stop 26's walk issued up to 8 loads a
// block). A block row of more than long_blocks blocks would hold its thread, and the warp
// around it, for the whole walk (arrow's dense first block row: 5813 blocks), and a thread
// writing a row's entries apart from its neighbours' makes every store touch 32 lines: pass 1
// lists such block rows instead, and a warp per row of theirs takes their blocks 32 at a
// time, a lane per block, placing each block's entries by scans over the lanes. Each row is
// written by one thread or one warp, so the result is deterministic.
#include <cuda_runtime.h>

#include <algorithm>
#include <cub/device/device_scan.cuh>
#include <string>

#include "convert/gpu/mbr.hpp"
#include "convert/gpu/mbr_rows.cuh"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/resident_blocks.cuh"
#include "kernels/gpu/search.cuh"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;

// Block rows of more than this many blocks are listed and taken by a warp per row. Stop 28
// (H100, double, device call 7, `spconv bench --formats mbr`): 8 against 32, MBR -> CSR on the
// replicated set 3.82 against 4.39 ms, the 27-point stencil (block rows of about 20 blocks) 5.37
// against 24.3 ms, the matrices as they are 0.057 against 0.073 ms in geometric mean.
constexpr I long_blocks = 8;

// length[row] = the row's set bits over its block row; length[rows] = 0 (the scan's total).
// The rows of block rows of more than long_blocks blocks are left to long_row_lengths: the
// thread of such a block row's first row lists it (list[0] counts, the block rows follow).
template <class M>
__global__ void row_lengths(std::int64_t rows, int r, int c, const I* block_row_ptr, const M* bitmaps, I* length,
                            I* list) {
  for (std::int64_t row = first_index(); row <= rows; row += grid_stride()) {
    if (row == rows) {
      length[row] = 0;
      continue;
    }
    const std::int64_t br = row / r;
    const int i = static_cast<int>(row - br * r);
    const I begin = block_row_ptr[br], end = block_row_ptr[br + 1];
    if (end - begin > long_blocks) {
      if (i == 0) list[1 + atomicAdd(list, 1)] = static_cast<I>(br);
      continue;
    }
    I n = 0;
#pragma unroll 4
    for (I b = begin; b < end; ++b) n += __popcll(mbr_row_of(static_cast<std::uint64_t>(bitmaps[b]), i, c).cols);
    length[row] = n;
  }
}

// f(br, i, row) for each row of the listed block rows (list[0] of them, from list[1]), a warp
// per row: the call is uniform over the warp. Rows past the matrix (the last block row may
// overhang it) are skipped.
template <class F>
__device__ void for_each_listed_row(const I* list, int r, std::int64_t rows, F&& f) {
  const std::int64_t items = std::int64_t{list[0]} * r;
  for (std::int64_t t = first_index() / 32; t < items; t += grid_stride() / 32) {
    const std::int64_t br = list[1 + t / r];
    const int i = static_cast<int>(t % r);
    if (br * r + i < rows) f(br, i, br * r + i);
  }
}

template <class M>
__global__ void long_row_lengths(std::int64_t rows, int r, int c, const I* block_row_ptr, const M* bitmaps,
                                 const I* list, I* length) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  for_each_listed_row(list, r, rows, [&](std::int64_t br, int i, std::int64_t row) {
    I n = 0;
    for (I b = block_row_ptr[br] + lane, end = block_row_ptr[br + 1]; b < end; b += 32)
      n += __popcll(mbr_row_of(static_cast<std::uint64_t>(bitmaps[b]), i, c).cols);
    for (int d = 16; d > 0; d /= 2) n += __shfl_down_sync(0xffffffffu, n, d);
    if (lane == 0) length[row] = n;
  });
}

// One row's entries in one block: the set bits of its slice `bits`, lowest first, are the
// columns base + j; their values follow values[u], and they go to positions k, k + 1, ...
// Returns the position after them.
template <class V>
__device__ __forceinline__ I write_slice(std::uint64_t bits, I base, I k, I u, const V* values, I* col_idx,
                                         V* out_values) {
  for (; bits; bits &= bits - 1, ++k, ++u) {
    col_idx[k] = base + (__ffsll(static_cast<long long>(bits)) - 1);
    out_values[k] = values[u];
  }
  return k;
}

template <class M, class V>
__global__ void write_rows(std::int64_t rows, int r, int c, const I* block_row_ptr, const I* block_col_idx,
                           const M* bitmaps, const I* value_ptr, const V* values, const I* row_ptr, I* col_idx,
                           V* out_values) {
  for (std::int64_t row = first_index(); row < rows; row += grid_stride()) {
    const std::int64_t br = row / r;
    const int i = static_cast<int>(row - br * r);
    const I begin = block_row_ptr[br], end = block_row_ptr[br + 1];
    if (end - begin > long_blocks) continue;  // write_long_rows
    I k = row_ptr[row], v = value_ptr[br];
    for (I b = begin; b < end; ++b) {
      const auto map = static_cast<std::uint64_t>(bitmaps[b]);
      const mbr_row_bits part = mbr_row_of(map, i, c);
      k = write_slice(part.cols, block_col_idx[b] * c, k, v + part.before, values, col_idx, out_values);
      v += __popcll(map);
    }
  }
}

// The listed block rows' rows, a warp per row, 32 blocks a step, a lane per block: the lane's
// first output position and first value come from inclusive sums over the lanes of the row's
// set bits and of the blocks' set bits, plus what the steps before took.
template <class M, class V>
__global__ void write_long_rows(std::int64_t rows, int r, int c, const I* block_row_ptr, const I* block_col_idx,
                                const M* bitmaps, const I* value_ptr, const V* values, const I* row_ptr,
                                const I* list, I* col_idx, V* out_values) {
  constexpr unsigned full = 0xffffffffu;
  const int lane = static_cast<int>(threadIdx.x % 32);
  for_each_listed_row(list, r, rows, [&](std::int64_t br, int i, std::int64_t row) {
    I k = row_ptr[row], v = value_ptr[br];
    for (I b0 = block_row_ptr[br], end = block_row_ptr[br + 1]; b0 < end; b0 += 32) {
      const I b = b0 + lane;
      const std::uint64_t map = b < end ? static_cast<std::uint64_t>(bitmaps[b]) : 0;
      const mbr_row_bits part = mbr_row_of(map, i, c);
      const int own = __popcll(part.cols), all = __popcll(map);
      const int own_sum = group_inclusive_sum(own), all_sum = group_inclusive_sum(all);
      if (own > 0)  // lanes past the block row read no block column
        write_slice(part.cols, block_col_idx[b] * c, k + own_sum - own, v + all_sum - all + part.before, values,
                    col_idx, out_values);
      k += __shfl_sync(full, own_sum, 31);
      v += __shfl_sync(full, all_sum, 31);
    }
  });
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), std::string("gpu::mbr_to_csr: ") + what); }

}  // namespace

template <class V>
csr<V, I, device> mbr_to_csr(const mbr<V, I, device>& a, gpu_context& ctx) {
  const int r = a.params.block_rows, c = a.params.block_cols, w = a.params.bitmap_bytes;
  if (r < 1 || c < 1 || r * c > 64 || w != mbr_bitmap_bytes(static_cast<std::int64_t>(r) * c))
    fail(errc::usage, "gpu::mbr_to_csr: block size " + std::to_string(r) + " x " + std::to_string(c) +
                          " with bitmap_bytes " + std::to_string(w) + " is not a valid mbr block");
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  const std::int64_t nnz = a.nnz();
  csr<V, I, device> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.resize(a.rows + 1);
  out.col_idx.resize(nnz);
  out.values.resize(nnz);
  device_array<I> length(a.rows + 1);
  // The listed block rows: each has more than long_blocks blocks, so there are fewer than
  // blocks / long_blocks of them; list[0] counts them.
  const auto blocks = static_cast<std::int64_t>(a.block_col_idx.size());
  device_array<I> list(2 + blocks / long_blocks);
  check_cuda(cudaMemsetAsync(list.data(), 0, sizeof(I), s), "gpu::mbr_to_csr: clearing the list of long block rows");
  const unsigned row_blocks = launch_blocks(a.rows + 1, block_threads);
  const std::int64_t most_listed_rows = (blocks / (long_blocks + 1)) * r;
  const auto long_grid = [&](auto kernel) {
    constexpr int warps = block_threads / 32;
    return static_cast<unsigned>(std::clamp<std::int64_t>((most_listed_rows + warps - 1) / warps, 1,
                                                          resident_blocks(kernel, block_threads, ctx.device(),
                                                                          "gpu::mbr_to_csr")));
  };
  with_bitmap_type(w, [&](auto word) {
    const auto* maps = reinterpret_cast<const decltype(word)*>(a.bitmaps.data());
    row_lengths<<<row_blocks, block_threads, 0, s>>>(a.rows, r, c, a.block_row_ptr.data(), maps, length.data(),
                                                     list.data());
    check_launch("counting row lengths");
    // At most one resident wave, which reads the list's count on the device (no wait for it
    // here), and no more warps than the listed rows could need.
    const auto long_lengths = long_row_lengths<decltype(word)>;
    long_lengths<<<long_grid(long_lengths), block_threads, 0, s>>>(a.rows, r, c, a.block_row_ptr.data(), maps,
                                                                  list.data(), length.data());
    check_launch("counting the rows of long block rows");
  });
  std::size_t bytes = 0;
  check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, bytes, length.data(), out.row_ptr.data(), a.rows + 1, s),
             "gpu::mbr_to_csr: sizing the scan");
  check_cuda(
      cub::DeviceScan::ExclusiveSum(ctx.workspace(bytes), bytes, length.data(), out.row_ptr.data(), a.rows + 1, s),
      "gpu::mbr_to_csr: building row_ptr");
  with_bitmap_type(w, [&](auto word) {
    const auto* maps = reinterpret_cast<const decltype(word)*>(a.bitmaps.data());
    write_rows<<<row_blocks, block_threads, 0, s>>>(a.rows, r, c, a.block_row_ptr.data(), a.block_col_idx.data(), maps,
                                                    a.value_ptr.data(), a.values.data(), out.row_ptr.data(),
                                                    out.col_idx.data(), out.values.data());
    check_launch("writing rows");
    const auto write_long = write_long_rows<decltype(word), V>;
    write_long<<<long_grid(write_long), block_threads, 0, s>>>(
        a.rows, r, c, a.block_row_ptr.data(), a.block_col_idx.data(), maps, a.value_ptr.data(), a.values.data(),
        out.row_ptr.data(), list.data(), out.col_idx.data(), out.values.data());
    check_launch("writing the rows of long block rows");
  });
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V) template csr<V, I, device> mbr_to_csr<V>(const mbr<V, I, device>&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
