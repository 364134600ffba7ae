// CSR <-> CSR5 on the GPU (liu-thesis-csr5.txt sec. 6.3; the conversion steps of sec. 8.5.2:
// allocation, tile_ptr, tile_desc, transposition), byte-identical to the CPU converters.
//
// The CPU walks row_ptr once per block of tiles; a GPU thread or warp per tile walking its rows
// would stall on a tile that spans 10^5 empty rows. Here every step is a flat kernel over rows,
// tiles or entries, and each stored field is derived from the rule the format defines
// (specs/formats/csr5.md), not from the CPU's walk:
//   mark      per row: a non-empty row starting inside a complete tile sets its first entry's
//             bit in a bitmap of row starts (one bit per entry, in the workspace); an empty row r
//             marks the tile holding entry row_ptr[r] - 1, the only tile it lies strictly inside
//             (sec. 6.3.3: the "-0" tiles); row_ptr is copied on the way. Per tile: tile_ptr by a
//             binary search (Algorithm 24 line 3);
//   describe  a group of lanes per complete tile, one per tile lane: bit_flag is the lane's
//             sigma bits of the bitmap plus the always-set first flag (sec. 6.3.4), y_offset an
//             exclusive sum of the lanes' flag counts, seg_offset (Algorithm 25: flag-free
//             lanes to the right) the distance to the next flagged lane in a ballot; the tile's
//             segment count goes to the scan and the empty-rows mark to tile_ptr's bit 31;
//   scan      tile_desc_offset_ptr is the inclusive sum of the segment counts of the tiles with
//             empty rows (cub); its last element is the empty_offset length;
//   transpose the in-place transposition of sec. 6.3.1 staged through shared memory; then the
//             host reads the empty_offset length back;
//   offsets   each row starting inside a tile with empty rows writes its segment's empty_offset
//             entry (Algorithm 26), the segment index being y_offset plus the flags before it in
//             its lane.
// Each field is a function of row_ptr alone (the values only move), so the result does not
// depend on the launch shape and equals the CPU's bit for bit.
//
// The input's row_ptr[rows] == nnz is checked on the device and read back with the
// empty_offset length, so that the conversion waits for the device once (twice when some tile
// spans empty rows: empty_offset is allocated after its length is known). The kernels keep
// their writes in bounds whatever row_ptr[rows] is; the result is dropped when it is wrong.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cub/device/device_scan.cuh>
#include <limits>
#include <string>

#include "convert/gpu/csr5.hpp"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/search.cuh"

namespace spconv::gpu {
namespace {

constexpr int block_threads = 256;  // a multiple of the warp
constexpr int warp_size = 32;
constexpr unsigned full_warp = 0xffffffffu;

constexpr const char* bad_lengths =
    "csr5: the input CSR's row_ptr/col_idx/values lengths do not match its shape and nnz";

// The tile geometry the descriptor kernels need, passed by value (csr5_layout's fields plus
// counts). group: the lanes of a warp given to one tile in describe_tiles, omega rounded up
// to a power of two (so that a warp holds 32 / group tiles), or 32 with two halves of lanes
// (i and i + 32) past omega = 32.
struct geometry {
  std::int64_t omega, sigma, T, complete, tiles, nnz, rows;
  int words, y_bits, seg_pos, seg_bits, flag_pos, group, halves;
};

geometry make_geometry(const csr5_params& p, std::int64_t nnz, std::int64_t rows) {
  const csr5_layout L(p.omega, p.sigma);
  const std::int64_t T = L.tile_size();
  int group = 1;
  while (group < std::min(L.omega, warp_size)) group *= 2;
  return {.omega = L.omega,
          .sigma = L.sigma,
          .T = T,
          .complete = nnz / T,
          .tiles = (nnz + T - 1) / T,
          .nnz = nnz,
          .rows = rows,
          .words = L.words,
          .y_bits = L.y_offset_bits,
          .seg_pos = L.seg_offset_pos(),
          .seg_bits = L.seg_offset_bits,
          .flag_pos = L.bit_flag_pos(),
          .group = group,
          .halves = L.omega > warp_size ? 2 : 1};
}

// Bits [pos, pos + width) of a lane's descriptor bit string, whose 32-bit words lie `stride`
// apart (csr5_get_bits of formats/csr5.hpp, on the device).
__device__ std::uint64_t get_bits(const std::uint32_t* lane, std::int64_t stride, int pos, int width) {
  std::uint64_t v = 0;
  for (int got = 0; got < width;) {
    const int p = pos + got, bit = p % 32, take = min(32 - bit, width - got);
    v |= ((std::uint64_t{lane[(p / 32) * stride]} >> bit) & ((std::uint64_t{1} << take) - 1)) << got;
    got += take;
  }
  return v;
}

// Per tile t in [0, tiles]: tile_ptr[t] = the row of entry min(t*T, nnz), the last r with
// row_ptr[r] <= that entry (Algorithm 24 line 3; `rows` for t = tiles); bit 31 comes later.
// Per row r in [0, rows]: row_ptr copied; a non-empty row starting in a complete tile sets
// bit row_ptr[r] of `starts`; an empty row r with row_ptr[r] = k > 0 follows entry k - 1, of
// tile t = (k - 1) / T: tile t starts at or before that entry's row (< r) and tile t + 1 at or
// after entry k, whose row is > r, so r lies strictly between them (leading empty rows, k = 0,
// lie in no tile). Several rows may mark one tile: the same byte is written. The searches
// come first in the index space, so their chains of dependent loads overlap the row work.
//
// Consecutive lanes take consecutive rows, whose starts do not decrease: the lanes whose
// starts share a 64-bit bitmap word form a run, ORed into its first lane by a segmented
// shuffle reduction, which then makes the run's one atomicOr (several rows per word in
// matrices with short rows). The loop steps a warp at a time so that every lane takes part in
// the shuffles. status[0] is set when row_ptr[rows] != nnz.
__global__ void mark(geometry g, const std::int32_t* row_ptr, std::int32_t* row_ptr_out, unsigned long long* starts,
                     std::uint8_t* spans_empty, std::uint32_t* tile_ptr, std::uint32_t* offset_ptr,
                     std::uint32_t* status) {
  const int lane = static_cast<int>(threadIdx.x) % warp_size;
  const std::int64_t searches = g.tiles + 1, n = searches + g.rows + 1, row_end = g.complete * g.T;
  for (std::int64_t base = first_index() - lane; base < n; base += grid_stride()) {
    const std::int64_t idx = base + lane;
    // This lane's row start: its bitmap word (nondecreasing over the lanes: -1 before the
    // rows, the start's word on every row, the largest value past the end) and its bit.
    long long word = idx < searches ? -1 : LLONG_MAX;
    unsigned long long bit = 0;
    if (idx < searches) {
      const std::int64_t k = min(idx * g.T, g.nnz);
      tile_ptr[idx] = static_cast<std::uint32_t>(upper_bound(row_ptr, 0, g.rows + 1, k) - 1);  // the row holding k
    } else if (idx < n) {
      const std::int64_t r = idx - searches, b = row_ptr[r];
      row_ptr_out[r] = static_cast<std::int32_t>(b);
      word = b >> 6;
      if (r == g.rows) {
        if (b != g.nnz) status[0] = 1;
      } else if (b == row_ptr[r + 1]) {
        if (b > 0 && b <= g.nnz) spans_empty[(b - 1) / g.T] = 1;
      } else if (b >= 0 && b < row_end) {
        bit = 1ull << (b & 63);
      }
    }
    for (int d = 1; d < warp_size; d *= 2) {
      const long long w = __shfl_down_sync(full_warp, word, d);
      const unsigned long long other = __shfl_down_sync(full_warp, bit, d);
      if (lane + d < warp_size && w == word) bit |= other;
    }
    const long long before = __shfl_up_sync(full_warp, word, 1);
    if (bit != 0 && (lane == 0 || before != word)) atomicOr(starts + word, bit);
  }
  if (first_index() == 0) offset_ptr[0] = 0;
}

// Bits [k, k + sigma) of the row-start bitmap: a lane's bit_flag (sigma <= 64, so at most two
// words; the second exists as its last bit is an entry of the same complete tile).
__device__ std::uint64_t lane_starts(const unsigned long long* starts, std::int64_t k, int sigma) {
  const std::int64_t w = k >> 6;
  const int off = static_cast<int>(k & 63);
  std::uint64_t v = starts[w] >> off;
  if (off + sigma > 64) v |= static_cast<std::uint64_t>(starts[w + 1]) << (64 - off);
  return sigma == 64 ? v : v & ((std::uint64_t{1} << sigma) - 1);
}

// Complete tiles, `group` lanes each (32 / group tiles per warp, or one tile over two halves):
// virtual lane i = h * 32 + (lane % group) is tile lane i. The tile's first entry is always
// flagged (it seals the first segment, sec. 6.3.4); y_offset = flags in the lanes to the left;
// seg_offset = for a lane with a flag, the flag-free lanes right after it (Algorithm 25), i.e.
// the distance to the next lane with a flag (or to omega) minus one. Every word of the
// descriptor is written (no clearing needed). counts[t] = the tile's empty_offset length: its
// segment count if it spans empty rows, else 0; such tiles get bit 31 of tile_ptr, and so does
// the incomplete tile (sec. 6.3.3), which has no descriptor.
__global__ void describe_tiles(geometry g, const unsigned long long* starts, const std::uint8_t* spans_empty,
                               std::uint32_t* tile_ptr, std::uint32_t* tile_desc, std::uint32_t* counts) {
  if (first_index() == 0 && g.tiles > g.complete && spans_empty[g.complete])
    tile_ptr[g.complete] |= csr5_empty_rows_bit;
  const int lane = static_cast<int>(threadIdx.x) % warp_size, sub = lane % g.group, slot = lane / g.group;
  const std::int64_t per_warp = warp_size / g.group, warps = grid_stride() / warp_size;
  const int omega = static_cast<int>(g.omega), sigma = static_cast<int>(g.sigma);
  for (std::int64_t t0 = first_index() / warp_size * per_warp; t0 < g.complete; t0 += warps * per_warp) {
    const std::int64_t t = t0 + slot;
    const bool live = t < g.complete;
    std::uint64_t flags[2] = {0, 0}, y[2] = {0, 0}, has = 0;
    std::uint32_t total = 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // unrolled, so that the arrays stay in registers
      if (h == g.halves) break;
      const int i = h * warp_size + sub;
      if (live && i < omega) flags[h] = lane_starts(starts, t * g.T + std::int64_t{i} * sigma, sigma) | (i == 0);
      const int c = __popcll(flags[h]), incl = group_inclusive_sum(c, g.group);
      y[h] = total + static_cast<std::uint32_t>(incl - c);
      total += static_cast<std::uint32_t>(__shfl_sync(full_warp, incl, g.group - 1, g.group));
      const unsigned ballot = __ballot_sync(full_warp, flags[h] != 0);
      const unsigned mine = g.group == warp_size ? ballot : (ballot >> (slot * g.group)) & ((1u << g.group) - 1);
      has |= std::uint64_t{mine} << (h * warp_size);
    }
    if (!live) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int i = h * warp_size + sub;
      if (h == g.halves) break;
      if (i >= omega) continue;
      std::uint64_t seg = 0;
      if (flags[h] != 0) {
        const std::uint64_t after = i + 1 < 64 ? has >> (i + 1) : 0;
        seg = after != 0 ? static_cast<std::uint64_t>(__ffsll(static_cast<long long>(after)) - 1) : omega - i - 1;
      }
      const std::uint64_t lo = y[h] | (seg << g.seg_pos) | (flags[h] << g.flag_pos);
      const std::uint64_t hi = g.flag_pos == 0 ? 0 : flags[h] >> (64 - g.flag_pos);
      std::uint32_t* desc = tile_desc + t * g.words * g.omega + i;
      desc[0] = static_cast<std::uint32_t>(lo);
      if (g.words > 1) desc[g.omega] = static_cast<std::uint32_t>(lo >> 32);
      if (g.words > 2) desc[2 * g.omega] = static_cast<std::uint32_t>(hi);
    }
    if (sub == 0) {
      const bool empty = spans_empty[t] != 0;
      counts[t] = empty ? total : 0u;
      if (empty) tile_ptr[t] |= csr5_empty_rows_bit;
    }
  }
}

// empty_offset (Algorithm 26) of the tiles with empty rows: segment s of tile t is the s-th
// flagged entry; its entry is the segment's row minus the tile's first row. Segment 0 is 0
// (written per tile: the tile may start inside a row); every other segment starts a row r
// inside the tile, whose index is its lane's y_offset plus the flags before it in the lane.
__global__ void empty_offsets(geometry g, const std::int32_t* row_ptr, const std::uint32_t* tile_ptr,
                              const std::uint32_t* tile_desc, const std::uint8_t* spans_empty,
                              const std::uint32_t* offset_ptr, std::uint32_t* offsets) {
  const std::int64_t n = max(g.rows, g.complete);
  for (std::int64_t idx = first_index(); idx < n; idx += grid_stride()) {
    if (idx < g.complete && spans_empty[idx]) offsets[offset_ptr[idx]] = 0;
    if (idx >= g.rows) continue;
    const std::int64_t b = row_ptr[idx];
    if (b == row_ptr[idx + 1] || b >= g.complete * g.T) continue;
    const std::int64_t t = b / g.T, l = b - t * g.T;
    if (!spans_empty[t] || l == 0) continue;
    const std::int64_t i = l / g.sigma, j = l - i * g.sigma;
    const std::uint32_t* lane = tile_desc + t * g.words * g.omega + i;
    const std::uint64_t before = get_bits(lane, g.omega, g.flag_pos, static_cast<int>(g.sigma)) &
                                 ((std::uint64_t{1} << j) - 1);
    const std::uint64_t s = get_bits(lane, g.omega, 0, g.y_bits) + __popcll(before);
    offsets[offset_ptr[t] + s] = static_cast<std::uint32_t>(idx - (tile_ptr[t] & csr5_row_mask));
  }
}

// ---- The transposition (sec. 6.3.1): stored position t*T + j*omega + i of a complete tile
// holds CSR entry t*T + i*sigma + j; the incomplete tile stays in CSR order. A gather per
// position reads every warp's entries sigma apart (a sector per entry); instead a block stages
// a chunk of whole tiles in shared memory: it reads the chunk in its input order and writes it
// in its output order, both coalesced, and only the shared-memory side is strided.

// Entries per chunk: whole tiles up to this many (one tile when a tile is larger), 8 per thread.
constexpr int chunk_entries = 2048, stage_items = chunk_entries / block_threads;

// x / d for 1 <= d <= 4096 and 0 <= x < 2^13 (every position inside a chunk) as a multiply and
// a shift, where a 32-bit division by a runtime divisor takes some 20 instructions: with
// m = ceil(2^32 / d) = (2^32 + e) / d, e < d, x * m / 2^32 = x / d + x * e / (d * 2^32) and
// x * e < 2^25 keeps the excess below 1/d, so the floor is exact.
struct divider {
  std::uint64_t m;
  __device__ int operator()(int x) const { return static_cast<int>((static_cast<std::uint64_t>(x) * m) >> 32); }
};
divider divide_by(std::int64_t d) { return {((std::uint64_t{1} << 32) + static_cast<std::uint64_t>(d) - 1) / d}; }

// The chunk's CSR entry l sits in shared-memory word l + pad * (l / sigma): lane by lane at a
// pitch of sigma + pad, odd (pad = 1 for even sigma). Reading a step j of all the lanes then
// touches words i * pitch + j, all in different banks for omega = 32 (at most 7 deep, 5 on
// average, for the other tile sizes: counted for every omega, sigma <= 64), while the runs of
// sigma consecutive entries conflict at most 2 deep. Without the pad, sigma = 32 would put a
// whole warp in one bank.
struct transposition {
  std::int64_t complete, nnz, chunks;  // chunks of whole tiles (the incomplete tile is one more)
  int omega, sigma, T, chunk_tiles, pad, plane;  // plane: shared-memory words per 32-bit plane
  divider by_omega, by_sigma, by_T;
};

transposition make_transposition(const geometry& g) {
  const int T = static_cast<int>(g.T), chunk_tiles = std::max(1, chunk_entries / T), pad = g.sigma % 2 == 0 ? 1 : 0;
  return {.complete = g.complete,
          .nnz = g.nnz,
          .chunks = (g.complete + chunk_tiles - 1) / chunk_tiles,
          .omega = static_cast<int>(g.omega),
          .sigma = static_cast<int>(g.sigma),
          .T = T,
          .chunk_tiles = chunk_tiles,
          .pad = pad,
          .plane = chunk_tiles * (T + pad * static_cast<int>(g.omega)),
          .by_omega = divide_by(g.omega),
          .by_sigma = divide_by(g.sigma),
          .by_T = divide_by(T)};
}

__device__ int csr_slot(const transposition& g, int l) { return l + g.pad * g.by_sigma(l); }

// Chunk position x in tile order: x = c*T + j*omega + i holds the chunk's CSR entry
// l = c*T + i*sigma + j, whose lane l / sigma is c*omega + i.
__device__ int tile_slot(const transposition& g, int x) {
  const int c = g.by_T(x), r = x - c * g.T, j = g.by_omega(r), i = r - j * g.omega;
  return c * g.T + i * g.sigma + j + g.pad * (c * g.omega + i);
}

// An entry in shared memory as 32-bit planes (column, then the value's words), so that every
// access is a 32-bit one and the bank analysis above holds for doubles too. The values move as
// bits (reinterpreted, never converted), so NaN payloads and signed zeros survive.
__device__ void stage_put(std::uint32_t* st, int plane, int s, std::int32_t c, float v) {
  st[s] = static_cast<std::uint32_t>(c);
  st[plane + s] = __float_as_uint(v);
}
__device__ void stage_put(std::uint32_t* st, int plane, int s, std::int32_t c, double v) {
  const auto bits = static_cast<unsigned long long>(__double_as_longlong(v));
  st[s] = static_cast<std::uint32_t>(c);
  st[plane + s] = static_cast<std::uint32_t>(bits);
  st[2 * plane + s] = static_cast<std::uint32_t>(bits >> 32);
}
__device__ void stage_get(const std::uint32_t* st, int plane, int s, float& v) { v = __uint_as_float(st[plane + s]); }
__device__ void stage_get(const std::uint32_t* st, int plane, int s, double& v) {
  const unsigned long long bits = st[plane + s] | (static_cast<unsigned long long>(st[2 * plane + s]) << 32);
  v = __longlong_as_double(static_cast<long long>(bits));
}

template <class V>
constexpr int stage_planes = 1 + static_cast<int>(sizeof(V) / 4);

// A block per chunk (block-stride): the chunk's loads first, a batch of stage_items per thread
// in flight together, then the shared-memory writes; after a barrier the reads in output order
// and the coalesced stores. `to_tiles`: CSR -> CSR5, else CSR5 -> CSR. The chunk after the
// last (index chunks) is the incomplete tile, copied as it is. The same launch copies `extra`
// (the CSR5 -> CSR row_ptr) over all its threads and, where `total_out` is given, the
// empty_offset length *total_in next to the row_ptr check for the one read-back (the scan that
// writes it runs before this kernel).
template <class V>
__global__ void __launch_bounds__(block_threads)
    transpose(transposition g, bool to_tiles, const std::int32_t* col_in, const V* val_in, std::int32_t* col_out,
              V* val_out, const std::int32_t* extra_in, std::int32_t* extra_out, std::int64_t extra_n,
              const std::uint32_t* total_in, std::uint32_t* total_out) {
  extern __shared__ std::uint32_t stage[];
  const int tid = static_cast<int>(threadIdx.x);
  for (std::int64_t chunk = blockIdx.x; chunk <= g.chunks; chunk += gridDim.x) {
    if (chunk == g.chunks) {
      for (std::int64_t k = g.complete * g.T + tid; k < g.nnz; k += block_threads) {
        col_out[k] = col_in[k];
        val_out[k] = val_in[k];
      }
      continue;
    }
    const std::int64_t first = chunk * g.chunk_tiles;
    const std::int64_t base = first * g.T;
    const int n = static_cast<int>(min(std::int64_t{g.chunk_tiles}, g.complete - first)) * g.T;
    for (int b = 0; b < n; b += chunk_entries) {
      std::int32_t c[stage_items] = {};
      V v[stage_items] = {};
#pragma unroll
      for (int k = 0; k < stage_items; ++k) {
        const int x = b + k * block_threads + tid;
        if (x < n) {
          c[k] = col_in[base + x];
          v[k] = val_in[base + x];
        }
      }
#pragma unroll
      for (int k = 0; k < stage_items; ++k) {
        const int x = b + k * block_threads + tid;
        if (x < n) stage_put(stage, g.plane, to_tiles ? csr_slot(g, x) : tile_slot(g, x), c[k], v[k]);
      }
    }
    __syncthreads();
    for (int x = tid; x < n; x += block_threads) {
      const int s = to_tiles ? tile_slot(g, x) : csr_slot(g, x);
      col_out[base + x] = static_cast<std::int32_t>(stage[s]);
      stage_get(stage, g.plane, s, val_out[base + x]);
    }
    __syncthreads();  // the next chunk overwrites the stage
  }
  for (std::int64_t k = first_index(); k < extra_n; k += grid_stride()) extra_out[k] = extra_in[k];
  if (total_out != nullptr && first_index() == 0) *total_out = *total_in;
}

template <class V>
void launch_transpose(const geometry& geo, bool to_tiles, const std::int32_t* col_in, const V* val_in,
                      std::int32_t* col_out, V* val_out, const std::int32_t* extra_in, std::int32_t* extra_out,
                      std::int64_t extra_n, const std::uint32_t* total_in, std::uint32_t* total_out,
                      cudaStream_t s, const char* what) {
  const transposition g = make_transposition(geo);
  const std::size_t smem = std::size_t{4} * stage_planes<V> * static_cast<std::size_t>(g.plane);
  // Only the largest tiles of doubles (64 x 64: 49920 bytes) pass the 48 KiB a block gets
  // without asking.
  if (smem > 48 * 1024)
    check_cuda(cudaFuncSetAttribute(transpose<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
               std::string(what) + ": shared memory for the transposition");
  const std::int64_t blocks = std::max(g.chunks + 1, (extra_n + block_threads - 1) / block_threads);
  transpose<V><<<launch_blocks(blocks * block_threads, block_threads), block_threads, smem, s>>>(
      g, to_tiles, col_in, val_in, col_out, val_out, extra_in, extra_out, extra_n, total_in, total_out);
  check_cuda(cudaGetLastError(), std::string(what) + ": launching the transposition");
}

}  // namespace

template <class V>
csr5<V, std::int32_t, device> csr_to_csr5(const csr<V, std::int32_t, device>& a, const csr5_params& resolved,
                                          gpu_context& ctx) {
  const auto check_resolved = [](const char* name, std::int32_t v, std::int32_t max) {
    if (v < 1 || v > max)
      fail(errc::usage, std::string("gpu::csr_to_csr5: ") + name + " = " + std::to_string(v) + " is not in [1, " +
                            std::to_string(max) +
                            "]: pass resolved parameters (resolve requests on the host with cpu::resolve_csr5_params)");
  };
  check_resolved("omega", resolved.omega, csr5_max_omega);
  check_resolved("sigma", resolved.sigma, csr5_max_sigma);
  // The CPU's refusals, in its order and with its messages; row_ptr[rows] == nnz, the last of
  // them, is checked on the device and read back with the empty_offset length below.
  constexpr std::int64_t max32 = std::numeric_limits<std::int32_t>::max();
  const std::int64_t rows = a.rows, nnz = a.nnz();
  if (rows > max32 || a.cols > max32)
    fail(errc::unsupported, "csr5: shape " + std::to_string(rows) + " x " + std::to_string(a.cols) +
                                " exceeds 2^31 - 1 rows or columns (tile_ptr holds 31-bit rows, col_idx is int32)");
  if (nnz > max32)
    fail(errc::unsupported,
         "csr5: " + std::to_string(nnz) + " entries exceed 2^31 - 1 (row_ptr and the tile fields are 32-bit)");
  if (rows < 0 || a.row_ptr.size() != static_cast<std::size_t>(rows) + 1 || a.col_idx.size() != a.values.size())
    fail(errc::bad_input, bad_lengths);

  return in_context("gpu::csr_to_csr5", [&] {
    const geometry g = make_geometry(resolved, nnz, rows);
    const cudaStream_t s = stream_of(ctx);
    csr5<V, std::int32_t, device> out;
    out.rows = rows;
    out.cols = a.cols;
    out.params = resolved;
    out.row_ptr.resize(rows + 1);
    out.tile_ptr.resize(g.tiles + 1);
    out.tile_desc.resize(g.complete * g.words * g.omega);
    out.tile_desc_offset_ptr.resize(g.complete + 1);
    out.col_idx.resize(nnz);
    out.values.resize(nnz);

    // One scratch block: the read-back words (row_ptr check, empty_offset length), per-tile
    // empty-row marks and the row-start bitmap, cleared by one memset; then the per-tile
    // segment counts and the scan's space.
    std::size_t scan_bytes = 0;
    check_cuda(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, static_cast<const std::uint32_t*>(nullptr),
                                             static_cast<std::uint32_t*>(nullptr), static_cast<int>(g.complete), s),
               "gpu::csr_to_csr5: sizing the scan");
    const std::size_t status_bytes = round_up(2 * sizeof(std::uint32_t)), marks_bytes = round_up(g.tiles),
                      starts_bytes = round_up((g.complete * g.T + 63) / 64 * sizeof(unsigned long long)),
                      counts_bytes = round_up(g.complete * sizeof(std::uint32_t));
    const std::size_t cleared = status_bytes + marks_bytes + starts_bytes;
    auto* scratch = static_cast<unsigned char*>(ctx.workspace(cleared + counts_bytes + scan_bytes));
    auto* status = reinterpret_cast<std::uint32_t*>(scratch);
    auto* spans_empty = scratch + status_bytes;
    auto* starts = reinterpret_cast<unsigned long long*>(scratch + status_bytes + marks_bytes);
    auto* counts = reinterpret_cast<std::uint32_t*>(scratch + cleared);
    void* scan_space = scratch + cleared + counts_bytes;

    check_cuda(cudaMemsetAsync(scratch, 0, cleared, s), "gpu::csr_to_csr5: clearing the marks");
    mark<<<launch_blocks(g.tiles + rows + 2, block_threads), block_threads, 0, s>>>(
        g, a.row_ptr.data(), out.row_ptr.data(), starts, spans_empty, out.tile_ptr.data(),
        out.tile_desc_offset_ptr.data(), status);
    check_cuda(cudaGetLastError(), "gpu::csr_to_csr5: launching the row marks and tile_ptr");
    if (g.tiles > 0) {
      const std::int64_t warps = (g.complete + warp_size / g.group - 1) / (warp_size / g.group);
      describe_tiles<<<launch_blocks(warps * warp_size, block_threads), block_threads, 0, s>>>(
          g, starts, spans_empty, out.tile_ptr.data(), out.tile_desc.data(), counts);
      check_cuda(cudaGetLastError(), "gpu::csr_to_csr5: launching tile_desc");
    }
    if (g.complete > 0)
      check_cuda(cub::DeviceScan::InclusiveSum(scan_space, scan_bytes, counts, out.tile_desc_offset_ptr.data() + 1,
                                               static_cast<int>(g.complete), s),
                 "gpu::csr_to_csr5: scanning the empty_offset counts");
    if (nnz > 0)
      launch_transpose<V>(g, true, a.col_idx.data(), a.values.data(), out.col_idx.data(), out.values.data(), nullptr,
                          nullptr, 0, out.tile_desc_offset_ptr.data() + g.complete, status + 1, s,
                          "gpu::csr_to_csr5");
    // A copy into pageable host memory returns once it is done, i.e. after all the work queued
    // before it: the one wait of a conversion without empty_offset.
    std::uint32_t back[2] = {0, 0};
    check_cuda(cudaMemcpyAsync(back, status, sizeof back, cudaMemcpyDeviceToHost, s),
               "gpu::csr_to_csr5: reading the row_ptr check and the empty_offset length");
    if (back[0] != 0) fail(errc::bad_input, bad_lengths);
    out.tile_desc_offset.resize(back[1]);
    if (back[1] > 0) {
      empty_offsets<<<launch_blocks(std::max(rows, g.complete), block_threads), block_threads, 0, s>>>(
          g, a.row_ptr.data(), out.tile_ptr.data(), out.tile_desc.data(), spans_empty,
          out.tile_desc_offset_ptr.data(), out.tile_desc_offset.data());
      check_cuda(cudaGetLastError(), "gpu::csr_to_csr5: launching empty_offset");
      ctx.synchronize();
    }
    return out;
  });
}

template <class V>
csr<V, std::int32_t, device> csr5_to_csr(const csr5<V, std::int32_t, device>& a, gpu_context& ctx) {
  const std::int64_t nnz = a.nnz(), rows = a.rows;
  if (rows < 0 || a.row_ptr.size() != static_cast<std::size_t>(rows) + 1 || a.col_idx.size() != a.values.size() ||
      a.params.omega < 1 || a.params.omega > csr5_max_omega || a.params.sigma < 1 ||
      a.params.sigma > csr5_max_sigma)
    fail(errc::bad_input, "csr5: row_ptr/col_idx/values lengths or params do not match (validate() the matrix first)");
  return in_context("gpu::csr5_to_csr", [&] {
    const geometry g = make_geometry(a.params, nnz, rows);
    csr<V, std::int32_t, device> out;
    out.rows = rows;
    out.cols = a.cols;
    out.row_ptr.resize(rows + 1);
    out.col_idx.resize(nnz);
    out.values.resize(nnz);
    // One launch: the entries transposed back, row_ptr copied by the same threads.
    launch_transpose<V>(g, false, a.col_idx.data(), a.values.data(), out.col_idx.data(), out.values.data(),
                        a.row_ptr.data(), out.row_ptr.data(), rows + 1, nullptr, nullptr, stream_of(ctx),
                        "gpu::csr5_to_csr");
    ctx.synchronize();
    return out;
  });
}

#define SPCONV_INST(V)                                                                                         \
  template csr5<V, std::int32_t, device> csr_to_csr5<V>(const csr<V, std::int32_t, device>&, const csr5_params&, \
                                                        gpu_context&);                                         \
  template csr<V, std::int32_t, device> csr5_to_csr<V>(const csr5<V, std::int32_t, device>&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
