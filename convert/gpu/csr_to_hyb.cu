// CSR <-> HYB on the GPU (liu-thesis-csr5.txt sec. 5.3.1: the first ell_width entries of each
// row in an ELL part, sec. 5.2.2, the rest in a COO tail, sec. 5.2.3), byte-identical to the
// CPU converters.
//
// CSR -> HYB: the ELL part is written in tiles of rows x slots staged through shared memory:
// consecutive threads read consecutive entries of a row (its first slots), then consecutive
// threads write consecutive rows of one slot (column-major), so both sides are coalesced. A
// thread per slot reading its entry directly would read each row's entries strided across
// the warp, wasting most of every sector. Each row's tail length max(0, length - w) is summed
// by an inclusive scan (cub) into the end of the row's tail run; a merge path over those ends
// and the tail positions (as in csr_coo.cu) gives each tail entry its row, and consecutive
// threads copy consecutive tail entries, in CSR order as the CPU does.
// HYB -> CSR: a thread per row counts its ELL entries (its first padding slot, by bisection)
// and finds its tail run by two binary searches in the row-sorted tail; the scan of the row
// lengths is row_ptr; then the ELL part moves back in the same tiles as CSR -> HYB's, and a
// thread per tail entry puts it at its CSR position: row_ptr[r] + slot, or row_ptr[r] + ELL
// entries + rank in the tail run.
// Every value is copied, never computed: the bits are the CPU's.
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>
#include <limits>
#include <string>

#include "convert/gpu/hyb.hpp"
#include "convert/gpu/merge_path.cuh"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/search.cuh"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;
static_assert(block_threads == merge_block_threads, "the merge-path kernels load their tiles with merge_block_threads");

// ---- The ELL part, in tiles of ell_tile slots: span = 2^span_bits consecutive slots (32, or
// the width rounded up to a power of two when smaller) of ell_tile / span consecutive rows.
constexpr int ell_tile_bits = 10, ell_tile = 1 << ell_tile_bits, ell_items = ell_tile / block_threads;

// The ELL part cut into tiles: row_tiles tiles down the rows times the slot tiles across the
// width (tile_ell).
struct ell_tiling {
  std::int64_t rows, w;
  int span_bits;
  std::int64_t row_tiles, tiles;
};

ell_tiling tile_ell(std::int64_t rows, std::int64_t w) {
  int span_bits = 0;
  while (span_bits < 5 && (std::int64_t{1} << span_bits) < w) ++span_bits;
  const std::int64_t row_tiles = (rows + (ell_tile >> span_bits) - 1) >> (ell_tile_bits - span_bits);
  return {rows, w, span_bits, row_tiles, row_tiles * ((w + (std::int64_t{1} << span_bits) - 1) >> span_bits)};
}

// Moves the ELL part between CSR order (slot k of row r is CSR entry row_ptr[r] + k) and the
// column-major slots (at k * rows + r), a tile at a time through shared memory: the CSR side
// is read or written with consecutive threads on consecutive slots of a row, the ELL side with
// consecutive threads on consecutive rows of a slot, so both sides are coalesced. A thread per
// slot on either side alone would touch each row's entries strided across the warp, a sector
// apiece. ToEll (CSR -> HYB): the CSR entries of row r beyond its ELL part are not read, its
// slots past its length get padding (-1, +0). Otherwise (HYB -> CSR): the padding is not
// written, ell_len[r] being the row's ELL entries.
// 5 blocks a multiprocessor (48 registers, no spills): left free, the compiler took 58 for
// ToEll in double, and 4 blocks.
template <bool ToEll, class V>
__global__ void __launch_bounds__(block_threads, 5)
    move_ell(ell_tiling m, const I* row_ptr, const I* ell_len, const I* from_col, const V* from_val, I* to_col,
             V* to_val) {
  // Row i of the tile at i * pitch: an odd pitch keeps the reads and writes down a slot
  // (consecutive rows) free of bank conflicts. tile_rows * pitch = ell_tile + tile_rows <=
  // 2 * ell_tile.
  __shared__ I tile_col[2 * ell_tile];
  __shared__ V tile_val[2 * ell_tile];
  const int span = 1 << m.span_bits, row_bits = ell_tile_bits - m.span_bits, pitch = span + 1;
  struct item {
    int at;             // in the tile
    std::int64_t r, k;  // row and slot
    bool live;          // inside the matrix and the ELL width
  };
  for (std::int64_t t = blockIdx.x; t < m.tiles; t += gridDim.x) {
    const std::int64_t r0 = (t % m.row_tiles) << row_bits, k0 = (t / m.row_tiles) << m.span_bits;
    // Item x on the CSR side: slot x % span of row x / span; on the ELL side: row x % tile_rows
    // of slot x / tile_rows.
    const auto csr_item = [&](int x) {
      const std::int64_t r = r0 + (x >> m.span_bits), k = k0 + (x & (span - 1));
      return item{(x >> m.span_bits) * pitch + (x & (span - 1)), r, k, r < m.rows && k < m.w};
    };
    const auto ell_item = [&](int x) {
      const int row = x & ((1 << row_bits) - 1), q = x >> row_bits;
      return item{row * pitch + q, r0 + row, k0 + q, r0 + row < m.rows && k0 + q < m.w};
    };
    // Loads first, so that a thread's are in flight together.
    I c[ell_items];
    V v[ell_items];
#pragma unroll
    for (int i = 0; i < ell_items; ++i) {
      const int x = static_cast<int>(threadIdx.x) + i * block_threads;
      const item it = ToEll ? csr_item(x) : ell_item(x);
      c[i] = ell_padding;
      v[i] = V(0);
      if (it.live) {
        const std::int64_t j = ToEll ? row_ptr[it.r] + it.k : it.k * m.rows + it.r;
        if (!ToEll || j < row_ptr[it.r + 1]) {
          c[i] = from_col[j];
          v[i] = from_val[j];
        }
      }
    }
#pragma unroll
    for (int i = 0; i < ell_items; ++i) {
      const item it = ToEll ? csr_item(static_cast<int>(threadIdx.x) + i * block_threads)
                            : ell_item(static_cast<int>(threadIdx.x) + i * block_threads);
      tile_col[it.at] = c[i];
      tile_val[it.at] = v[i];
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < ell_items; ++i) {
      const int x = static_cast<int>(threadIdx.x) + i * block_threads;
      const item it = ToEll ? ell_item(x) : csr_item(x);
      if (it.live && (ToEll || it.k < ell_len[it.r])) {
        const std::int64_t j = ToEll ? it.k * m.rows + it.r : row_ptr[it.r] + it.k;
        to_col[j] = tile_col[it.at];
        to_val[j] = tile_val[it.at];
      }
    }
    __syncthreads();  // the next tile overwrites the staging arrays
  }
}

__global__ void tail_lengths(std::int64_t rows, std::int64_t w, const I* row_ptr, I* len) {
  for (std::int64_t r = first_index(); r < rows; r += grid_stride())
    len[r] = static_cast<I>(max(std::int64_t{0}, row_ptr[r + 1] - row_ptr[r] - w));
}


// Tail entry o of row r (the run of o over tail_end) is CSR entry row_ptr[r] + w + its rank
// in the row's run. Positions and rows first, then every load, then every store, so that a
// thread's loads are in flight together.
template <class V>
__global__ void __launch_bounds__(block_threads)
    fill_tail(const std::int64_t* cut, std::int64_t rows, std::int64_t tail, std::int64_t w, const I* tail_end,
              const I* row_ptr, const I* col, const V* val, I* out_row, I* out_col, V* out_val) {
  const merge_tile_runs<I> tile = load_merge_tile(cut, tail_end, rows, tail);
  std::int64_t j[merge_items];
  I row[merge_items];
  int run = 0;
#pragma unroll
  for (int i = 0; i < merge_items; ++i) {
    const std::int64_t o = tile.first_item + threadIdx.x + i * block_threads;
    if (o < tile.end_item) {
      run = tile.run_of(o, run);
      const std::int64_t r = tile.first_run + run;
      row[i] = static_cast<I>(r);
      j[i] = row_ptr[r] + w + (o - tile.start[run]);
    }
  }
  I c[merge_items];
  V v[merge_items];
#pragma unroll
  for (int i = 0; i < merge_items; ++i)
    if (tile.first_item + threadIdx.x + i * block_threads < tile.end_item) {
      c[i] = col[j[i]];
      v[i] = val[j[i]];
    }
#pragma unroll
  for (int i = 0; i < merge_items; ++i) {
    const std::int64_t o = tile.first_item + threadIdx.x + i * block_threads;
    if (o < tile.end_item) {
      out_row[o] = row[i];
      out_col[o] = c[i];
      out_val[o] = v[i];
    }
  }
}

// Per row: its ELL entries (padding only follows a row's entries), its tail run
// [tail_first, tail_first + count) in the row-sorted tail, and its CSR length.
__global__ void row_lengths(std::int64_t rows, std::int64_t w, const I* ell_col, std::int64_t tail, const I* tail_row,
                            I* ell_len, I* tail_first, I* len) {
  for (std::int64_t r = first_index(); r < rows; r += grid_stride()) {
    // The first padding slot, by bisection: log2(w) dependent loads where a walk took up to w.
    std::int64_t k = 0, hi = w;
    while (k < hi) {
      const std::int64_t mid = k + (hi - k) / 2;
      if (ell_col[mid * rows + r] != ell_padding) k = mid + 1;
      else hi = mid;
    }
    const std::int64_t first = lower_bound(tail_row, 0, tail, r), end = upper_bound(tail_row, 0, tail, r);
    ell_len[r] = static_cast<I>(k);
    tail_first[r] = static_cast<I>(first);
    len[r] = static_cast<I>(k + end - first);
  }
}

template <class V>
__global__ void copy_tail(std::int64_t tail, const I* tail_row, const I* tail_col, const V* tail_val, const I* row_ptr,
                          const I* ell_len, const I* tail_first, I* col, V* val) {
  for (std::int64_t c = first_index(); c < tail; c += grid_stride()) {
    const std::int64_t r = tail_row[c], o = row_ptr[r] + ell_len[r] + (c - tail_first[r]);
    col[o] = tail_col[c];
    val[o] = tail_val[c];
  }
}

// The inclusive sum of n int32 counts into out, with its scratch space.
void inclusive_sum(const I* in, I* out, std::int64_t n, void* space, std::size_t bytes, gpu_context& ctx,
                   const char* what) {
  check_cuda(cub::DeviceScan::InclusiveSum(space, bytes, in, out, static_cast<int>(n), stream_of(ctx)), what);
}

std::size_t scan_bytes(std::int64_t n, gpu_context& ctx) {
  std::size_t bytes = 0;
  check_cuda(cub::DeviceScan::InclusiveSum(nullptr, bytes, static_cast<const I*>(nullptr), static_cast<I*>(nullptr),
                                           static_cast<int>(n), stream_of(ctx)),
             "sizing a scan");
  return bytes;
}

template <class T>
T read_one(const T* p, gpu_context& ctx) {
  T v{};
  check_cuda(cudaMemcpyAsync(&v, p, sizeof v, cudaMemcpyDeviceToHost, stream_of(ctx)), "reading back a count");
  ctx.synchronize();
  return v;
}

}  // namespace

template <class V>
hyb<V, std::int32_t, device> csr_to_hyb(const csr<V, std::int32_t, device>& a, const hyb_params& resolved,
                                        gpu_context& ctx) {
  const std::int64_t rows = a.rows, w = resolved.ell_width, nnz = a.nnz();
  if (rows < 0 || a.row_ptr.size() != static_cast<std::size_t>(rows) + 1 || a.col_idx.size() != a.values.size())
    fail(errc::bad_input, "gpu::csr_to_hyb: the input CSR's row_ptr/col_idx/values lengths do not match its shape");
  if (w < 0)
    fail(errc::usage, "gpu::csr_to_hyb: ell_width = " + std::to_string(w) +
                          " is negative (pass a resolved width: cpu::resolve_hyb_params)");
  // cpu::resolve_hyb_params's checks of a width, with its messages.
  const std::int64_t cap = ell_slot_cap(nnz, rows);
  if (rows > 0 && w > cap / rows)
    fail(errc::usage, "hyb: ell_width = " + std::to_string(w) + " gives " + std::to_string(rows) + " x " +
                          std::to_string(w) + " ELL slots, beyond the container cap 64 * (nnz + rows + 1) + 2^20 = " +
                          std::to_string(cap) + " for this matrix; choose a smaller width or 0 (automatic)");
  if (rows * w > std::numeric_limits<std::int32_t>::max())
    fail(errc::unsupported, "hyb: ell_width = " + std::to_string(w) + " gives " + std::to_string(rows * w) +
                                " ELL slots, beyond the 32-bit slot index (max 2^31-1)");

  return in_context("gpu::csr_to_hyb", [&] {
    const cudaStream_t s = stream_of(ctx);
    hyb<V, std::int32_t, device> out;
    out.rows = rows;
    out.cols = a.cols;
    out.params = resolved;
    hyb<V, std::int32_t, device>::sync_parts(out);
    out.ell.col_idx.resize(rows * w);
    out.ell.values.resize(rows * w);
    if (rows == 0) {
      ctx.synchronize();
      return out;
    }
    // One scratch block: the tail lengths, their inclusive sums, the scan's space, the tail's
    // merge path cuts (sized for the longest possible tail, nnz).
    const std::size_t counts = round_up(rows * sizeof(I)), space = round_up(scan_bytes(rows, ctx));
    const std::size_t cuts = (merge_tiles(rows, nnz) + 1) * sizeof(std::int64_t);
    auto* scratch = static_cast<unsigned char*>(ctx.workspace(2 * counts + space + cuts));
    I* len = reinterpret_cast<I*>(scratch);
    I* tail_end = reinterpret_cast<I*>(scratch + counts);
    auto* cut = reinterpret_cast<std::int64_t*>(scratch + 2 * counts + space);
    tail_lengths<<<launch_blocks(rows, block_threads), block_threads, 0, s>>>(rows, w, a.row_ptr.data(), len);
    check_cuda(cudaGetLastError(), "gpu::csr_to_hyb: launching the tail lengths");
    inclusive_sum(len, tail_end, rows, scratch + 2 * counts, space, ctx, "gpu::csr_to_hyb: scanning the tail lengths");
    // The tail's length is read back (the one wait before the end) while nothing else is
    // queued, and every allocation is made before the fills, which then run back to back.
    const std::int64_t tail = read_one(tail_end + rows - 1, ctx);
    out.coo.row_idx.resize(tail);
    out.coo.col_idx.resize(tail);
    out.coo.values.resize(tail);
    if (w > 0) {
      const ell_tiling m = tile_ell(rows, w);
      move_ell<true, V><<<launch_blocks(m.tiles * block_threads, block_threads), block_threads, 0, s>>>(
          m, a.row_ptr.data(), nullptr, a.col_idx.data(), a.values.data(), out.ell.col_idx.data(),
          out.ell.values.data());
      check_cuda(cudaGetLastError(), "gpu::csr_to_hyb: launching the ELL fill");
    }
    if (tail > 0) {
      const std::int64_t tiles = merge_tiles(rows, tail);
      merge_cuts<<<launch_blocks(tiles + 1, block_threads), block_threads, 0, s>>>(cut, tiles, tail_end, rows, tail);
      check_cuda(cudaGetLastError(), "gpu::csr_to_hyb: launching the tail's merge path search");
      fill_tail<<<static_cast<unsigned>(tiles), block_threads, 0, s>>>(cut, rows, tail, w, tail_end, a.row_ptr.data(),
                                                                      a.col_idx.data(), a.values.data(),
                                                                      out.coo.row_idx.data(), out.coo.col_idx.data(),
                                                                      out.coo.values.data());
      check_cuda(cudaGetLastError(), "gpu::csr_to_hyb: launching the tail fill");
    }
    ctx.synchronize();
    return out;
  });
}

template <class V>
csr<V, std::int32_t, device> hyb_to_csr(const hyb<V, std::int32_t, device>& a, gpu_context& ctx) {
  const std::int64_t rows = a.rows, w = a.params.ell_width, tail = a.coo.nnz();
  if (rows < 0 || w < 0 || (rows > 0 && w > std::numeric_limits<std::int32_t>::max() / rows) ||
      a.ell.col_idx.size() != static_cast<std::size_t>(rows * w) || a.ell.values.size() != a.ell.col_idx.size() ||
      a.coo.row_idx.size() != a.coo.values.size() || a.coo.col_idx.size() != a.coo.values.size())
    fail(errc::bad_input, "gpu::hyb_to_csr: the ELL/COO array lengths do not match the shape and ell_width "
                          "(validate() the matrix first)");
  return in_context("gpu::hyb_to_csr", [&] {
    const cudaStream_t s = stream_of(ctx);
    csr<V, std::int32_t, device> out;
    out.rows = rows;
    out.cols = a.cols;
    out.row_ptr.resize(rows + 1);
    check_cuda(cudaMemsetAsync(out.row_ptr.data(), 0, sizeof(I), s), "gpu::hyb_to_csr: row_ptr[0]");
    if (rows == 0) {
      ctx.synchronize();
      return out;
    }
    // One scratch block: per row its ELL entries, the start of its tail run and its length,
    // then the scan's space.
    const std::size_t counts = round_up(rows * sizeof(I)), space = scan_bytes(rows, ctx);
    auto* scratch = static_cast<unsigned char*>(ctx.workspace(3 * counts + space));
    I* ell_len = reinterpret_cast<I*>(scratch);
    I* tail_first = reinterpret_cast<I*>(scratch + counts);
    I* len = reinterpret_cast<I*>(scratch + 2 * counts);
    row_lengths<<<launch_blocks(rows, block_threads), block_threads, 0, s>>>(
        rows, w, a.ell.col_idx.data(), tail, a.coo.row_idx.data(), ell_len, tail_first, len);
    check_cuda(cudaGetLastError(), "gpu::hyb_to_csr: launching the row lengths");
    inclusive_sum(len, out.row_ptr.data() + 1, rows, scratch + 3 * counts, space, ctx,
                  "gpu::hyb_to_csr: scanning the row lengths");
    const std::int64_t nnz = read_one(out.row_ptr.data() + rows, ctx);
    out.col_idx.resize(nnz);
    out.values.resize(nnz);
    if (rows * w > 0) {
      const ell_tiling m = tile_ell(rows, w);
      move_ell<false, V><<<launch_blocks(m.tiles * block_threads, block_threads), block_threads, 0, s>>>(
          m, out.row_ptr.data(), ell_len, a.ell.col_idx.data(), a.ell.values.data(), out.col_idx.data(),
          out.values.data());
      check_cuda(cudaGetLastError(), "gpu::hyb_to_csr: launching the ELL copy");
    }
    if (tail > 0) {
      copy_tail<<<launch_blocks(tail, block_threads), block_threads, 0, s>>>(
          tail, a.coo.row_idx.data(), a.coo.col_idx.data(), a.coo.values.data(), out.row_ptr.data(), ell_len,
          tail_first, out.col_idx.data(), out.values.data());
      check_cuda(cudaGetLastError(), "gpu::hyb_to_csr: launching the tail copy");
    }
    ctx.synchronize();
    return out;
  });
}

#define SPCONV_INST(V)                                                                                       \
  template hyb<V, std::int32_t, device> csr_to_hyb<V>(const csr<V, std::int32_t, device>&, const hyb_params&, \
                                                      gpu_context&);                                         \
  template csr<V, std::int32_t, device> hyb_to_csr<V>(const hyb<V, std::int32_t, device>&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
