// CSR -> CMRS on the GPU (shared/papers/cmrs-koza.txt sec. 3, 4, 6.7; specs/formats/cmrs.md,
// section "GPU"). The result equals cpu::csr_to_cmrs bit for bit.
//  * Basic layout (modulo 32): the values are the CSR values (one copy); each entry's column
//    word column << 4 | row % height (sec. 3-4) takes its row from a merge path over row_ptr
//    (below), consecutive threads packing consecutive entries; strip_ptr[j] =
//    row_ptr[j * height]. With sort_columns (sec. 4, fourth optimisation) a segmented sort
//    per strip orders the column words, carrying the CSR values along; the words are unique
//    within a strip, so any sort gives the CPU's order.
//  * Sec. 6.7 layout (modulo < 32): placing a strip's entries into chunks is a sequential
//    greedy (convert/cpu/csr_to_cmrs.cpp, plan_strip), so one thread plans and writes one
//    strip, exactly as the CPU does; strips are independent. A first pass counts each
//    strip's chunks, an exclusive scan (cub) places the strips, then the second pass fills.
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <limits>
#include <string>

#include "convert/cpu/cmrs.hpp"
#include "convert/gpu/cmrs.hpp"
#include "convert/gpu/merge_path.cuh"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;
static_assert(block_threads == merge_block_threads, "the merge-path kernels load their tiles with merge_block_threads");

__device__ __forceinline__ std::uint32_t pack(std::int64_t col, int row_in_strip) {
  return (static_cast<std::uint32_t>(col) << cmrs_row_bits) | static_cast<std::uint32_t>(row_in_strip);
}


// Basic layout: the word of every CSR entry k at slot k. A thread's columns are all loaded
// before its first store, so that they are in flight together.
__global__ void __launch_bounds__(block_threads)
    pack_words(const std::int64_t* cut, const I* row_ptr, std::int64_t rows, std::int64_t nnz, const I* col_idx,
               int height, std::uint32_t* words) {
  const merge_tile_runs<I> tile = load_merge_tile(cut, row_ptr + 1, rows, nnz);
  I col[merge_items];
#pragma unroll
  for (int i = 0; i < merge_items; ++i) {
    const std::int64_t k = tile.first_item + threadIdx.x + i * block_threads;
    if (k < tile.end_item) col[i] = col_idx[k];
  }
  const int first_in_strip = static_cast<int>(tile.first_run % height);
  int run = 0;
#pragma unroll
  for (int i = 0; i < merge_items; ++i) {
    const std::int64_t k = tile.first_item + threadIdx.x + i * block_threads;
    if (k < tile.end_item) {
      run = tile.run_of(k, run);
      words[k] = pack(col[i], (first_in_strip + run) % height);
    }
  }
}

// strip_ptr[j] = row_ptr[j * height] (sec. 3), and strip_ptr[strips] = row_ptr[rows] = nnz.
__global__ void basic_strip_ptr(I* strip_ptr, std::int64_t strips, const I* row_ptr, std::int64_t rows, int height) {
  for (std::int64_t j = first_index(); j <= strips; j += grid_stride())
    strip_ptr[j] = row_ptr[j * height < rows ? j * height : rows];
}

// ---- sec. 6.7 layout: the device form of plan_strip / min_chunks in
// convert/cpu/csr_to_cmrs.cpp, step for step (same arithmetic, same tie-breaking), so that
// every strip gets the CPU's slots.

struct strip_rows {
  std::int64_t len[cmrs_max_height];  // entries of each row in the strip (0 past the matrix)
};

__device__ strip_rows lengths(const I* row_ptr, std::int64_t rows, std::int64_t j, int height) {
  strip_rows s;
  const std::int64_t r0 = j * height;
  for (int r = 0; r < height; ++r)
    s.len[r] = r0 + r < rows ? static_cast<std::int64_t>(row_ptr[r0 + r + 1]) - row_ptr[r0 + r] : 0;
  return s;
}

// Fewest chunks: max(ceil(total / 32), ceil(longest / modulo)), the flow bound of
// specs/formats/cmrs.md (construction, step 1).
__device__ std::int64_t min_chunks(const strip_rows& s, int height, int modulo) {
  std::int64_t total = 0, longest = 0;
  for (int r = 0; r < height; ++r) {
    total += s.len[r];
    longest = s.len[r] > longest ? s.len[r] : longest;
  }
  const std::int64_t by_total = (total + cmrs_warp - 1) / cmrs_warp, by_row = (longest + modulo - 1) / modulo;
  return by_total > by_row ? by_total : by_row;
}

// Pass 1: the slots of every strip (whole chunks of 32); slots[strips] = 0 so that the
// exclusive scan's last element is the total.
__global__ void count_slots(std::int64_t* slots, std::int64_t strips, const I* row_ptr, std::int64_t rows, int height,
                            int modulo) {
  for (std::int64_t j = first_index(); j <= strips; j += grid_stride())
    slots[j] = j < strips ? min_chunks(lengths(row_ptr, rows, j, height), height, modulo) * cmrs_warp : 0;
}

__global__ void narrow_offsets(I* strip_ptr, const std::int64_t* offsets, std::int64_t n) {
  for (std::int64_t j = first_index(); j < n; j += grid_stride()) strip_ptr[j] = static_cast<I>(offsets[j]);
}

// Pass 2, one thread per strip: chunk by chunk, every row first takes what it must so that
// at most modulo per later chunk remain, then the rows with the most entries left (ties:
// lower row, a stable order) take more, up to modulo each and 32 in all; the chunk lists
// these runs in row order, then pads with +0.0 in the column of its last entry, each
// padding lane in the lowest row still free on its lane % modulo.
template <class V>
__global__ void fill_reordered(std::int64_t strips, std::int64_t rows, int height, int modulo, const I* row_ptr,
                               const I* col_idx, const V* values, const I* strip_ptr, std::uint32_t* words,
                               V* out_values, I* entry_slot) {
  for (std::int64_t j = first_index(); j < strips; j += grid_stride()) {
    strip_rows rem = lengths(row_ptr, rows, j, height);
    std::int64_t next[cmrs_max_height];
    const std::int64_t r0 = j * height;
    for (int r = 0; r < height; ++r) next[r] = r0 + r < rows ? row_ptr[r0 + r] : 0;
    std::int64_t base = strip_ptr[j];
    const std::int64_t chunks = (strip_ptr[j + 1] - base) / cmrs_warp;
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t later = chunks - c - 1;
      std::int64_t take[cmrs_max_height];
      std::int64_t room = cmrs_warp;
      for (int r = 0; r < height; ++r) {
        const std::int64_t must = rem.len[r] - modulo * later;
        take[r] = must > 0 ? must : 0;
        room -= take[r];
      }
      // Rows by entries left after the mandatory part, descending; an insertion sort that
      // moves a row only past strictly smaller ones is stable, like the CPU's stable_sort.
      int order[cmrs_max_height];
      for (int i = 0; i < height; ++i) {
        const std::int64_t key = rem.len[i] - take[i];
        int p = i;
        while (p > 0 && rem.len[order[p - 1]] - take[order[p - 1]] < key) {
          order[p] = order[p - 1];
          --p;
        }
        order[p] = i;
      }
      for (int i = 0; i < height && room > 0; ++i) {
        const int r = order[i];
        std::int64_t extra = modulo - take[r];
        if (rem.len[r] - take[r] < extra) extra = rem.len[r] - take[r];
        if (room < extra) extra = room;
        take[r] += extra;
        room -= extra;
      }
      for (int r = 0; r < height; ++r) rem.len[r] -= take[r];

      std::uint32_t used[cmrs_max_height];  // per row in strip: bit lane % modulo taken
      for (int r = 0; r < height; ++r) used[r] = 0;
      int lane = 0;
      std::int64_t last_col = 0;
      for (int r = 0; r < height; ++r)
        for (std::int64_t t = 0; t < take[r]; ++t, ++lane) {
          const std::int64_t k = next[r]++, s = base + lane;
          last_col = col_idx[k];
          words[s] = pack(last_col, r);
          out_values[s] = values[k];
          entry_slot[k] = static_cast<I>(s);
          used[r] |= std::uint32_t{1} << (lane % modulo);
        }
      // Every chunk holds an entry: C is a lower bound, so the greedy cannot run dry early.
      for (; lane < cmrs_warp; ++lane) {
        const std::uint32_t bit = std::uint32_t{1} << (lane % modulo);
        int r = 0;
        while (used[r] & bit) ++r;
        used[r] |= bit;
        words[base + lane] = pack(last_col, r);
        out_values[base + lane] = V(0);
      }
      base += cmrs_warp;
    }
  }
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), std::string("gpu::csr_to_cmrs: ") + what); }

template <class V>
void build_basic(const csr<V, I, device>& a, cmrs<V, I, device>& out, std::int64_t strips, gpu_context& ctx) {
  const cudaStream_t s = stream_of(ctx);
  const int h = out.params.height;
  const std::int64_t nnz = a.nnz();
  const bool sort = out.params.sort_columns;
  out.strip_ptr.resize(strips + 1);
  out.col_row.resize(nnz);
  out.values.resize(nnz);
  basic_strip_ptr<<<launch_blocks(strips + 1, block_threads), block_threads, 0, s>>>(out.strip_ptr.data(), strips,
                                                                                     a.row_ptr.data(), a.rows, h);
  check_launch("building strip_ptr");
  if (nnz == 0) return;
  // With sort_columns the words are packed into scratch and sorted into place.
  device_array<std::uint32_t> words(sort ? nnz : 0);
  std::uint32_t* packed = sort ? words.data() : out.col_row.data();
  const std::int64_t tiles = merge_tiles(a.rows, nnz);
  auto* cut = static_cast<std::int64_t*>(ctx.workspace((tiles + 1) * sizeof(std::int64_t)));
  merge_cuts<<<launch_blocks(tiles + 1, block_threads), block_threads, 0, s>>>(cut, tiles, a.row_ptr.data() + 1,
                                                                               a.rows, nnz);
  check_launch("searching the merge path");
  pack_words<<<static_cast<unsigned>(tiles), block_threads, 0, s>>>(cut, a.row_ptr.data(), a.rows, nnz,
                                                                    a.col_idx.data(), h, packed);
  check_launch("packing column words");
  if (!sort) {
    copy_on_device(out.values.data(), a.values.data(), nnz, ctx, "gpu::csr_to_cmrs: copying values");
    return;
  }
  // Column words are column << 4 | row, so sorting a strip by its words is the sec. 4
  // (column, row) order; canonical CSR stores each position once, so the keys are unique.
  // The scratch words are freed in stream order (formats/device.cu), after the sort.
  std::size_t bytes = 0;
  check_cuda(cub::DeviceSegmentedSort::SortPairs(nullptr, bytes, words.data(), out.col_row.data(), a.values.data(),
                                                 out.values.data(), nnz, strips, out.strip_ptr.data(),
                                                 out.strip_ptr.data() + 1, s),
             "gpu::csr_to_cmrs: sizing the strip sort");
  check_cuda(cub::DeviceSegmentedSort::SortPairs(ctx.workspace(bytes), bytes, words.data(), out.col_row.data(),
                                                 a.values.data(), out.values.data(), nnz, strips,
                                                 out.strip_ptr.data(), out.strip_ptr.data() + 1, s),
             "gpu::csr_to_cmrs: sorting strips by column");
}

template <class V>
void build_reordered(const csr<V, I, device>& a, cmrs<V, I, device>& out, std::int64_t strips, gpu_context& ctx) {
  const cudaStream_t s = stream_of(ctx);
  const int h = out.params.height, modulo = out.params.modulo;
  device_array<std::int64_t> slots(strips + 1), offsets(strips + 1);
  count_slots<<<launch_blocks(strips + 1, block_threads), block_threads, 0, s>>>(slots.data(), strips,
                                                                                 a.row_ptr.data(), a.rows, h, modulo);
  check_launch("counting chunks");
  std::size_t bytes = 0;
  check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, bytes, slots.data(), offsets.data(), strips + 1, s),
             "gpu::csr_to_cmrs: sizing the scan");
  check_cuda(cub::DeviceScan::ExclusiveSum(ctx.workspace(bytes), bytes, slots.data(), offsets.data(), strips + 1, s),
             "gpu::csr_to_cmrs: placing strips");
  std::int64_t total = 0;
  check_cuda(cudaMemcpyAsync(&total, offsets.data() + strips, sizeof total, cudaMemcpyDeviceToHost, s),
             "gpu::csr_to_cmrs: reading the slot count");
  ctx.synchronize();
  if (total > std::numeric_limits<I>::max())
    fail(errc::unsupported, "cmrs: the sec. 6.7 layout (modulo " + std::to_string(modulo) +
                                ") pads the matrix to more than 2^31 - 1 slots, beyond its 32-bit strip_ptr; "
                                "use the basic layout (modulo 32) or a larger modulo");
  out.strip_ptr.resize(strips + 1);
  narrow_offsets<<<launch_blocks(strips + 1, block_threads), block_threads, 0, s>>>(out.strip_ptr.data(),
                                                                                    offsets.data(), strips + 1);
  check_launch("writing strip_ptr");
  out.col_row.resize(total);
  out.values.resize(total);
  out.entry_slot.resize(a.nnz());
  fill_reordered<<<launch_blocks(strips, block_threads), block_threads, 0, s>>>(
      strips, a.rows, h, modulo, a.row_ptr.data(), a.col_idx.data(), a.values.data(), out.strip_ptr.data(),
      out.col_row.data(), out.values.data(), out.entry_slot.data());
  check_launch("filling chunks");
}

}  // namespace

template <class V>
cmrs<V, I, device> csr_to_cmrs(const csr<V, I, device>& a, const cmrs_params& resolved, gpu_context& ctx) {
  if (resolved.height == 0 || resolved.modulo == 0)
    fail(errc::usage, "gpu::csr_to_cmrs: height = " + std::to_string(resolved.height) + ", modulo = " +
                          std::to_string(resolved.modulo) +
                          ": pass resolved parameters (cpu::resolve_cmrs_params), not an automatic request");
  // The CPU's range checks and messages; the CMRS rule reads nothing of the matrix, so an
  // empty host CSR stands in for it, and concrete fields come back unchanged.
  cmrs<V, I, device> out;
  out.params = cpu::resolve_cmrs_params(csr<V, I>{}, resolved);
  if (a.cols > cmrs_max_cols)
    fail(errc::unsupported, "cmrs: " + std::to_string(a.cols) +
                                " columns do not fit the 28-bit column field (sec. 4: fewer than 2^28 columns)");
  out.rows = a.rows;
  out.cols = a.cols;
  const std::int64_t strips = cmrs_strips(a.rows, out.params.height);
  if (out.params.modulo == cmrs_warp)
    build_basic(a, out, strips, ctx);
  else
    build_reordered(a, out, strips, ctx);
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V) \
  template cmrs<V, I, device> csr_to_cmrs<V>(const csr<V, I, device>&, const cmrs_params&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
