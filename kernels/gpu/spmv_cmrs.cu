// CMRS SpMV on the GPU (shared/papers/cmrs-koza.txt sec. 4, Algorithm 1; appendix 9, the
// basic kernel; appendix 10, the modified kernel for the sec. 6.7 layout), and a tile kernel
// (tile_kernel, below) for the basic layout in CSR order; gpu::cmrs_spmv_kernel chooses.
// One warp per strip (the vector kernel of Bell and Garland with rows replaced by strips,
// sec. 4): lane l reads slots strip_start + l, + 32, ... (coalesced), decodes the column word
// (row in strip = low 4 bits, column = the rest, shifted unsigned: spconv's words are uint32)
// and adds value * x[column] into the buffer cell [l % M][row], M = params.modulo. The
// buffer's columns are then added by the appendix's halving tree (buf[l][r] += buf[l +
// step][r] for step = M/2 .. 1) and row strip * height + r gets buf[0][r].
// M = 32 (register_kernel, pipelined_kernel) is Algorithm 1's buf[lane][r]: appendix 9 keeps it in shared
// memory, a 32 x height buffer per warp, which costs per strip a clear of 32 * height cells,
// a shared read-modify-write per slot and a tree of 31 * height shared additions with a
// __syncwarp() between its steps. Each cell is only ever touched by its own lane until the
// tree, so here lane l holds its cells buf[l][0 .. height) in registers: the same cells,
// receiving the same additions in the same order, so the arithmetic is the paper's. The
// tree then runs on shuffles, transposed (transpose_sum): at each step a lane keeps half of
// its remaining rows and its partner the other half, so a strip takes P - 1 + log2(32 / P)
// shuffle-and-add steps (P = height rounded up to a power of two: 9 for height 8, the count
// sec. 4 gives for its reduction of 32 x 8 partial sums), with the tree's pairs of operands.
// Strips of at most two slots a lane on average (gpu::cmrs_short_strips) take the same cells
// and tree in pipelined_kernel, which overlaps a warp's successive strips' memory latencies.
// M < 32 (strip_kernel) is appendix 10's buf[lane % M][r], M x height in shared memory,
// race-free because the sec. 6.7 layout never puts two slots of one row and one lane % M into
// the same 32-slot chunk. Its cells gather slots of several lanes in chunk order, which
// per-lane registers would not reproduce, so it keeps the shared buffer: the tree adds flat
// cells f += f + step * height, and lane r < height writes row strip * height + r.
// height and M are template parameters (the paper's HEIGHT and MODULO): the buffers are
// static (registers or shared arrays) and the reductions unroll; every valid pair is
// instantiated (height 1..16 with M = 32, in both basic kernels; height * M >= 32 with M < 32)
// and picked once per call.
// Arithmetic uses the round-to-nearest intrinsics, which are never contracted to FMA, so each
// cell sees the same additions in the same order as cpu::spmv(const cmrs&) and the results
// are the same bits.
// Synchronisation (M < 32): __syncwarp() between the phases (clear, accumulate, each
// reduction step, the next strip's clear after the row sums are read) orders the lanes'
// shared-memory accesses under independent thread scheduling (the appendix's caveat about
// implicit warp synchronisation), and, as different lanes update one cell in successive
// chunks, also after every chunk. The shuffles of M = 32 synchronise the full warp
// themselves; every loop that leads to one has warp-uniform bounds.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>

#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/coo_accumulate.cuh"
#include "kernels/gpu/resident_blocks.cuh"
#include "kernels/gpu/scale_y.cuh"
#include "kernels/gpu/search.cuh"
#include "kernels/gpu/slot_batch.cuh"
#include "kernels/gpu/spmv_cmrs.hpp"
#include "kernels/gpu/tile_rows.cuh"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int warp_size = 32;
constexpr int block_threads = 256;  // 8 warps (M < 32: 8 buffers, at most 8 * 16 * 16 doubles = 16 KiB)
constexpr int block_warps = block_threads / warp_size;

__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }

// Every shuffle involves all 32 lanes (a lane that skipped one would hang the warp).
constexpr unsigned full_mask = 0xffffffffu;

// Smallest power of two >= h: the register rows a lane reduces (rows h .. P - 1 stay +0.0).
__host__ __device__ constexpr int pow2_at_least(int h) { return h <= 1 ? 1 : 2 * pow2_at_least((h + 1) / 2); }

// The basic kernel's halving tree (buf[l][r] += buf[l + S][r], S = 16, 8, 4, 2, 1) on
// registers: v[r] is lane l's cell buf[l][r], of which the first N are still live (N = P on
// entry). At step S lane l pairs with lane l ^ S, which is the tree's pair (l, l + S) in
// each group of 2S lanes, and both lanes hold the same N rows. Rather than both adding all
// N (N shuffles), the lane with bit S clear keeps rows [0, N/2) of them and its partner
// rows [N/2, N), each sends the half it gives up, and each adds its kept cell to the
// partner's cell of the same row: N/2 shuffles per step, a transpose of the row sums over
// the lanes. The kept rows move to v[0 .. N/2), so every register index is a compile-time
// constant (a runtime index would put v in local memory). After log2(P) such steps one row
// is left per lane, and the remaining steps are the plain butterfly. Lane l then holds the
// sum of row l / (32 / P): its bits S = 16, 8, ... chose the upper half at each transposing
// step, i.e. they are the row's bits from P/2 down. Each addition has the tree's two
// operands (the lane with bit S set adds them swapped; IEEE addition is commutative), so
// the sum is cpu::spmv's buf[0][r] bit for bit.
template <int N, int S, int P, class V>
__device__ __forceinline__ V transpose_sum(V (&v)[P], int lane) {
  if constexpr (N == 1) {
#pragma unroll
    for (int step = S; step >= 1; step /= 2) v[0] = add(v[0], __shfl_xor_sync(full_mask, v[0], step));
    return v[0];
  } else {
    const bool upper = (lane & S) != 0;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const V give = upper ? v[i] : v[i + N / 2];
      const V keep = upper ? v[i + N / 2] : v[i];
      v[i] = add(keep, __shfl_xor_sync(full_mask, give, S));
    }
    return transpose_sum<N / 2, S / 2>(v, lane);
  }
}

// Basic layout (M = 32): lane l's cells buf[l][0 .. H) are registers, sum[r]. A slot adds
// into the cell of its row through H predicated additions (a runtime index into sum would
// put it in local memory), so each cell receives the same additions in the same order as in
// the shared buffer; transpose_sum then adds the cells in the tree's pairs.
template <int H, int P, class V>
__device__ __forceinline__ void add_slot(V (&sum)[P], std::uint32_t w, V product) {
  const int r = static_cast<int>(w & (cmrs_max_height - 1));
#pragma unroll
  for (int k = 0; k < H; ++k)
    if (r == k) sum[k] = add(sum[k], product);
}

// Adds the lane's slots s, s + 32, ... below e into its cells, in batches: a batch's
// column-word and value loads, then its x loads, are all issued before its first addition, so
// a lane waits one memory latency per batch rather than two per slot; the additions stay in
// slot order. Batches of 4 while they fill, then one of 2, then 1: measured on the H100
// (double), 4 alone ran long strips up to 1.9x faster than 2 alone (the matrices as they are,
// where few warps each walk a long strip: rajat01, Groebner, hangGlider_2) but strips of 1-3
// slots per lane 10-15% slower (bayer10, lap3D_7pt_n20 replicated), which take the 2 and 1
// steps without the 4 loop's overhead.
template <int H, int P, class V>
__device__ __forceinline__ void add_slots(V (&sum)[P], std::int64_t s, std::int64_t e,
                                          const std::uint32_t* __restrict__ col_row, const V* __restrict__ val,
                                          const V* __restrict__ x) {
  const auto batch = [&](auto n) {
    constexpr int N = decltype(n)::value;
    std::uint32_t w[N];
    V v[N], xv[N];
    const auto column = [](std::uint32_t word, const V* xs) { return xs[word >> cmrs_row_bits]; };
    load_slots(col_row, val, s, warp_size, x, column, w, v, xv);
#pragma unroll
    for (int q = 0; q < N; ++q) add_slot<H>(sum, w[q], mul(v[q], xv[q]));
    s += N * warp_size;
  };
  while (s + 3 * warp_size < e) batch(std::integral_constant<int, 4>{});
  if (s + warp_size < e) batch(std::integral_constant<int, 2>{});
  if (s < e) batch(std::integral_constant<int, 1>{});
}

// Adds up strip j's cells over the warp (transpose_sum) and writes its rows.
template <int H, int P, class V>
__device__ __forceinline__ void write_strip(V (&sum)[P], std::int64_t j, int lane, std::int64_t rows, V alpha,
                                            V beta, V* y) {
  constexpr int lanes_per_row = warp_size / P;
  const int row_in_strip = lane / lanes_per_row;  // the row transpose_sum leaves in this lane
  const V row_sum = transpose_sum<P, warp_size / 2>(sum, lane);
  const std::int64_t row = j * H + row_in_strip;
  if (lane % lanes_per_row == 0 && row_in_strip < H && row < rows)
    // beta == 0 writes y without reading it (BLAS semantics: y may hold NaN).
    y[row] = beta == V(0) ? mul(alpha, row_sum) : add(mul(alpha, row_sum), mul(beta, y[row]));
}

// A strip's slot b + lane (+ 32): b <= 2^31 - 1 (strip_ptr is I), so the sum stays below 2^32
// in unsigned 32-bit arithmetic, where an int sum overflows for a strip starting within 63
// slots of 2^31 - 1. The same instructions as the int sum (the widening zero-extends instead).
__device__ __forceinline__ std::uint32_t slot_of(I b, int lane) {
  return static_cast<std::uint32_t>(b) + static_cast<std::uint32_t>(lane);
}

// The calling thread's lane, its warp's index in the grid and the grid's warps: the basic
// layout's kernels walk strips first, first + warps, ...
struct warp_walk {
  int lane;
  std::int64_t first, warps;
};
__device__ __forceinline__ warp_walk grid_warps() {
  return {static_cast<int>(threadIdx.x % warp_size),
          (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size,
          static_cast<std::int64_t>(gridDim.x) * block_warps};
}

// A warp per strip, strips j, j + warps, ...
template <class V, int H>
__global__ void __launch_bounds__(block_threads)
    register_kernel(std::int64_t rows, std::int64_t strips, const I* __restrict__ strip_ptr,
                    const std::uint32_t* __restrict__ col_row, const V* __restrict__ val, V alpha,
                    const V* __restrict__ x, V beta, V* y) {
  constexpr int P = pow2_at_least(H);
  const auto [lane, first, warps] = grid_warps();
  std::int64_t j = first;
  I b = 0, e = 0;
  if (j < strips) b = strip_ptr[j], e = strip_ptr[j + 1];
  for (; j < strips; j += warps) {
    V sum[P] = {};  // +0.0, like the cleared buffer
    add_slots<H>(sum, slot_of(b, lane), e, col_row, val, x);
    // The next strip's bounds are loaded while this strip is reduced.
    if (j + warps < strips) b = strip_ptr[j + warps], e = strip_ptr[j + warps + 1];
    write_strip<H>(sum, j, lane, rows, alpha, beta, y);
  }
}

// Short strips (cmrs_short_strips): one resident wave of warps, each walking strips j, j +
// warps, ... as a pipeline. While strip j is added up, the bounds of strip j + 2 warps and the
// first slot of each lane in strip j + warps (its head: a short strip's only slot in most
// lanes) are already loading, so a warp waits for little more than x per strip, where the
// register kernel's warp waits for a strip's bounds, then its slots, then x. Each cell's
// additions keep the slot order (the head is the lane's first slot), so the result is the
// register kernel's.
template <class V, int H>
__global__ void __launch_bounds__(block_threads)
    pipelined_kernel(std::int64_t rows, std::int64_t strips, const I* __restrict__ strip_ptr,
                     const std::uint32_t* __restrict__ col_row, const V* __restrict__ val, V alpha,
                     const V* __restrict__ x, V beta, V* y) {
  constexpr int P = pow2_at_least(H);
  const auto [lane, first, warps] = grid_warps();
  const auto bounds = [&](std::int64_t k, I& kb, I& ke) {
    kb = ke = 0;
    if (k < strips) kb = strip_ptr[k], ke = strip_ptr[k + 1];
  };
  const auto head = [&](I kb, I ke, std::uint32_t& w, V& v) {
    w = 0, v = V(0);
    const std::uint32_t s = slot_of(kb, lane);
    if (s < static_cast<std::uint32_t>(ke)) w = col_row[s], v = val[s];
  };
  std::int64_t j = first;
  I b, e, nb, ne;
  bounds(j, b, e);
  bounds(j + warps, nb, ne);
  std::uint32_t hw;
  V hv;
  head(b, e, hw, hv);
  for (; j < strips; j += warps) {
    const bool has_head = slot_of(b, lane) < static_cast<std::uint32_t>(e);
    const V hx = has_head ? x[hw >> cmrs_row_bits] : V(0);
    std::uint32_t next_w;
    V next_v;
    head(nb, ne, next_w, next_v);
    I nnb, nne;
    bounds(j + 2 * warps, nnb, nne);
    V sum[P] = {};  // +0.0, like the cleared buffer
    if (has_head) add_slot<H>(sum, hw, mul(hv, hx));
    add_slots<H>(sum, slot_of(b, lane) + warp_size, e, col_row, val, x);
    write_strip<H>(sum, j, lane, rows, alpha, beta, y);
    b = nb, e = ne, nb = nnb, ne = nne, hw = next_w, hv = next_v;
  }
}

// Sec. 6.7 layout (M < 32): the shared buffer of appendix 10, whose cells gather the slots
// of several lanes (lane % M) in chunk order.
template <class V, int H, int M>
__global__ void __launch_bounds__(block_threads)
    strip_kernel(std::int64_t rows, std::int64_t strips, const I* __restrict__ strip_ptr,
                 const std::uint32_t* __restrict__ col_row, const V* __restrict__ val, V alpha,
                 const V* __restrict__ x, V beta, V* y) {
  __shared__ V buffers[block_warps][M * H];
  const int lane = static_cast<int>(threadIdx.x % warp_size);
  V* const buf = buffers[threadIdx.x / warp_size];
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * block_warps;
  for (std::int64_t j = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size; j < strips;
       j += warps) {
    __syncwarp();
    for (int f = lane; f < M * H; f += warp_size) buf[f] = V(0);
    __syncwarp();
    const std::int64_t b = strip_ptr[j], e = strip_ptr[j + 1];
    // Whole chunks of 32 slots (a valid sec. 6.7 strip has no partial chunk; the bound
    // check keeps every lane in the loop, so the full-mask __syncwarp stays legal).
    for (std::int64_t chunk = b; chunk < e; chunk += warp_size) {
      const std::int64_t s = chunk + lane;
      if (s < e) {
        const std::uint32_t w = col_row[s];
        V* const cell = buf + (lane % M) * H + static_cast<int>(w & (cmrs_max_height - 1));
        *cell = add(*cell, mul(val[s], x[w >> cmrs_row_bits]));
      }
      __syncwarp();
    }
    __syncwarp();
#pragma unroll
    for (int step = M / 2; step >= 1; step /= 2) {
      for (int f = lane; f < step * H; f += warp_size) buf[f] = add(buf[f], buf[f + step * H]);
      __syncwarp();
    }
    const std::int64_t row = j * H + lane;
    if (lane < H && row < rows) {
      const V sum = buf[lane];
      // beta == 0 writes y without reading it (BLAS semantics: y may hold NaN).
      y[row] = beta == V(0) ? mul(alpha, sum) : add(mul(alpha, sum), mul(beta, y[row]));
    }
  }
}

// The tile kernel (cmrs_kernel::tiles; the basic layout in CSR order, cmrs_tile_layout): a
// warp per tile of m.tile_items consecutive slots (tile_rows.cuh), whatever strips they belong
// to, so every warp does the same work however long the strips and rows are (HOLA's strict
// splitting, hola-spmv-steinberger.txt sec. 3.1, on slots). A window of 128 slots at a time,
// 4 consecutive slots a lane read as 16-byte words, as the COO kernel reads its entries: in
// this layout a strip's slots are its rows' entries in CSR order (sec. 3), so the rows
// (strip * height + the word's row bits) do not decrease along the slots and a row's slots are
// consecutive. Each slot's strip is the number of strip ends at or before it, counted from the
// strip of the window's first slot: by three comparisons where at most 3 strips end in the
// window, else by marks in shared memory and a max-scan; rows are summed by warp_row_sums
// (coo_accumulate.cuh). A row that ends inside the window is complete when it began in it or
// continues the row left open by the window before (its sum so far joins the window's first
// product); the row of the window's last slot stays open. A complete row is written once, with
// beta*y, by the lane where it ends, and so are the empty rows between it and the next row with
// slots; in the strips split between tiles (see split_first and split_last) rows are added
// atomically and empty rows left as tile_rows scaled them. Tile 0 writes the empty rows before
// the first row with slots, the last tile those after the last.
// Measured (H100, double, replicated set, geometric mean against cuSPARSE; stop 22, device
// calls 1-8): 1.106x at stop 21's end (Nsight Compute: 516 warp instructions a 128-slot window
// on add32, whose strips of 38 slots mostly took the 32-ends-a-round binary search); 1.117x
// with the marks; 1.143x with the open row's sum in the first product, the empty rows behind a
// vote and beta == 0 at compile time; 1.162x (85.2% of copy bandwidth; 311 instructions a
// window) with the split-strip tests and bound checks out of whole windows; 1.171x (85.9%,
// call 8) with whole windows of aligned arrays on a code path of their own. Marks of a byte
// (one round of 32 strips at a time) ran 1.150x against 1.165x (call 5); staging every
// window's rows as the staged kernel does 1.062x against 1.107x (call 1).
constexpr int tile_lane_slots = detail::coo_per_lane;               // 4
constexpr int tile_window = warp_size * tile_lane_slots;           // slots per window
constexpr int tile_threads = 128;
constexpr int tile_warps = tile_threads / warp_size;

// 8 blocks of 4 warps a multiprocessor: 64 registers without spills. Without the bound the
// compiler took 80 (24 warps); 9 blocks (56 registers, 16 bytes spilled) ran 1.052x cuSPARSE
// against 1.074x (H100, double, replicated set, stop 21, device call 8), and for stop 22's
// kernel (no spills where beta == 0) 1.167x against 1.163x (device call 7), within the spread
// between calls, so the bound stays one for every instance. KeepY: beta != 0
// (beta == 0 does not read y), fixed at compile time so that no row write tests it.
template <class V, bool Staged, bool KeepY>
__global__ void __launch_bounds__(tile_threads, 8)
    tile_kernel(tile_split m, int h, const I* __restrict__ strip_ptr, const std::uint32_t* __restrict__ col_row,
                const V* __restrict__ val, const I* __restrict__ first_strip, bool aligned, V alpha,
                const V* __restrict__ x, V beta, V* y) {
  constexpr int E = tile_lane_slots;
  // Slot positions in 32 bits: slots < 2^31 (strip_ptr is int32), and a window past it < 2^32.
  using U = std::uint32_t;
  __shared__ __align__(16) U strip_marks[tile_warps][tile_window];
  const int lane = static_cast<int>(threadIdx.x % warp_size);
  U* const marks = strip_marks[threadIdx.x / warp_size];
  constexpr int stage = Staged ? tile_window : 1;
  __shared__ I stage_rows[tile_warps][stage];
  __shared__ V stage_sums[tile_warps][stage];
  I* const staged_rows = stage_rows[threadIdx.x / warp_size];
  V* const staged_sums = stage_sums[threadIdx.x / warp_size];
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * tile_warps + threadIdx.x / warp_size;
  if (t >= m.tiles) return;  // the whole warp
  const U b0 = static_cast<U>(t * m.tile_items), b1 = static_cast<U>(min(t * m.tile_items + m.tile_items, m.items));
  const bool last_tile = t + 1 == m.tiles;
  // The strips split between tiles that this tile meets (none: no such strip), whose rows
  // tile_rows scaled: its first strip when it began before b0 or runs past b1, and the next
  // tile's first (the strip holding slot b1, whose empty rows before its first row with slots
  // this tile may write) when it begins before b1 or runs past the next tile's end.
  const I f0 = first_strip[t], f1 = last_tile ? I(-1) : first_strip[t + 1];
  const auto at = [&](I s) { return static_cast<U>(strip_ptr[s]); };
  constexpr I none = -2;  // never a strip, nor the -1 of slots past b1 and of "no row"
  const I split_first = at(f0) < b0 || at(f0 + 1) > b1 ? f0 : none;
  const I split_last = f1 >= 0 && (at(f1) < b1 || at(f1 + 1) > b1 + m.tile_items) ? f1 : none;
  const auto split = [&](I s) { return s == split_first || s == split_last; };
  // Row `row` is complete: write it, or add it where its strip `s` is split.
  const auto write = [&](I row, V sum) { y[row] = KeepY ? alpha * sum + beta * y[row] : alpha * sum; };
  const auto finish = [&](I row, I s, V sum) {
    if (split(s)) atomicAdd(y + row, alpha * sum);
    else write(row, sum);
  };
  // The empty rows after row `from` (of strip sf) and before row `to` (of strip st), every
  // `step`-th from the `first`-th.
  const auto empty_rows = [&](I from, I sf, I to, I st, int first, int step) {
    for (std::int64_t g = std::int64_t{from} + 1 + first; g < to; g += step)
      if (!((g < (std::int64_t{sf} + 1) * h && split(sf)) || (g >= std::int64_t{st} * h && split(st))))
        y[g] = KeepY ? beta * y[g] : V(0);
  };
  // Runs of empty rows: a lane writes up to a warp's worth itself; longer ones (wide) wait
  // for the whole warp (wide_rows), which is rare enough to cost a vote per window only.
  const auto gap = [&](I from, I sf, I to, I st, bool& wide) {
    if (to - from - 1 > warp_size) wide = true;
    else if (to - from > 1) empty_rows(from, sf, to, st, 0, 1);
  };
  const auto wide_rows = [&](bool mine, I from, I sf, I to, I st) {
    for (unsigned w = __ballot_sync(full_mask, mine && to - from - 1 > warp_size); w != 0; w &= w - 1) {
      const int l = __ffs(static_cast<int>(w)) - 1;
      empty_rows(__shfl_sync(full_mask, from, l), __shfl_sync(full_mask, sf, l), __shfl_sync(full_mask, to, l),
                 __shfl_sync(full_mask, st, l), lane, warp_size);
    }
  };
  const U groups = static_cast<U>(m.groups);  // < 2^31, so base + 1 + lane fits a U
  const auto strip_end = [&](I base) {            // the end of strip base + lane
    const U j = static_cast<U>(base) + 1 + lane;
    return static_cast<U>(strip_ptr[min(j, groups)]);
  };

  I cur = f0;  // the strip of the window's first slot, or one before it
  // The row of the previous window's last slot (-1: none yet), its strip and its sum so far.
  I open_row = -1, open_strip = -1;
  V open_sum = V(0);
  // One window at w0; Whole: a whole window of 16-byte aligned arrays, read as 16-byte words
  // with no bound checks (a template parameter, so that its code holds no checks at all).
  const auto window = [&](U w0, auto whole_windows) {
    constexpr bool Whole = decltype(whole_windows)::value;
    const U e0 = w0 + lane * E;
    const bool whole = Whole || w0 + tile_window <= b1;  // the same in every lane
    std::uint32_t word[E];
    V v[E], xv[E];
#pragma unroll
    for (int k = 0; k < E; ++k) {
      word[k] = 0;
      v[k] = V(0);
    }
    // Evict-first in L2, leaving it to x: 1.160x -> 1.184x cuSPARSE on the replicated set
    // (H200; kernels/gpu/load_evict_first.cuh).
    detail::load_run<true>(col_row, e0, b1, Whole, word);
    detail::load_run<true>(val, e0, b1, Whole, v);
    const U own_end = strip_end(cur);
    // Slots past b1 read x[0] (their word is 0; x has a column, as there are slots): their
    // row is -1, whose sums never reach a row (warp_row_sums).
#pragma unroll
    for (int k = 0; k < E; ++k) xv[k] = x[word[k] >> cmrs_row_bits];
    // Each slot's strip: cur plus the number of strip ends at or before it. Where
    // at most 3 strips end inside the window (strips of more than ~40 slots), the first 3 ends
    // decide; otherwise they mark their positions in shared memory, 32 strips a round.
    I strip[E];
    const U last_slot = min(w0 + tile_window, b1) - 1;
    if (__popc(__ballot_sync(full_mask, own_end <= last_slot)) <= 3) {
      const U end0 = __shfl_sync(full_mask, own_end, 0), end1 = __shfl_sync(full_mask, own_end, 1),
              end2 = __shfl_sync(full_mask, own_end, 2);
#pragma unroll
      for (int k = 0; k < E; ++k) {  // branch-free
        const U slot = e0 + k;
        strip[k] = cur + static_cast<I>(end0 <= slot) + static_cast<I>(end1 <= slot) + static_cast<I>(end2 <= slot);
      }
    } else {
      // Otherwise each strip end inside the window marks its position with the number of ends
      // at or before it (the last of equal ends, i.e. of empty strips, marks it), 32 strips a
      // round, and a slot's count is the largest mark at or before it: a max-scan over the warp.
      reinterpret_cast<uint4*>(marks)[lane] = make_uint4(0, 0, 0, 0);
      U end = own_end;
      for (I round = 0;; round += warp_size) {
        __syncwarp();
        const U next = __shfl_down_sync(full_mask, end, 1);
        if (end <= last_slot && (lane == warp_size - 1 || next != end))
          marks[end - w0] = static_cast<U>(round + lane + 1);
        if (__shfl_sync(full_mask, end, warp_size - 1) > last_slot) break;
        end = strip_end(cur + round + warp_size);
      }
      __syncwarp();
      const uint4 q = reinterpret_cast<const uint4*>(marks)[lane];
      static_assert(E == 4, "a lane's marks are one uint4");
      U n[E] = {q.x, max(q.x, q.y), max(max(q.x, q.y), q.z), max(max(q.x, q.y), max(q.z, q.w))};
      U upto = n[E - 1];
      for (int d = 1; d < warp_size; d *= 2) {
        const U other = __shfl_up_sync(full_mask, upto, d);
        if (lane >= d) upto = max(upto, other);
      }
      U before = __shfl_up_sync(full_mask, upto, 1);
      if (lane == 0) before = 0;
#pragma unroll
      for (int k = 0; k < E; ++k) strip[k] = cur + static_cast<I>(max(before, n[k]));
    }
    // The window's rows are in strips cur .. (the strip of its last slot): rows of split strips
    // (atomic additions) only where split_first is cur or split_last that strip.
    const I window_strip = cur;
    cur = __shfl_sync(full_mask, strip[E - 1], warp_size - 1);  // for the next (whole) window
    const bool plain = whole && window_strip != split_first && cur != split_last;
    I row[E];
    V p[E];
#pragma unroll
    for (int k = 0; k < E; ++k) {
      // Below rows, so 32 bits hold it (unsigned: slots past b1 are set apart below).
      row[k] = static_cast<I>(static_cast<U>(strip[k]) * static_cast<U>(h) + (word[k] & (cmrs_max_height - 1)));
      p[k] = v[k] * xv[k];
    }
    if (!whole) {  // the matrix's last window (only the last tile is not whole windows)
#pragma unroll
      for (int k = 0; k < E; ++k)
        if (e0 + k >= b1) strip[k] = row[k] = -1;
    }
    // Lane 0 holds the window's first slot: where it continues the open row, the row's sum so
    // far joins that slot's product, so every sum below includes it.
    const bool continues = row[0] == open_row;
    if (lane == 0 && continues) p[0] += open_sum;
    const detail::warp_row_sums<V, I, E> sums(row, p, lane);
    const I next_head_strip = __shfl_down_sync(full_mask, strip[0], 1);
    // Otherwise the open row ended with the previous window; tile 0 also writes the empty rows
    // before its first row with slots.
    const bool close_open = lane == 0 && !continues && (open_row >= 0 || t == 0);
    if (close_open && open_row >= 0) finish(open_row, open_strip, open_sum);
    // Rows ending inside the window: the next slot, in this lane or the next, holds a later row
    // (never -1, which marks the slots past b1 and stands after the warp's last slot).
    const auto next_of = [&](int k) { return k + 1 < E ? row[k + 1] : lane + 1 < warp_size ? sums.next_head : I(-1); };
    const auto next_strip_of = [&](int k) { return k + 1 < E ? strip[k + 1] : next_head_strip; };
    const auto ends_at = [&](int k) { return next_of(k) > row[k]; };
    if constexpr (!Staged) {
      if (plain) {
#pragma unroll
        for (int k = 0; k < E; ++k)
          if (ends_at(k)) write(row[k], sums.at(row, k));
      } else {
#pragma unroll
        for (int k = 0; k < E; ++k)
          if (ends_at(k)) finish(row[k], strip[k], sums.at(row, k));
      }
    } else {
      // Rows of about one slot (coo_stages_row_sums): a lane ends up to 4 rows, 4 apart from the
      // next lane's, so the rows go through shared memory in order (split ones as ~row) and
      // the warp writes 32 consecutive rows a store, as the COO kernel's staging does.
      int count = 0;
#pragma unroll
      for (int k = 0; k < E; ++k) count += ends_at(k) ? 1 : 0;
      int at_slot = group_inclusive_sum(count) - count;
      const int total = __shfl_sync(full_mask, at_slot + count, warp_size - 1);
#pragma unroll
      for (int k = 0; k < E; ++k)
        if (ends_at(k)) {
          staged_rows[at_slot] = !plain && split(strip[k]) ? ~row[k] : row[k];
          staged_sums[at_slot++] = sums.at(row, k);
        }
      __syncwarp();
      for (int q = lane; q < total; q += warp_size) {
        const I r = staged_rows[q];
        if (r < 0) atomicAdd(y + ~r, alpha * staged_sums[q]);
        else write(r, staged_sums[q]);
      }
      __syncwarp();  // the next window refills the stage
    }
    // The empty rows after the rows that end here: rare, so the warp votes before it looks.
    // (next_of(k) - row[k] > 1 only where row k ends: rows are -1 past b1 and do not decrease.)
    bool gaps = close_open && row[0] - open_row > 1;
#pragma unroll
    for (int k = 0; k < E; ++k) gaps |= next_of(k) - row[k] > 1;
    if (__any_sync(full_mask, gaps)) {
      bool wide = false;
      if (close_open) gap(open_row, open_strip, row[0], strip[0], wide);
#pragma unroll
      for (int k = 0; k < E; ++k)
        if (ends_at(k)) gap(row[k], strip[k], next_of(k), next_strip_of(k), wide);
      if (__any_sync(full_mask, wide)) {
        wide_rows(close_open, open_row, open_strip, row[0], strip[0]);
#pragma unroll
        for (int k = 0; k < E; ++k) wide_rows(ends_at(k), row[k], strip[k], next_of(k), next_strip_of(k));
      }
    }
    // The row of the window's last slot stays open (its sum includes the carried part).
    if (whole) {
      open_sum = __shfl_sync(full_mask, sums.tail, warp_size - 1);
      open_row = __shfl_sync(full_mask, row[E - 1], warp_size - 1);
      open_strip = __shfl_sync(full_mask, strip[E - 1], warp_size - 1);
    } else {
      const U last = last_slot - w0;
      const int last_lane = static_cast<int>(last / E), last_k = static_cast<int>(last % E);
      V mine = V(0);
      I mine_row = -1, mine_strip = -1;
#pragma unroll
      for (int k = 0; k < E; ++k)
        if (k == last_k) {
          mine = sums.at(row, k);
          mine_row = row[k];
          mine_strip = strip[k];
        }
      open_sum = __shfl_sync(full_mask, mine, last_lane);
      open_row = __shfl_sync(full_mask, mine_row, last_lane);
      open_strip = __shfl_sync(full_mask, mine_strip, last_lane);
    }
  };
  U w0 = b0;
  if (aligned)
    for (; w0 + tile_window <= b1; w0 += tile_window) window(w0, std::true_type{});
  for (; w0 < b1; w0 += tile_window) window(w0, std::false_type{});
  // The tile's last row, and the empty rows up to the row of the next tile's first slot.
  if (lane == 0) finish(open_row, open_strip, open_sum);
  const I after = static_cast<I>(last_tile ? m.rows : std::int64_t{f1} * h + (col_row[b1] & (cmrs_max_height - 1)));
  empty_rows(open_row, open_strip, after, f1, lane, warp_size);
}

template <class V>
void launch_tiles(const cmrs<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  const auto slots = static_cast<std::int64_t>(a.values.size());
  const int h = a.params.height;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  if (slots == 0) {  // every row is empty
    scale_y<V><<<launch_blocks(a.rows, block_threads), block_threads, 0, s>>>(a.rows, beta, y);
    return;
  }
  const std::int64_t tile_slots = std::int64_t{tile_window} * cmrs_tile_windows(slots);
  const tile_split m{cmrs_strips(a.rows, h), a.rows, slots, (slots + tile_slots - 1) / tile_slots, tile_slots};
  const I* first = assign_tiles(m, h, a.strip_ptr.data(), beta, y, ctx, "gpu::spmv (cmrs)");
  const bool aligned = on_16_bytes(a.col_row.data(), a.values.data());
  // Rows staged in shared memory where they hold fewer than 2 slots on average, the COO
  // kernel's rule, so that only such matrices pay the stage's 6.5 KiB a block of L1.
  const bool staged = detail::coo_stages_row_sums(a.rows, slots);
  const auto kernel = beta == V(0) ? (staged ? tile_kernel<V, true, false> : tile_kernel<V, false, false>)
                                   : (staged ? tile_kernel<V, true, true> : tile_kernel<V, false, true>);
  kernel<<<static_cast<unsigned>((m.tiles + tile_warps - 1) / tile_warps), tile_threads, 0, s>>>(
      m, h, a.strip_ptr.data(), a.col_row.data(), a.values.data(), first, aligned, alpha, x, beta, y);
}

template <class V, int H, int M>
void launch(const cmrs<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  // Pairs the format refuses (height * M < 32 with M < 32) are never instantiated; spmv()
  // has refused them before dispatching.
  if constexpr (M == warp_size || H * M >= warp_size) {
    const std::int64_t strips = cmrs_strips(a.rows, H);
    const unsigned blocks = launch_blocks(strips * warp_size, block_threads);
    const auto s = static_cast<cudaStream_t>(ctx.stream());
    if constexpr (M == warp_size) {
      if (cmrs_short_strips(static_cast<std::int64_t>(a.col_row.size()), strips)) {
        const auto kernel = pipelined_kernel<V, H>;
        const int wave = resident_blocks(kernel, block_threads, ctx.device(), "gpu::spmv (cmrs)");
        kernel<<<std::min(blocks, static_cast<unsigned>(wave)), block_threads, 0, s>>>(
            a.rows, strips, a.strip_ptr.data(), a.col_row.data(), a.values.data(), alpha, x, beta, y);
      } else {
        register_kernel<V, H><<<blocks, block_threads, 0, s>>>(a.rows, strips, a.strip_ptr.data(), a.col_row.data(),
                                                              a.values.data(), alpha, x, beta, y);
      }
    } else {
      strip_kernel<V, H, M><<<blocks, block_threads, 0, s>>>(a.rows, strips, a.strip_ptr.data(), a.col_row.data(),
                                                            a.values.data(), alpha, x, beta, y);
    }
  }
}

template <class V, int M, int... Hm1>
void dispatch_height(std::integer_sequence<int, Hm1...>, int h, const cmrs<V, I, device>& a, V alpha, const V* x,
                     V beta, V* y, gpu_context& ctx) {
  (void)((h == Hm1 + 1 ? (launch<V, Hm1 + 1, M>(a, alpha, x, beta, y, ctx), true) : false) || ...);
}

template <class V, int M>
void dispatch(int h, const cmrs<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  dispatch_height<V, M>(std::make_integer_sequence<int, cmrs_max_height>{}, h, a, alpha, x, beta, y, ctx);
}

}  // namespace

template <class V>
void spmv(const cmrs<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx, cmrs_kernel kernel) {
  const int h = a.params.height, m = a.params.modulo;
  if (h < 1 || h > cmrs_max_height)
    fail(errc::usage, "gpu::spmv: cmrs height = " + std::to_string(h) + " is out of range [1, 16]");
  if (m != 2 && m != 4 && m != 8 && m != 16 && m != cmrs_warp)
    fail(errc::usage, "gpu::spmv: cmrs modulo = " + std::to_string(m) + " is not one of 2, 4, 8, 16, 32");
  if (m < cmrs_warp && h * m < cmrs_warp)
    fail(errc::usage, "gpu::spmv: cmrs height * modulo = " + std::to_string(h * m) +
                          " is below 32 (no sec. 6.7 layout exists for it)");
  const std::int64_t strips = cmrs_strips(a.rows, h);
  if (a.strip_ptr.size() != static_cast<std::size_t>(strips) + 1)
    fail(errc::usage, "gpu::spmv: cmrs strip_ptr has " + std::to_string(a.strip_ptr.size()) +
                          " elements, expected " + std::to_string(strips + 1));
  if (kernel == cmrs_kernel::automatic)
    kernel = cmrs_spmv_kernel(a.params, a.rows);
  if (kernel == cmrs_kernel::tiles && !cmrs_tile_layout(a.params))
    fail(errc::usage, "gpu::spmv: the cmrs tile kernel takes the basic layout in CSR order (modulo 32, "
                      "sort_columns false), not modulo " + std::to_string(m) +
                          (a.params.sort_columns ? " with sort_columns" : ""));
  if (a.rows == 0) return;
  if (kernel == cmrs_kernel::tiles) {
    launch_tiles(a, alpha, x, beta, y, ctx);
    check_cuda(cudaGetLastError(), "gpu::spmv: launching the cmrs tile kernel (height " + std::to_string(h) + ")");
    return;
  }
  switch (m) {
    case 2: dispatch<V, 2>(h, a, alpha, x, beta, y, ctx); break;
    case 4: dispatch<V, 4>(h, a, alpha, x, beta, y, ctx); break;
    case 8: dispatch<V, 8>(h, a, alpha, x, beta, y, ctx); break;
    case 16: dispatch<V, 16>(h, a, alpha, x, beta, y, ctx); break;
    default: dispatch<V, cmrs_warp>(h, a, alpha, x, beta, y, ctx); break;
  }
  check_cuda(cudaGetLastError(), "gpu::spmv: launching the cmrs strip kernel (height " + std::to_string(h) +
                                     ", modulo " + std::to_string(m) + ")");
}

#define SPCONV_INST(V) \
  template void spmv<V>(const cmrs<V, I, device>&, V, const V*, V, V*, gpu_context&, cmrs_kernel);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
