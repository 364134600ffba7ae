// MBR SpMV and SMMV on the GPU (shared/papers/mbr-kannan.txt sec. III-IV, fig. 3-6).
// Both kernels decode a block the same way: its bitmap is loaded once as one unsigned word of
// the bitmap's own width (sec. III's maptype; a template parameter, dispatched once per call on
// bitmap_bytes), a matrix row i of the block keeps its slice (bits i*c .. i*c + c - 1) and
// visits the set bits with find-first-set then clear-lowest (sec. IV-A, fig. 5: z iterations
// per block instead of r*c tests; __ffsll is the instruction the paper's de Bruijn lookup
// emulates). The column inside the block is the bit's position in the slice, so the paper's
// division and remainder (sec. IV) disappear; values are stored in bit order, so a row's
// values follow the block's set bits below its slice.
//
// Which kernel runs (mbr_spmv_kernel, spmv_mbr.hpp, where the measurements are):
// - gpu::spmv with r in {1, 2, 4, 8}, every height the automatic block size can pick
//   (cpu::resolve_mbr_params): the tile kernel. A warp takes up to 256 consecutive blocks
//   whatever block rows they belong to, 32 at a time; a lane per block (windows of few values)
//   or a lane per run (one row's slice of one block) sums them; block rows split between warps
//   are added atomically (see the kernel).
// - on request (mbr_kernel::block_rows), the same heights: the block-row kernel. A group of L
//   lanes of one warp takes a block row (mbr_lanes_per_block_row), a window of L blocks at a
//   time, one per lane; the lanes list the window's values (bit, block) in shared memory, then
//   read the values in chunks of L (coalesced), a lane per value (see the kernel). The R = r
//   sums of the block row are kept in registers (R a template parameter) and a shuffle tree
//   adds the group's sums. One launch, against the tile kernel's two, but a long block row
//   holds its group alone.
//   Why not the row kernel: it makes every row of a block row walk all of its blocks, so
//   a long block row holds its r threads for the whole walk while the rest of the warp idles,
//   and a warp's threads read values of different block rows far apart. Lanes split a row's
//   sum, and products may be contracted to FMA (nvcc's default, as in the BCSR kernel), so
//   the results are held to the CSR reference's tolerance, not to the CPU's bits.
// - gpu::spmm (k >= 1 vectors, k = 1 included), and gpu::spmv with another r: the row kernel.
//   One thread per matrix row: row i of block row br walks the blocks of br in stored order
//   and decodes its own slice of each. For k vectors (sec. IV-B) every decoded bit feeds K
//   multiply-adds with K a template parameter (unrolled), K <= 8 per kernel, so the decode is
//   shared by the K vectors. The r threads of a block row sit in one warp and read the same
//   block_col_idx and bitmap words (broadcast loads); each output element is summed by one
//   thread in the CPU's order (blocks by column, then bits) with round-to-nearest intrinsics,
//   never contracted to FMA, so the products are the CPU's bits, without atomics or reduction.
//   Its cost is CSR-scalar's: a long block row holds its rows' threads, and rows of very
//   different lengths leave lanes idle.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "convert/gpu/mbr_rows.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/block_row_sums.cuh"
#include "kernels/gpu/scale_y.cuh"
#include "kernels/gpu/search.cuh"
#include "kernels/gpu/spmv_mbr.hpp"
#include "kernels/gpu/tile_rows.cuh"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;
constexpr int warp_size = 32;
constexpr unsigned full_mask = 0xffffffffu;
constexpr int max_vectors = 8;  // vectors per kernel: the range where SMMV peaks (sec. V-A)

__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }

// bit / c for a bit of a block (bit < 64, c <= 64) as row_of_bit(bit, row_multiplier(c)) =
// (bit * ceil(2^16 / c)) >> 16: the excess stays below 64 / 2^16 < 1 / c, so the quotient is
// exact, and no division runs per bit.
__host__ __device__ constexpr unsigned row_multiplier(int c) {
  return (65536u + static_cast<unsigned>(c) - 1u) / static_cast<unsigned>(c);
}
__device__ __forceinline__ int row_of_bit(int bit, unsigned by_c) {
  return static_cast<int>((static_cast<unsigned>(bit) * by_c) >> 16);
}

// The lowest set bit of a row's slice: the column inside the block of its first entry (sec.
// IV-A, fig. 5: find-first-set; clearing it, cols & (cols - 1), moves to the next entry).
__device__ __forceinline__ int lowest_column(std::uint64_t cols) { return __ffsll(static_cast<long long>(cols)) - 1; }
__device__ __forceinline__ int lowest_column(std::uint32_t cols) { return __ffs(static_cast<int>(cols)) - 1; }

// Calls f(j) for each set bit j of a row's slice, lowest first: the loop runs once per entry
// and its test is the only condition; j is the column inside the block.
template <class Cols, class F>
__device__ __forceinline__ void for_each_column(Cols cols, F&& f) {
  for (; cols; cols &= cols - 1) f(lowest_column(cols));
}

// The sum of a run's products (cols != 0: its columns; vp: its values; xb: x at the block's
// first column), in column order, an entry ahead: each step loads the next entry's value and
// x before it multiplies the entry before, so that a lane has two entries' loads in flight
// where a step per entry waits for each entry's loads in turn. Same products, same order of
// additions as for_each_column.
template <class Cols, class V>
__device__ __forceinline__ V run_sum(Cols cols, const V* __restrict__ vp, const V* __restrict__ xb) {
  V a = *vp, b = xb[lowest_column(cols)];
  V sum = V(0);
  for (cols &= cols - 1; cols; cols &= cols - 1) {
    const V a_next = *++vp, b_next = xb[lowest_column(cols)];
    sum += a * b;
    a = a_next;
    b = b_next;
  }
  return sum + a * b;
}

// Y[:, 0:K] = alpha * A * X[:, 0:K] + beta * Y[:, 0:K], X and Y row-major with leading
// dimension ld (x and y already point at the group's first vector).
template <class M, int K, class V>
__global__ void __launch_bounds__(block_threads)
    row_kernel(std::int64_t rows, int r, int c, const I* __restrict__ block_row_ptr,
               const I* __restrict__ block_col_idx, const M* __restrict__ bitmaps, const I* __restrict__ value_ptr,
               const V* __restrict__ values, std::int64_t ld, V alpha, const V* __restrict__ x, V beta, V* y) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; row < rows;
       row += stride) {
    const std::int64_t br = row / r;
    const int i = static_cast<int>(row - br * r);
    V acc[K];
#pragma unroll
    for (int l = 0; l < K; ++l) acc[l] = V(0);
    I v = value_ptr[br];
    for (I b = block_row_ptr[br], end = block_row_ptr[br + 1]; b < end; ++b) {
      const std::uint64_t map = bitmaps[b];
      const mbr_row_bits part = mbr_row_of(map, i, c);
      const V* const xb = x + static_cast<std::int64_t>(block_col_idx[b]) * c * ld;
      I u = v + part.before;
      for_each_column(part.cols, [&](int j) {
        const V val = values[u++];
        const V* const xp = xb + static_cast<std::int64_t>(j) * ld;
#pragma unroll
        for (int l = 0; l < K; ++l) acc[l] = add(acc[l], mul(val, xp[l]));
      });
      v += __popcll(map);
    }
    V* const yr = y + row * ld;
#pragma unroll
    for (int l = 0; l < K; ++l)
      // beta == 0 writes y without reading it (BLAS semantics: y may hold NaN).
      yr[l] = beta == V(0) ? mul(alpha, acc[l]) : add(mul(alpha, acc[l]), mul(beta, yr[l]));
  }
}

struct block_row_shape {
  std::int64_t block_rows, rows;  // ceil(rows / r), rows
  int c, lanes;                   // lanes: a power of two in [4, 32] (mbr_lanes_per_block_row)
};

// y = alpha*A*x + beta*y for blocks of height R, a group of `lanes` lanes per block row, a
// lane per value. The group takes its block row's blocks in windows of `lanes` consecutive
// blocks, one per lane. Each lane lists its block's values in the group's slots in shared
// memory: the k-th value of the window (values are stored in bit order, sec. III) gets the
// bit (find-first-set, then clear-lowest, as in sec. IV-A) and the lane holding its block,
// at k = the set bits of the window's blocks before its own (an inclusive sum over the lanes
// by shuffles). Then the window's values go in chunks of `lanes` consecutive values
// (coalesced reads), a lane per value: its slot gives the bit, its row in the block (bit / c)
// and column (the rest); its block's column comes from the slot's lane by a shuffle. Each lane
// adds its products into the R sums of the block row (registers, selected by row), and a
// shuffle tree adds the group's sums. Listing costs a few instructions a value where
// searching each value's block among the window's lanes and its bit by rank (stop 17's
// kernel) cost about ten shuffles. The loops' bounds are the same for the whole warp (the
// window loop runs while any group has blocks left, the chunk loop to the fullest window of
// the warp), so every full-mask shuffle is reached by all 32 lanes.
template <class M, int R, class V>
__global__ void __launch_bounds__(block_threads)
    block_row_kernel(block_row_shape m, const I* __restrict__ block_row_ptr, const I* __restrict__ block_col_idx,
                     const M* __restrict__ bitmaps, const I* __restrict__ value_ptr, const V* __restrict__ values,
                     V alpha, const V* __restrict__ x, V beta, V* y) {
  const int lanes = m.lanes, lane = static_cast<int>(threadIdx.x % warp_size), sub = lane % lanes;
  const int per_warp = warp_size / lanes;
  // A window's values, at most 64 a block: 2 bytes each (bit, lane), 4 KiB a warp.
  __shared__ std::uint16_t window_slots[block_threads / warp_size][warp_size * 64];
  std::uint16_t* const slots = window_slots[threadIdx.x / warp_size] + (lane - sub) * 64;
  const unsigned by_c = row_multiplier(m.c);
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / warp_size;
  for (std::int64_t first = warp * per_warp; first < m.block_rows; first += warps * per_warp) {
    const std::int64_t br = first + lane / lanes;
    const bool live = br < m.block_rows;
    const I b1 = live ? block_row_ptr[br + 1] : 0, v0 = live ? value_ptr[br] : 0;
    I wb = live ? block_row_ptr[br] : 0;  // the window's first block
    V sum[R];
#pragma unroll
    for (int i = 0; i < R; ++i) sum[i] = V(0);
    // The window: lane sub holds block wb + sub (an empty bitmap past the block row); `lo` =
    // the block row's values before the window. Each lane lists its block's values in the
    // group's slots, in bit order (sec. III): slot k of the window holds the bit and the lane
    // of its k-th value. Then a lane per value reads its slot, its value (coalesced) and its
    // block's column (a shuffle from the slot's lane).
    I lo = 0;
    for (;;) {
      const bool has = wb + sub < b1;
      const M map = has ? bitmaps[wb + sub] : M(0);
      const I col = has ? block_col_idx[wb + sub] : 0;
      const int pop = __popcll(map);
      const I upto = group_inclusive_sum(static_cast<I>(pop), lanes);
      const I n = __shfl_sync(full_mask, upto, lanes - 1, lanes);  // the window's values
      __syncwarp();
      int k = upto - pop;
      for (std::uint64_t bits = map; bits; bits &= bits - 1)
        slots[k++] = static_cast<std::uint16_t>((__ffsll(static_cast<long long>(bits)) - 1) | sub << 6);
      __syncwarp();
      const I most = static_cast<I>(__reduce_max_sync(full_mask, static_cast<unsigned>(n)));
      for (I chunk = 0; chunk < most; chunk += lanes) {
        const I at = chunk + sub;  // this lane's value, from the window's first
        const unsigned slot = at < n ? slots[at] : 0u;
        const I block_col = __shfl_sync(full_mask, col, static_cast<int>(slot >> 6), lanes);
        if (at < n) {
          const int bit = static_cast<int>(slot & 63u);
          const int i = row_of_bit(bit, by_c), j = bit - i * m.c;
          const V p = values[v0 + lo + at] * x[static_cast<std::int64_t>(block_col) * m.c + j];
#pragma unroll
          for (int row = 0; row < R; ++row)
            if (row == i) sum[row] += p;
        }
      }
      lo += n;
      wb += lanes;
      if (!__any_sync(full_mask, wb < b1)) break;
    }
    write_block_row(sum, R, lanes, live && sub == 0, br, m.rows, alpha, beta, y);
  }
}

// The tile kernel's unit of work (tile_rows.cuh): a warp takes m.tile_items consecutive blocks
// (whatever block rows they belong to), a window of 32 at a time, so every warp does the same
// work however long the block rows are (HOLA's strict splitting, sec. 3.1, on blocks); the
// windows per tile are mbr_tile_windows' (spmv_mbr.hpp).
constexpr int tile_threads = 128;  // 4 warps, each with 32 r bytes of slots and 32 (r + 1) sums
constexpr int tile_warps = tile_threads / warp_size;
// Blocks a multiprocessor holds at once, as asked of the compiler (__launch_bounds__): 12 (48
// warps, at most 40 registers) where windows are summed a lane per block and nothing is
// gathered; elsewhere 0, which leaves the choice to the compiler (no .minnctapersm in the PTX:
// 40 or 48 registers). H200, double, replicated set (stop 35, device call 2, both beside the
// compiler's choice everywhere): 12 everywhere took the geometric mean from 0.870x to 0.874x
// cuSPARSE, the matrices of few values a block 1-5% faster (bayer10 0.865x -> 0.908x, rajat01
// 0.738x -> 0.765x, memplus 0.860x -> 0.887x), but ca-AstroPh, which gathers, 0.657x -> 0.566x,
// and the lane-per-run kernels of 8-byte bitmaps (8 x 8 blocks), which spill at 40 registers,
// moved by -1.3% to +1.3%. Asking for 1 is not the compiler's choice: it took the gathering
// kernels to 59-62 registers and the lane-per-run ones to 46 (0.858x in all; ca-AstroPh
// 0.600x). This rule (call 5, beside stop 34's kernel): 0.874x -> 0.883x, ca-AstroPh 0.659x ->
// 0.658x.
template <bool ByBlock, bool Gather>
constexpr int tile_min_blocks = ByBlock && !Gather ? 12 : 0;

// A lane's block of a window summed by the lane: its set bits in order (sec. III: bit i*c + j
// is row i, column j; sec. IV-A: find-first-set, then clear-lowest), i.e. its rows in turn, an
// entry ahead as in run_sum; a row's sum goes to its cell when the next row begins, and the
// cells of rows without entries are 0; with Gather, each row's sum is added to what its cell
// holds. vb: the block's values, xb: x at its first column; row = bit / c is
// row_of_bit(bit, by_c), by_c = row_multiplier(c).
template <int R, bool Gather, class W, class V>
__device__ __forceinline__ void block_sums(W bits, const V* __restrict__ vb, const V* __restrict__ xb, int c,
                                           unsigned by_c, V (&cells)[R + 1]) {
  if (!Gather)
#pragma unroll
    for (int i = 0; i < R; ++i) cells[i] = V(0);
  if (!bits) return;
  const auto put = [&](int row, V sum) {
    if (Gather) cells[row] += sum;
    else cells[row] = sum;
  };
  int bit = lowest_column(bits), row = row_of_bit(bit, by_c);
  V a = vb[0], b = xb[bit - row * c], sum = V(0);
  int k = 1;
  for (bits &= bits - 1; bits; bits &= bits - 1) {
    const int next_bit = lowest_column(bits), next_row = row_of_bit(next_bit, by_c);
    const V a_next = vb[k++], b_next = xb[next_bit - next_row * c];
    sum += a * b;
    if (next_row != row) {
      put(row, sum);
      sum = V(0);
      row = next_row;
    }
    a = a_next;
    b = b_next;
  }
  put(row, sum + a * b);
}

// y = alpha*A*x + beta*y for blocks of height R, a warp per tile of m.tile_items consecutive
// blocks, a window of 32 blocks at a time, one per lane. A run is one row's slice of one block
// (sec. III: bits i*c .. i*c + c - 1), holding entries. A window of few values is summed a lane
// per block (mbr_lane_per_block, block_sums); in the others each lane lists its block's runs in the
// warp's slots (lane and row; block order, then row order, which is the values' order), and a
// lane per run then sums its slice: its set bits, lowest first, are its columns (sec. IV-A),
// its values follow the block's bits below the slice, and its block's column, bitmap and first
// value come from the block's lane by shuffles (the sum taken an entry ahead, run_sum: the
// loop was latency-bound, specs/formats/mbr.md). The run's sum goes to its own cell
// sums[block's lane][row] in shared memory: no lane keeps the sums of a block row, so a window
// may hold parts of many block rows, and runs of empty rows take no lane (a lane per block and
// row would idle on graph-like matrices, where most slices are empty). Then the window's
// finished block rows (those ending in it, empty ones included) are written, a lane per row:
// the sum of its block row's cells over the lanes of its blocks, plus the part carried from
// earlier windows when the block row began before this one; the block row still open at the
// window's end carries its part on. A block row that began in an earlier tile, or runs past the
// tile's end, is added to y atomically (tile_rows set it to beta*y). The window's first value
// comes from value_ptr of the tile's first block row, plus the popcounts of that block row's
// blocks before the tile (only block rows longer than a tile have such blocks). Every loop that
// holds a full-mask shuffle has bounds that are the same for the whole warp. Rows are summed
// run by run or block by block (and products may be contracted to FMA), so the result is held
// to the CSR tolerance, not to the CPU's bits.
template <class M, int R, class V, bool ByBlock, bool Gather>
__global__ void __launch_bounds__(tile_threads, tile_min_blocks<ByBlock, Gather>)
    tile_kernel(tile_split m, int c, unsigned by_c, const I* __restrict__ block_row_ptr,
                const I* __restrict__ block_col_idx,
                const M* __restrict__ bitmaps, const I* __restrict__ value_ptr, const V* __restrict__ values,
                const I* __restrict__ first_row, V alpha, const V* __restrict__ x, V beta, V* y) {
  __shared__ std::uint8_t window_slots[tile_warps][warp_size * R];  // a window's runs: lane << 3 | row
  // sums[lane][row], padded to R + 1 rows so that the cells of one block's rows, and of one row
  // in different blocks, lie in different banks.
  __shared__ V window_sums[tile_warps][warp_size][R + 1];
  __shared__ V carried_sums[tile_warps][R];
  const int lane = static_cast<int>(threadIdx.x % warp_size), w = static_cast<int>(threadIdx.x / warp_size);
  using W = std::conditional_t<(sizeof(M) <= 4), std::uint32_t, std::uint64_t>;  // a bitmap's word
  // A row's slice: at most c <= 32 bits when r >= 2 (r*c <= 64), walked in 32-bit arithmetic.
  using Cols = std::conditional_t<(R >= 2), std::uint32_t, W>;
  std::uint8_t* const slots = window_slots[w];
  V(&sums)[warp_size][R + 1] = window_sums[w];
  V* const carried = carried_sums[w];
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * tile_warps + w;
  if (t >= m.tiles) return;  // the whole warp
  // Blocks, block rows, rows and values are counted by the int32 arrays (block_row_ptr,
  // value_ptr), so below 2^31: the window's bookkeeping runs in unsigned 32-bit arithmetic,
  // where a position plus 32 or 64 cannot wrap (64-bit minima and compares had been 8% of the
  // instructions on bcspwr10 and ca-AstroPh).
  const auto b0 = static_cast<unsigned>(t * m.tile_items);
  const auto b1 = static_cast<unsigned>(min(t * m.tile_items + m.tile_items, m.items));
  const auto groups = static_cast<unsigned>(m.groups), rows = static_cast<unsigned>(m.rows);
  auto cur = static_cast<unsigned>(first_row[t]);  // the first block row not yet written
  const auto first_block = static_cast<unsigned>(block_row_ptr[cur]);
  const auto row_end = static_cast<unsigned>(block_row_ptr[cur + 1]);
  // The tile's first value: its first block row's, plus the values of that block row's blocks
  // before the tile, or the next block row's, less the values of this one's blocks from the
  // tile's first on, whichever counts fewer bitmaps (only block rows longer than a tile have
  // blocks on both sides: arrow's dense first row makes a block row of 5813 blocks of 8 x 8).
  const auto values_in = [&](unsigned from, unsigned to) {
    unsigned n = 0;
#pragma unroll 4
    for (unsigned b = from + lane; b < to; b += warp_size) n += static_cast<unsigned>(__popcll(bitmaps[b]));
    return __reduce_add_sync(full_mask, n);
  };
  unsigned v0 = b0 - first_block <= row_end - b0
                    ? static_cast<unsigned>(value_ptr[cur]) + values_in(first_block, b0)
                    : static_cast<unsigned>(value_ptr[cur + 1]) - values_in(b0, row_end);
  bool carrying = false;  // whether carried holds the part of block row cur before the window
  // With Gather (mbr_tile_gathers), a window inside block row cur (the block row runs past it)
  // writes nothing: each lane adds its block's (or runs') sums to its cells, which keep them
  // from window to window (`gathered`) until a window where the block row ends; then a fold adds
  // the 32 lanes' cells to carried (32 / R lanes a row, R cells each, then shuffles). Without it
  // every window sums its block rows' cells over the window's lanes, a lane per output row, 32
  // cells each where the window lies inside one block row.
  unsigned cur_end = row_end;
  bool gathered = false;
  const auto fold = [&] {
    constexpr int parts = warp_size / R;
    const int i = lane % R;
    V sum = V(0);
#pragma unroll
    for (int l = lane / R; l < warp_size; l += parts) sum += sums[l][i];
#pragma unroll
    for (int d = R; d < warp_size; d *= 2) sum += __shfl_xor_sync(full_mask, sum, d);
    if (lane < R) carried[lane] = carrying ? carried[lane] + sum : sum;
    __syncwarp();
    carrying = true;
    gathered = false;
  };
  // A window's bitmaps and columns are loaded a window ahead, and the bounds of the block rows
  // it may finish before its values.
  M map_next = b0 + lane < b1 ? bitmaps[b0 + lane] : M(0);
  I col_next = b0 + lane < b1 ? block_col_idx[b0 + lane] : 0;
  for (unsigned w0 = b0; w0 < b1; w0 += warp_size) {
    const unsigned we = min(w0 + warp_size, b1);
    const M map = map_next;
    const I col = col_next;
    if (we + lane < b1) {
      map_next = bitmaps[we + lane];
      col_next = block_col_idx[we + lane];
    }
    unsigned s, e;  // block row cur + lane's first and end block (past the last block row: none)
    bool exists;
    const auto bounds = [&] {
      exists = cur + lane < groups;
      s = exists ? static_cast<unsigned>(block_row_ptr[cur + lane]) : 0u;
      e = exists ? static_cast<unsigned>(block_row_ptr[cur + lane + 1]) : 0u;
    };
    const bool inside = Gather && cur_end > we;
    if (!inside) {
      if (Gather && gathered) fold();
      bounds();
    }
    // The block's values start where the window's blocks before it end (values are stored in
    // block order, sec. III). A lane per block sums its block (mbr_lane_per_block), or the block's
    // runs, its rows with entries, are listed in the warp's slots (lane and row, block order
    // then row order, which is value order) for a lane per run.
    const int pop = __popcll(map);
    const int upto = group_inclusive_sum(pop), first_value = upto - pop;
    const int n = __shfl_sync(full_mask, upto, warp_size - 1);  // the window's values
    const bool add = Gather && gathered;  // cells add to what earlier windows inside the block row left
    if (ByBlock && mbr_lane_per_block(n, R, c)) {
      const V* const vb = values + v0 + first_value;
      const V* const xb = x + static_cast<std::int64_t>(col) * c;
      if (add) block_sums<R, true>(static_cast<W>(map), vb, xb, c, by_c, sums[lane]);
      else block_sums<R, false>(static_cast<W>(map), vb, xb, c, by_c, sums[lane]);
      __syncwarp();
    } else {
      unsigned rows_with_entries = 0;
#pragma unroll
      for (int i = 0; i < R; ++i) {
        if (!add) sums[lane][i] = V(0);
        if (mbr_row_of(static_cast<W>(map), i, c).cols != 0) rows_with_entries |= 1u << i;
      }
      const int runs = __popc(rows_with_entries);
      const int runs_upto = group_inclusive_sum(runs);
      const int window_runs = __shfl_sync(full_mask, runs_upto, warp_size - 1);
      int k = runs_upto - runs;
      for (unsigned o = rows_with_entries; o; o &= o - 1)
        slots[k++] = static_cast<std::uint8_t>(lane << 3 | (__ffs(o) - 1));
      __syncwarp();
      // A lane per run: its row's slice of its block (sec. IV-A: the set bits, lowest first, are
      // its columns; its values follow the block's bits below the slice), summed in a register
      // and stored in the run's own cell.
      for (int r0 = 0; r0 < window_runs; r0 += warp_size) {
        const bool live = r0 + lane < window_runs;
        const unsigned slot = live ? slots[r0 + lane] : 0u;
        const int owner = static_cast<int>(slot >> 3), i = static_cast<int>(slot & 7u);
        const I block_col = __shfl_sync(full_mask, col, owner);
        const W block_map = __shfl_sync(full_mask, static_cast<W>(map), owner);
        const int block_first = __shfl_sync(full_mask, first_value, owner);
        if (live) {
          const mbr_row_bits_of<W> part = mbr_row_of(block_map, i, c);
          const V* xb = x + static_cast<std::int64_t>(block_col) * c;
          const V sum = run_sum(static_cast<Cols>(part.cols), values + v0 + block_first + part.before, xb);
          sums[owner][i] = add ? sums[owner][i] + sum : sum;
        }
      }
      __syncwarp();  // (a window without values has no chunk)
    }
    if (Gather && inside) {
      v0 += n;
      gathered = true;
      continue;
    }
    // Block rows cur, cur + 1, ...: those ending at or before we are written, the one holding
    // block we - 1 and running past we is carried. A round takes 32 block rows; more rounds
    // only when more than 32 block rows (empty ones) end in this window.
    for (;;) {
      const unsigned done = __ballot_sync(full_mask, exists && e <= we);
      const int finished = __popc(done);  // a prefix of the lanes: e does not decrease
      const int open_here = exists && s < we && e > we ? 1 : 0;
      const bool open = __shfl_sync(full_mask, open_here, finished % warp_size) != 0 && finished < warp_size;
      const int outputs = (finished + (open ? 1 : 0)) * R;
      V open_sum = V(0);
      for (int q0 = 0; q0 < outputs; q0 += warp_size) {
        const int q = q0 + lane, kk = q / R, i = q % R;
        const unsigned sk = __shfl_sync(full_mask, s, kk % warp_size), ek = __shfl_sync(full_mask, e, kk % warp_size);
        if (q < outputs) {
          V sum = kk == 0 && carrying ? carried[i] : V(0);
          const int lo = static_cast<int>(max(sk, w0) - w0), hi = static_cast<int>(min(ek, we) - w0);
          // Four cells' loads in flight, the additions in order: a block row of 14-25 blocks
          // (bcspwr10, bcsstk33) chained as many shared-memory latencies. Device call 7 of stop
          // 30 (H100, double, beside the loop as it was): replicated set 0.904x -> 0.918x
          // cuSPARSE, stencil 1.127x -> 1.139x. Into two partial sums (H200, stop 38 call 7,
          // where Nsight Compute had shown bcspwr10 spending 18% of its stall samples on this
          // loop's chain of additions): 0.880x -> 0.874x, bcspwr10 0.595x -> 0.585x; the
          // lane-per-run kernels spilled 16 bytes at 40 registers.
#pragma unroll 4
          for (int l = lo; l < hi; ++l) sum += sums[l][i];
          const unsigned row = (cur + kk) * R + i;
          if (kk == finished) open_sum = sum;
          else if (row < rows) {
            if (sk < b0 || ek > b1) atomicAdd(y + row, alpha * sum);
            else y[row] = beta == V(0) ? alpha * sum : alpha * sum + beta * y[row];
          }
        }
      }
      __syncwarp();
      if (open) {
        const int q = finished * R + (lane % R);
        if (lane == q % warp_size) carried[q % R] = open_sum;
      }
      __syncwarp();
      cur += finished;
      carrying = open;
      if (finished < warp_size) {
        if (Gather) cur_end = __shfl_sync(full_mask, e, finished);  // block row cur's, after `cur += finished`
        break;
      }
      bounds();
    }
    v0 += n;
  }
  if (Gather && gathered) fold();
  // The block row open at the tile's end runs on into the next tile: its part is added.
  if (carrying && lane < R) {
    const unsigned row = cur * R + lane;
    if (row < rows) atomicAdd(y + row, alpha * carried[lane]);
  }
}

template <class M, int R, class V>
void launch_block_rows(const mbr<V, I, device>& a, std::int64_t block_rows, V alpha, const V* x, V beta, V* y,
                       cudaStream_t s) {
  const int lanes = mbr_lanes_per_block_row(block_rows, static_cast<std::int64_t>(a.values.size()));
  const block_row_shape m{block_rows, a.rows, a.params.block_cols, lanes};
  block_row_kernel<M, R, V><<<launch_blocks(block_rows * lanes, block_threads), block_threads, 0, s>>>(
      m, a.block_row_ptr.data(), a.block_col_idx.data(), reinterpret_cast<const M*>(a.bitmaps.data()),
      a.value_ptr.data(), a.values.data(), alpha, x, beta, y);
}

template <class M, int R, class V>
void launch_tiles(const mbr<V, I, device>& a, std::int64_t block_rows, V alpha, const V* x, V beta, V* y,
                  gpu_context& ctx) {
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  const auto blocks = static_cast<std::int64_t>(a.block_col_idx.size());
  if (blocks == 0) {  // every block row is empty
    scale_y<V><<<launch_blocks(a.rows, block_threads), block_threads, 0, s>>>(a.rows, beta, y);
    check_cuda(cudaGetLastError(), "gpu::spmv: launching the mbr y scaling");
    return;
  }
  const std::int64_t tile_blocks = std::int64_t{warp_size} * mbr_tile_windows(blocks);
  const tile_split m{block_rows, a.rows, blocks, (blocks + tile_blocks - 1) / tile_blocks, tile_blocks};
  const I* first_row = assign_tiles(m, R, a.block_row_ptr.data(), beta, y, ctx, "gpu::spmv (mbr)");
  const int c = a.params.block_cols;
  auto kernel = &tile_kernel<M, R, V, true, false>;  // blocks of one row: a run is a block, always by block
  if (mbr_tile_gathers(blocks, block_rows)) kernel = &tile_kernel<M, R, V, true, true>;
  if constexpr (R > 1)
    if (!mbr_tile_by_block(static_cast<std::int64_t>(a.values.size()), blocks, R, c))
      kernel = &tile_kernel<M, R, V, false, false>;
  kernel<<<static_cast<unsigned>((m.tiles + tile_warps - 1) / tile_warps), tile_threads, 0, s>>>(
      m, c, row_multiplier(c), a.block_row_ptr.data(), a.block_col_idx.data(),
      reinterpret_cast<const M*>(a.bitmaps.data()), a.value_ptr.data(), a.values.data(), first_row, alpha, x, beta, y);
}

template <class M, int K, class V>
void launch_rows(const mbr<V, I, device>& a, std::int64_t ld, V alpha, const V* x, V beta, V* y, cudaStream_t s) {
  row_kernel<M, K, V><<<launch_blocks(a.rows, block_threads), block_threads, 0, s>>>(
      a.rows, a.params.block_rows, a.params.block_cols, a.block_row_ptr.data(), a.block_col_idx.data(),
      reinterpret_cast<const M*>(a.bitmaps.data()), a.value_ptr.data(), a.values.data(), ld, alpha, x, beta, y);
}

template <class M, class V>
void launch_group(int group, const mbr<V, I, device>& a, std::int64_t ld, V alpha, const V* x, V beta, V* y,
                  cudaStream_t s) {
  switch (group) {
    case 1: launch_rows<M, 1>(a, ld, alpha, x, beta, y, s); break;
    case 2: launch_rows<M, 2>(a, ld, alpha, x, beta, y, s); break;
    case 3: launch_rows<M, 3>(a, ld, alpha, x, beta, y, s); break;
    case 4: launch_rows<M, 4>(a, ld, alpha, x, beta, y, s); break;
    case 5: launch_rows<M, 5>(a, ld, alpha, x, beta, y, s); break;
    case 6: launch_rows<M, 6>(a, ld, alpha, x, beta, y, s); break;
    case 7: launch_rows<M, 7>(a, ld, alpha, x, beta, y, s); break;
    default: launch_rows<M, max_vectors>(a, ld, alpha, x, beta, y, s); break;
  }
}

// The number of block rows, ceil(rows / r), after checking what both kernels rely on.
template <class V>
std::int64_t checked_block_rows(const mbr<V, I, device>& a, const std::string& fn) {
  const int r = a.params.block_rows, c = a.params.block_cols, w = a.params.bitmap_bytes;
  if (r < 1 || c < 1 || r * c > 64 || w != mbr_bitmap_bytes(static_cast<std::int64_t>(r) * c))
    fail(errc::usage, fn + ": mbr block size " + std::to_string(r) + " x " + std::to_string(c) +
                          " with bitmap_bytes " + std::to_string(w) + " is not a valid mbr block");
  const std::int64_t block_rows = (a.rows + r - 1) / r;
  if (a.block_row_ptr.size() != static_cast<std::size_t>(block_rows) + 1 ||
      a.value_ptr.size() != static_cast<std::size_t>(block_rows) + 1)
    fail(errc::usage, fn + ": mbr block_row_ptr / value_ptr have " + std::to_string(a.block_row_ptr.size()) +
                          " / " + std::to_string(a.value_ptr.size()) + " elements, expected " +
                          std::to_string(block_rows + 1));
  return block_rows;
}

}  // namespace

template <class V>
void spmm(const mbr<V, I, device>& a, int k, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  if (k < 1) fail(errc::usage, "gpu::spmm: mbr k = " + std::to_string(k) + " vectors (needs k >= 1)");
  checked_block_rows(a, "gpu::spmm");
  if (a.rows == 0) return;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  const int w = a.params.bitmap_bytes;
  for (int j0 = 0; j0 < k; j0 += max_vectors) {
    const int group = std::min(max_vectors, k - j0);
    with_bitmap_type(w, [&](auto word) { launch_group<decltype(word)>(group, a, k, alpha, x + j0, beta, y + j0, s); });
    check_cuda(cudaGetLastError(), "gpu::spmm: launching the mbr row kernel (" + std::to_string(group) +
                                       " vectors, " + std::to_string(w) + "-byte bitmaps)");
  }
}

template <class V>
void spmv(const mbr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx, mbr_kernel kernel) {
  const std::int64_t block_rows = checked_block_rows(a, "gpu::spmv");
  const int r = a.params.block_rows, w = a.params.bitmap_bytes;
  if (kernel == mbr_kernel::automatic) kernel = mbr_spmv_kernel(r);
  if (kernel != mbr_kernel::rows && !mbr_lane_kernel_height(r))
    fail(errc::usage, "gpu::spmv: the mbr " + std::string(kernel == mbr_kernel::tiles ? "tile" : "block-row") +
                          " kernel takes blocks of 1, 2, 4 or 8 rows, not " + std::to_string(r));
  if (a.rows == 0) return;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  with_bitmap_type(w, [&](auto word) {
    using M = decltype(word);
    const auto by_height = [&](auto launch) {
      switch (r) {
        case 1: launch(std::integral_constant<int, 1>{}); break;
        case 2: launch(std::integral_constant<int, 2>{}); break;
        case 4: launch(std::integral_constant<int, 4>{}); break;
        default: launch(std::integral_constant<int, 8>{}); break;
      }
    };
    switch (kernel) {
      case mbr_kernel::block_rows:
        by_height([&](auto h) { launch_block_rows<M, decltype(h)::value>(a, block_rows, alpha, x, beta, y, s); });
        break;
      case mbr_kernel::tiles:
        by_height([&](auto h) { launch_tiles<M, decltype(h)::value>(a, block_rows, alpha, x, beta, y, ctx); });
        break;
      default: launch_rows<M, 1>(a, 1, alpha, x, beta, y, s); break;
    }
  });
  check_cuda(cudaGetLastError(), std::string("gpu::spmv: launching the mbr ") + mbr_kernel_name(kernel) +
                                     " kernel (" + std::to_string(r) + "-row blocks, " + std::to_string(w) +
                                     "-byte bitmaps)");
}

#define SPCONV_INST(V)                                                                      \
  template void spmv<V>(const mbr<V, I, device>&, V, const V*, V, V*, gpu_context&, mbr_kernel); \
  template void spmm<V>(const mbr<V, I, device>&, int, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
