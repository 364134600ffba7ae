// CSR5 SpMV on the GPU (liu-thesis-csr5.txt sec. 8.5.1, Algorithm 32; the fast segmented sum
// of sec. 4.4.4, Algorithm 13).
//
// Tile t's segments are its bit_flag TRUEs in CSR order; segment s is row tile_ptr[t] + s,
// or tile_ptr[t] + empty_offset[s] when bit 31 of tile_ptr[t] is set (sec. 6.3.3-6.3.4).
// With omega = 32 a warp owns a tile and lane i its column i (sec. 8.5.1: "a thread bunch for
// each tile ... a thread on GPU cores ... to each column"). Lane i walks its sigma entries
// (loads coalesced: step j of all lanes is contiguous after the transposition) and cuts them
// at its flags: the part before its first flag is red (it continues a segment from a lane to
// the left), segments closed inside the lane are green and go straight to y, the part after
// its last flag is blue. Algorithm 32 line 12 puts lane i's red sum into tmp[i - 1]; the blue
// sum of lane i then completes with tmp[i .. i + seg_offset[i]] (Algorithm 13). Where the
// thesis takes that sum as a difference of two prefix sums, which carries the rounding of
// other rows' partial sums into small rows, the warp runs a segmented suffix sum over tmp:
// five shuffle steps, each lane adding its neighbour's partial sum while the neighbour is in
// the same segment. A segment of tmp runs from a lane with a flag to the lane before the next
// one: the bound seg_offset encodes, here read off a ballot of the lanes' flags.
//
// Rows crossing tiles (sec. 8.5.1: "the first and the last segments of a tile need to store
// to y by atomic add (or a global auxiliary array ...)"): by atomic add. The row pass, which
// runs first, sets the row of each tile's first and last segments to beta*y (plus its entries
// in the incomplete tile, sec. 8.5.1's CSR-style tail), once, in the tile where the row
// begins; each tile then adds its first and last segments to their rows atomically and writes
// every other row once. So the parts of a row that spans tiles are added in whatever order the
// tiles finish: its bits may differ from run to run, within the CSR reference's tolerance.
// Up to stop 35 the auxiliary array: a calibrator kernel followed each row through the tiles'
// kept sums and wrote it once, in an order fixed by the format (see segment_sink for its cost).
#include <cuda_runtime.h>

#include <string>

#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/scale_y.cuh"
#include "kernels/gpu/search.cuh"
#include "kernels/gpu/spmv_csr5.hpp"

namespace spconv::gpu {
namespace {

constexpr int block_threads = 256;  // a multiple of the warp
constexpr int warp_size = 32;
// warp_per_tile runs 48 warps per SM at 40 registers (__launch_bounds__), and its lanes issue
// the loads of `batch` entries together: 3, or 2 in staged tiles, where 3 would spill at 40
// registers. H200, double, replicated set (stop 34, device call 2, one call): batches of 2 as
// the compiler chose (40 registers; 48 and 5 blocks per SM where staged) 1.204x cuSPARSE in
// geometric mean; held to 6 blocks, 1.210x (staged: luxembourg 1.25x -> 1.30x, memplus_rhs1
// 1.62x -> 1.69x); batches of 3 at 6 blocks 1.219x (stencil 1.274x -> 1.323x; staged tiles
// spilling, luxembourg 1.18x); at 5 blocks 1.190x; batches of 4: 0.914x at 6 blocks, 1.167x
// at 5. Before (H100): batches of 2 1.025x, 1 (no batching) 0.945x, 3 at 56 registers
// 1.011x, 4 at 48 registers 0.99x.
constexpr int tile_sm_warps = 48;
template <bool Stage>
constexpr int batch = Stage ? 2 : 3;

// Warps in a block of warp_per_tile: a block's tiles are consecutive and share its SM's L1, so
// larger blocks put fewer, longer runs of tiles on an SM at once. Where columns are random,
// the gathers of x then hit L1 more often and move fewer sectors through L2, which bounds
// them. Nsight Compute, ca-AstroPh replicated (stop 34, device call 3): L2 at 96% of its peak
// throughput with 8-warp blocks and L1 hitting 17% of the sectors; 16-warp blocks, 30%, 113M
// -> 96M L2 sectors read, 636 -> 531 us. 24-warp blocks against 8 on the replicated set
// (H200, double, device call 5, both in one call): ca-AstroPh (sigma 21) 0.94x -> 1.30x
// cuSPARSE; tiles of sigma 30 and 32 (Groebner_id2003_aug, bcsstk13, bcsstk33, fidapex6,
// n1024-l1, sparse-images-1024_subset) +0.5% to -2.5%, the stencil (sigma 26) -2.2%; tiles of
// sigma 16 -1% to -5% (bayer10, hangGlider_2, memplus, rajat01, test_FW_2003 3-5%; not
// profiled); 1.233x in geometric mean either way, but no matrix below 1.07x. In call 3, tiles
// of sigma 8 lost up to 8%, so they keep blocks of 8. Hence the larger blocks only above sigma
// 16: 1.233x -> 1.247x and 1.248x (83.4% -> 84.3% and 84.7% of the copy bandwidth; bayer10,
// memplus, rajat01, test_FW_2003 +4-5%, no matrix moving down by more than 0.5%), stencil
// 1.302x -> 1.296x (its sigma, 26, takes 24-warp blocks either way; stop 35 device call 1,
// both rules twice in one call).
constexpr int tile_block_warps(int sigma) { return sigma > 16 ? 24 : 8; }

// What the kernels read of the format, by value.
struct view {
  std::int64_t rows, nnz, T, complete;
  int omega, sigma, words, y_bits, flag_pos;
  const std::int32_t* row_ptr;
  const std::int32_t* col_idx;
  const std::uint32_t* tile_ptr;
  const std::uint32_t* tile_desc;
  const std::uint32_t* offset_ptr;
  const std::uint32_t* offsets;
};

// beta == 0 writes y without reading it (BLAS semantics).
template <class V>
__device__ __forceinline__ void finish(V* y, std::int64_t r, V alpha, V sum, V beta) {
  y[r] = beta == V(0) ? alpha * sum : alpha * sum + beta * y[r];
}

// Bits [pos, pos + width) (width <= 64) of a descriptor bit string held in registers as
// lo (words 0-1) and hi (word 2).
__device__ __forceinline__ std::uint64_t field(std::uint64_t lo, std::uint32_t hi, int pos, int width) {
  std::uint64_t v = pos < 64 ? lo >> pos : std::uint64_t{hi} >> (pos - 64);
  if (pos < 64 && pos + width > 64) v |= std::uint64_t{hi} << (64 - pos);
  return width == 64 ? v : v & ((std::uint64_t{1} << width) - 1);
}

// The same from global memory, words `stride` apart (the thread-per-tile kernel).
__device__ std::uint64_t get_bits(const std::uint32_t* lane, std::int64_t stride, int pos, int width) {
  std::uint64_t v = 0;
  for (int got = 0; got < width;) {
    const int p = pos + got, bit = p % 32, take = min(32 - bit, width - got);
    v |= ((std::uint64_t{lane[(p / 32) * stride]} >> bit) & ((std::uint64_t{1} << take) - 1)) << got;
    got += take;
  }
  return v;
}

// Segment s of tile t: the first and the last (their rows may be shared with other tiles) are
// added to y atomically, the row pass having set their rows to beta*y (rows_outside_tiles);
// any other segment is a whole row, written to y, or, with a stage (warp_per_tile for short
// rows), to stage[s] for the warp to write out together. The thesis's calibrator (sec. 8.5.1)
// instead kept the first and last sums of every tile for a third kernel to carry: 6-37 us of
// each SpMV on the replicated set, 7% of add32's and bcspwr10's (Nsight Compute, H200, stop
// 35 device call 3).
template <class V>
struct segment_sink {
  std::int64_t row0;
  std::uint32_t last;
  const std::uint32_t* empty_offset;  // null unless the tile spans empty rows
  V* y;
  V alpha, beta;
  V* stage = nullptr;

  __device__ std::int64_t row_of(std::uint32_t s) const { return row0 + (empty_offset ? empty_offset[s] : s); }
  // A segment that is a whole row: staged, or written.
  __device__ void write(std::uint32_t s, V sum) const {
    if (stage) stage[s] = sum;
    else finish(y, row_of(s), alpha, sum, beta);
  }
  __device__ void emit(std::uint32_t s, V sum) const {
    if (s == 0 || s == last) atomicAdd(y + row_of(s), alpha * sum);
    else write(s, sum);
  }
  // A segment that ends inside a lane's entries: never the last, which ends with the tile, and
  // the first is row0. For the staged kernel only: emit there spilled 20 bytes at 40 registers,
  // this 0, while the unstaged kernel spilled 32 bytes with this and 0 with emit (ptxas).
  __device__ void emit_inside(std::uint32_t s, V sum) const {
    if (s == 0) atomicAdd(y + row0, alpha * sum);
    else write(s, sum);
  }
};

template <class V>
__device__ segment_sink<V> sink_of(const view& g, std::int64_t t, std::uint32_t segments, V* y, V alpha, V beta) {
  const std::uint32_t tp = g.tile_ptr[t];
  return {.row0 = tp & csr5_row_mask,
          .last = segments - 1,
          .empty_offset = (tp & csr5_empty_rows_bit) ? g.offsets + g.offset_ptr[t] : nullptr,
          .y = y,
          .alpha = alpha,
          .beta = beta};
}

// y[r] = alpha * (row r's entries from `from` on) . x + beta * y[r].
template <class V>
__device__ __forceinline__ void write_row_from(const view& g, std::int64_t r, std::int64_t from, const V* val,
                                               V alpha, const V* x, V beta, V* y) {
  V sum = 0;
  for (std::int64_t k = from, end = g.row_ptr[r + 1]; k < end; ++k) sum += val[k] * x[g.col_idx[k]];
  finish(y, r, alpha, sum, beta);
}

// Empty rows (they own no segment) and the rows starting in the incomplete tile, which holds
// fewer than omega * sigma entries in CSR order (sec. 8.5.1). Empty rows lie only before tile
// 0's first row, in the incomplete tile, and, in a tile whose tile_ptr has the empty-rows bit,
// between its first row and the next tile's (sec. 6.3.3): only those ranges of row_ptr are
// read, not all of it (a thread per row reading row_ptr throughout cost memplus_rhs1, rows of
// one entry, an eighth of its time).
//
// A row is written here when it is empty or starts in the incomplete tile; a row starting
// before `tail` and ending after it is set up with the rows of the tiles' first and last
// segments (below).
template <class V>
__device__ __forceinline__ void row_outside_tiles(const view& g, std::int64_t r, const V* val, V alpha, const V* x,
                                                  V beta, V* y) {
  const std::int64_t rb = g.row_ptr[r];
  if (rb != g.row_ptr[r + 1] && rb < g.complete * g.T) return;
  write_row_from(g, r, rb, val, alpha, x, beta, y);
}

// A lane per complete tile finds its range of possibly empty rows; the warp then walks its 32
// tiles' ranges laid end to end, a row per lane, so that a tile spanning 10^5 empty rows takes
// 32 lanes, not one, and a step's rows may come from several tiles (a step per tile would chain
// as many memory latencies). The incomplete tile's rows, from the row of its first entry, take
// a thread each across the whole grid: each sums its row alone, so they must not queue on one
// warp (on the small matrices that cost up to 13 us).
template <class V>
__global__ void rows_outside_tiles(view g, std::int64_t tiles, const V* __restrict__ val, V alpha,
                                   const V* __restrict__ x, V beta, V* y) {
  const int lane = static_cast<int>(threadIdx.x % warp_size);
  if (g.complete < tiles)
    for (std::int64_t r = (g.tile_ptr[g.complete] & csr5_row_mask) + first_index(); r < g.rows; r += grid_stride())
      row_outside_tiles(g, r, val, alpha, x, beta, y);
  for (std::int64_t t0 = first_index() / warp_size * warp_size; t0 < tiles; t0 += grid_stride()) {
    const std::int64_t t = t0 + lane;
    long long lo = 0, hi = 0;
    std::uint32_t tp = 0;
    std::int64_t r0 = 0, r1 = 0;  // the rows of tile t's first entry and of tile t + 1's
    if (t < tiles) {
      tp = g.tile_ptr[t];
      r0 = tp & csr5_row_mask;
      r1 = g.tile_ptr[t + 1] & csr5_row_mask;
      lo = t == 0 ? 0 : r0 + 1;
      hi = t < g.complete && (tp & csr5_empty_rows_bit) ? r1 : t == 0 ? r0 : 0;
    }
    warp_for_each_in_ranges(lo, hi > lo ? hi - lo : 0,
                            [&](long long r) { row_outside_tiles(g, r, val, alpha, x, beta, y); });
    // The rows of complete tile t's first and last segments, which the tile kernel adds to
    // atomically: each starts as beta*y, plus its entries in the incomplete tile if it reaches
    // that far, set here before the tile kernel runs, by the one tile where the row begins (its
    // first entry's tile; a row that begins in an earlier tile is set there).
    if (t < g.complete) {
      const std::int64_t start = t * g.T, boundary = start + g.T, tail = g.complete * g.T;
      const auto set_shared = [&](std::int64_t r) { write_row_from(g, r, tail, val, alpha, x, beta, y); };
      if (g.row_ptr[r0] == start) set_shared(r0);
      // The row of the tile's last entry: r1 where that row began before the boundary, else the
      // last row before r1 that holds an entry (r1 - 1 unless the tile spans empty rows).
      std::int64_t last = r1;
      if (boundary == g.nnz || g.row_ptr[r1] == boundary)
        last = (tp & csr5_empty_rows_bit) ? upper_bound(g.row_ptr, r0, r1, boundary - 1) - 1 : r1 - 1;
      if (last != r0) set_shared(last);
    }
  }
}

// Where rows average fewer than sigma / 2 entries, each lane closes several rows, and lane i's
// rows lie about sigma / (mean row length) rows from lane i + 1's: a warp's direct stores to y
// spread over several times the sectors they fill. Such tiles stage their rows' sums in shared
// memory and the warp writes them to y as consecutive rows. Measured on the H100 (double,
// replicated to 100M entries, same call): memplus_rhs1 (one entry a row, sigma 4) 1.46 ms ->
// 1.02 ms; staging every tile of sigma <= 8 also slowed the matrices of about a row per lane
// by 5-7% (add32, bayer10, lap3D_7pt_n20, memplus, rajat01), whose direct stores are already
// consecutive rows. stage_sigma bounds the stage (32 * 8 values per warp); the automatic
// sigma for rows of under 5 entries is 8 (resolve_csr5_params), which staging makes pay:
// memplus_rhs1 at sigma 8 ran 1.64x cuSPARSE, luxembourg 1.31x (at sigma 4: 1.33x, 1.12x).
constexpr int stage_sigma = 8;

// omega = 32: a warp per tile (Algorithm 32).
template <class V, bool Stage, int Warps>
__global__ void __launch_bounds__(Warps * 32, tile_sm_warps / Warps)
    warp_per_tile(view g, const V* __restrict__ val, V alpha, const V* __restrict__ x, V beta, V* y) {
  constexpr int stage_size = Stage ? warp_size * stage_sigma : 1;
  __shared__ V stages[Warps][stage_size];
  const int lane = static_cast<int>(threadIdx.x % warp_size);
  const std::int64_t warps = grid_stride() / warp_size;
  for (std::int64_t t = first_index() / warp_size; t < g.complete; t += warps) {
    // The lane's descriptor words (at most 3 with omega = 32: 11 + 5 + 64 bits), coalesced.
    const std::uint32_t* d = g.tile_desc + t * g.words * warp_size + lane;
    const std::uint64_t lo = d[0] | (g.words > 1 ? std::uint64_t{d[warp_size]} << 32 : 0);
    const std::uint32_t hi = g.words > 2 ? d[2 * warp_size] : 0;
    const std::uint64_t flags = field(lo, hi, g.flag_pos, g.sigma);
    std::uint32_t seg = static_cast<std::uint32_t>(field(lo, hi, 0, g.y_bits));  // y_offset
    const std::uint32_t segments = __shfl_sync(0xffffffffu, seg + __popcll(flags), warp_size - 1);
    segment_sink<V> out = sink_of(g, t, segments, y, alpha, beta);
    if constexpr (Stage) out.stage = stages[threadIdx.x / warp_size];

    // Algorithm 32 lines 5-21, over the lane's sigma entries in batches: a batch's column and
    // value loads, then its x loads, are all issued before its first product is added, so a
    // lane waits one memory latency per batch rather than two per entry (the loop's stores
    // and flag tests keep the compiler from overlapping iterations by itself).
    V sum = 0, red = 0;
    bool started = false;
    const std::int64_t base = t * g.T + lane;
    for (int j0 = 0; j0 < g.sigma; j0 += batch<Stage>) {
      std::int32_t c[batch<Stage>];
      V v[batch<Stage>], xv[batch<Stage>];
#pragma unroll
      for (int b = 0; b < batch<Stage>; ++b)
        if (j0 + b < g.sigma) {
          const std::int64_t k = base + static_cast<std::int64_t>(j0 + b) * warp_size;
          c[b] = g.col_idx[k];
          v[b] = val[k];
        }
#pragma unroll
      for (int b = 0; b < batch<Stage>; ++b)
        if (j0 + b < g.sigma) xv[b] = x[c[b]];
#pragma unroll
      for (int b = 0; b < batch<Stage>; ++b) {
        const int j = j0 + b;
        if (j >= g.sigma) break;
        if ((flags >> j) & 1) {
          if (started) {  // a green segment ends
            if constexpr (Stage) out.emit_inside(seg++, sum);
            else out.emit(seg++, sum);
          }
          else red = sum;                     // the red sub-segment ends (lane 0 starts sealed)
          started = true;
          sum = 0;
        }
        sum += v[b] * xv[b];
      }
    }
    const V blue = started ? sum : V(0);
    if (!started) red = sum;  // no flag: red throughout

    // tmp[i] = red of lane i + 1 (line 12), 0 past the last lane; then the segmented suffix
    // sum over tmp, a segment ending before the next lane with a flag.
    V tmp = __shfl_down_sync(0xffffffffu, red, 1);
    if (lane == warp_size - 1) tmp = 0;
    const unsigned heads = __ballot_sync(0xffffffffu, flags != 0);
    const unsigned after = lane == warp_size - 1 ? 0u : heads & (~0u << (lane + 1));
    const int end = after ? __ffs(static_cast<int>(after)) - 2 : warp_size - 1;
    for (int d2 = 1; d2 < warp_size; d2 *= 2) {
      const V other = __shfl_down_sync(0xffffffffu, tmp, d2);
      if (lane + d2 <= end) tmp += other;
    }
    if (flags) out.emit(seg, blue + tmp);  // lines 23-26
    if constexpr (Stage) {
      // segments is the same in every lane, so the whole warp reaches both barriers.
      __syncwarp();
      for (std::uint32_t s = 1 + lane; s + 1 < segments; s += warp_size)
        finish(y, out.row_of(s), alpha, out.stage[s], beta);
      __syncwarp();  // the next tile's sums overwrite the stage
    }
  }
}

// Any omega: a thread per tile. Lane i's entries are the CSR entries i*sigma .. i*sigma +
// sigma - 1 of the tile, so walking the lanes in order is walking the tile in CSR order, and
// every flag after the first closes a segment.
template <class V>
__global__ void thread_per_tile(view g, const V* __restrict__ val, V alpha, const V* __restrict__ x, V beta,
                                V* y) {
  for (std::int64_t t = first_index(); t < g.complete; t += grid_stride()) {
    const std::uint32_t* desc = g.tile_desc + t * g.words * g.omega;
    const std::uint32_t* last_lane = desc + g.omega - 1;
    const std::uint32_t segments = static_cast<std::uint32_t>(
        get_bits(last_lane, g.omega, 0, g.y_bits) + __popcll(get_bits(last_lane, g.omega, g.flag_pos, g.sigma)));
    const segment_sink<V> out = sink_of(g, t, segments, y, alpha, beta);
    V sum = 0;
    std::uint32_t seg = 0;
    for (int i = 0; i < g.omega; ++i) {
      const std::uint64_t flags = get_bits(desc + i, g.omega, g.flag_pos, g.sigma);
      for (int j = 0; j < g.sigma; ++j) {
        if (((flags >> j) & 1) && (i > 0 || j > 0)) {
          out.emit(seg++, sum);
          sum = 0;
        }
        const std::int64_t k = t * g.T + static_cast<std::int64_t>(j) * g.omega + i;
        sum += val[k] * x[g.col_idx[k]];
      }
    }
    out.emit(seg, sum);
  }
}

}  // namespace

template <class V>
void spmv(const csr5<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  if (a.row_ptr.size() != static_cast<std::size_t>(a.rows) + 1 || a.params.omega < 1 ||
      a.params.omega > csr5_max_omega || a.params.sigma < 1 || a.params.sigma > csr5_max_sigma)
    fail(errc::usage, "gpu::spmv: csr5 row_ptr has " + std::to_string(a.row_ptr.size()) + " elements for " +
                          std::to_string(a.rows) + " rows, omega " + std::to_string(a.params.omega) + ", sigma " +
                          std::to_string(a.params.sigma) + " (expected rows + 1 and [1, 64])");
  if (a.rows == 0) return;
  const csr5_layout L(a.params.omega, a.params.sigma);
  const view g{.rows = a.rows,
               .nnz = a.nnz(),
               .T = L.tile_size(),
               .complete = a.nnz() / L.tile_size(),
               .omega = L.omega,
               .sigma = L.sigma,
               .words = L.words,
               .y_bits = L.y_offset_bits,
               .flag_pos = L.bit_flag_pos(),
               .row_ptr = a.row_ptr.data(),
               .col_idx = a.col_idx.data(),
               .tile_ptr = a.tile_ptr.data(),
               .tile_desc = a.tile_desc.data(),
               .offset_ptr = a.tile_desc_offset_ptr.data(),
               .offsets = a.tile_desc_offset.data()};
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  const std::int64_t tiles = static_cast<std::int64_t>(a.tile_ptr.size()) - 1;
  if (tiles <= 0) {  // no entries: every row is empty
    scale_y<V><<<launch_blocks(g.rows, block_threads), block_threads, 0, s>>>(g.rows, beta, y);
    check_cuda(cudaGetLastError(), "gpu::spmv: launching the csr5 y scaling");
    return;
  }
  rows_outside_tiles<V><<<launch_blocks(tiles, block_threads), block_threads, 0, s>>>(
      g, tiles, a.values.data(), alpha, x, beta, y);
  check_cuda(cudaGetLastError(), "gpu::spmv: launching the csr5 row pass");
  if (g.complete == 0) return;
  if (g.omega == warp_size) {
    const auto launch = [&](auto kernel, int warps) {
      kernel<<<launch_blocks(g.complete, warps), warps * warp_size, 0, s>>>(g, a.values.data(), alpha, x, beta, y);
    };
    if (g.sigma <= stage_sigma && 2 * g.nnz < static_cast<std::int64_t>(g.sigma) * g.rows)
      launch(warp_per_tile<V, true, 8>, 8);
    else if (tile_block_warps(g.sigma) == 24)
      launch(warp_per_tile<V, false, 24>, 24);
    else
      launch(warp_per_tile<V, false, 8>, 8);
    check_cuda(cudaGetLastError(), "gpu::spmv: launching the csr5 warp-per-tile kernel");
  } else {
    thread_per_tile<V><<<launch_blocks(g.complete, block_threads), block_threads, 0, s>>>(
        g, a.values.data(), alpha, x, beta, y);
    check_cuda(cudaGetLastError(), "gpu::spmv: launching the csr5 thread-per-tile kernel");
  }
}

#define SPCONV_INST(V) \
  template void spmv<V>(const csr5<V, std::int32_t, device>&, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
