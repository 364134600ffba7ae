// The row sums of row-sorted COO entries on the GPU (liu-thesis-csr5.txt sec. 5.2.3): the kernel
// behind COO SpMV (y = alpha * A * x + beta * y, launch_coo_spmv) and HYB's COO tail (y +=
// alpha * A * x, launch_coo_accumulate). Include from .cu files only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string_view>

#include "formats/device.hpp"
#include "formats/device_kernel.cuh"
#include "kernels/gpu/load_evict_first.cuh"
#include "kernels/gpu/scale_y.cuh"
#include "kernels/gpu/search.cuh"

namespace spconv::gpu::detail {

// Consecutive entries per lane: a warp takes a tile of 32 * coo_per_lane entries.
inline constexpr int coo_per_lane = 4;
inline constexpr int coo_block_threads = 256;  // a multiple of the warp
// Whether coo_accumulate adds the row sums through shared memory (Staged, see there): for
// matrices whose rows average fewer than 2 entries. A host-side choice, so that the kernel for
// longer rows holds no shared memory (which would take L1 from the gathers of x).
inline bool coo_stages_row_sums(std::int64_t rows, std::int64_t entries) { return entries < 2 * rows; }
// Whether COO SpMV writes each row once (coo_rows::write, below) rather than scaling y and then
// adding every row atomically (coo_rows::add): where rows average fewer than 4 entries, so that
// the 16 bytes a row that add mode moves more (y scaled, then read back by the atomics) are a
// large share of the row's own (16 bytes an entry). On longer rows write mode's tests per tile
// cost more than they save. Measured (H200, double, replicated set, stop 33 device call 6, the
// binary before beside this one): geometric mean 1.023x -> 1.071x cuSPARSE (83.1% -> 87.2% of
// the copy bandwidth); memplus_rhs1 (1 entry a row) 1.04x -> 1.90x, luxembourg (2.1) 0.97x ->
// 1.18x, arrow (3.0) 0.91x -> 1.07x, the others within 0.6%. Write mode on every matrix: 0.975x,
// losing 3-20% on rows of 4 entries and more (lp_ship04l, 6.4: 1.04x -> 0.83x).
inline bool coo_writes_rows(std::int64_t rows, std::int64_t entries) { return entries < 4 * rows; }

// out[k] = p[e0 + k] for k < coo_per_lane. `vector`: the run lies inside the array and p + e0
// is 16-byte aligned, so it is read as 16-byte words (one or two per array); otherwise element
// by element, entries at or past n left as they are. EvictFirst: marked evict-first in the L2
// cache (load_evict_first.cuh, which says where that pays).
template <bool EvictFirst = false, class T>
__device__ __forceinline__ void load_run(const T* __restrict__ p, std::int64_t e0, std::int64_t n, bool vector,
                                         T (&out)[coo_per_lane]) {
  constexpr int words = coo_per_lane * static_cast<int>(sizeof(T)) / 16;
  static_assert(words * 16 == coo_per_lane * static_cast<int>(sizeof(T)), "a run is whole 16-byte words");
  if (vector) {
    const uint4* q = reinterpret_cast<const uint4*>(p + e0);
#pragma unroll
    for (int w = 0; w < words; ++w) {
      uint4 word;
      if constexpr (EvictFirst) word = load_evict_first(q + w);
      else word = __ldg(q + w);
      std::memcpy(reinterpret_cast<char*>(out) + 16 * w, &word, 16);
    }
  } else {
#pragma unroll
    for (int k = 0; k < coo_per_lane; ++k) {
      if (e0 + k >= n) continue;
      if constexpr (EvictFirst) out[k] = load_evict_first(p + e0 + k);
      else out[k] = p[e0 + k];
    }
  }
}

// The row sums of a warp's 32 * E consecutive entries, E per lane (lane l holds entries l*E ..
// l*E + E - 1), whose rows r[] do not decrease along the entries (-1, never a row, marks entries
// past the end, which have product 0):
//  1. each lane sums its products p[] row by row: seg[k] is the sum of the row piece that entry
//     k closes, from the piece's first entry in this lane;
//  2. an inclusive segmented scan of the last pieces (tails) across the warp by shuffles (lane
//     k adds the tail d lanes up while that lane's tail row is its own: rows are sorted, so
//     the lanes in between hold only that row), so the lane where a row ends finds the row's
//     sum over the lanes before it in the lane before it;
// then at(r, k) is the sum of entry k's row from the warp's first entry of it up to entry k,
// where entry k is the last of its row in its lane. Every lane must construct it (shuffles).
template <class V, class I, int E>
struct warp_row_sums {
  V seg[E];
  V tail, carry;  // the scanned sum of the lane's last piece; the part of its head row in lanes before
  I head_row, next_head;  // r[0], and the next lane's r[0]

  __device__ __forceinline__ warp_row_sums(const I (&r)[E], const V (&p)[E], int lane) {
#pragma unroll
    for (int k = 0; k < E; ++k) seg[k] = k > 0 && r[k] == r[k - 1] ? seg[k - 1] + p[k] : p[k];
    const I tail_row = r[E - 1];
    head_row = r[0];
    tail = seg[E - 1];
    for (int d = 1; d < 32; d *= 2) {
      const V other = __shfl_up_sync(0xffffffffu, tail, d);
      const I other_row = __shfl_up_sync(0xffffffffu, tail_row, d);
      if (lane >= d && other_row == tail_row) tail += other;
    }
    const V before = __shfl_up_sync(0xffffffffu, tail, 1);
    const I before_row = __shfl_up_sync(0xffffffffu, tail_row, 1);
    carry = lane > 0 && before_row == head_row ? before : V(0);
    next_head = __shfl_down_sync(0xffffffffu, head_row, 1);
  }

  __device__ __forceinline__ V at(const I (&r)[E], int k) const {
    return k == E - 1 ? tail : seg[k] + (r[k] == head_row ? carry : V(0));
  }
};

// What coo_accumulate does with the rows a tile ends:
// - add: y[r] += alpha * sum, by atomicAdd (HYB's tail, whose rows the ELL kernel has written);
// - write: y = alpha * A * x + beta * y, every row written once, without atomics. A row the
//   tile holds whole is stored (y[r] read only where beta != 0). A row split between tiles
//   (the tile's first row, when the entry before the tile holds it too, or its last, when the
//   entry after does) leaves its part in the tile's slot of coo_parts, and coo_join_parts
//   then sums the parts in tile order and writes the row (as CSR5's calibrator does,
//   liu-thesis-csr5.txt sec. 8.5.1). The empty rows after an entry's row are written by the
//   tile holding the entry (tile 0 also those before the first entry, the last tile those
//   after the last).
// Writing each row once, rather than scaling all of y first and adding every row atomically,
// takes y's traffic from a write, a read by the atomics (y misses L2 on the replicated set) and
// a write back to one write: 24 bytes a row against the 16 a COO entry reads. A first kernel
// setting the split rows to beta * y, a thread per tile boundary reading three entries' rows,
// cost 51 us of bcsstk13's 0.55 ms (replicated, H200, Nsight Compute, stop 33 device call 4):
// those scattered reads are what the parts avoid.
enum class coo_rows { add, write };

// Per tile, for coo_rows::write: the alpha-scaled sums of its parts of split rows, and how its
// first and last rows continue (see coo_join_parts).
template <class V, class I>
struct coo_parts {
  V* first;              // the part of the tile's first row, when it began before the tile
  V* last;               // the part of the tile's last row, when that row began here and goes on
  I* head_row;           // that last row, or -1
  std::uint8_t* through; // 1 where one row runs through the whole tile, from before it to after
};

// A lane's entries' rows (-1 past n) and the row of the entry after them (-1 past n).
template <class I>
struct lane_rows {
  I r[coo_per_lane];
  I following;
  __device__ lane_rows(const I (&rows)[coo_per_lane], I after) : following(after) {
#pragma unroll
    for (int k = 0; k < coo_per_lane; ++k) r[k] = rows[k];
  }
};

// write mode: the empty rows after each of the lane's entries' rows (up to the next entry's
// row, or up to `rows` after the matrix's last entry) and, where `leading` (tile 0, lane 0),
// those before the first entry, set to beta * y, the warp's lanes together. Out of line: few
// tiles come here, and the coo_accumulate loop's code stays small. Every lane of the warp must
// call it (shuffles).
template <class V, class I>
__device__ __noinline__ void write_empty_rows(lane_rows<I> l, bool leading, std::int64_t rows, V beta, V* y) {
  constexpr int E = coo_per_lane;
  const auto empty_row = [&](long long g) { y[g] = scaled_y(beta, y, g); };
  warp_for_each_in_ranges(0, leading ? static_cast<long long>(l.r[0]) : 0, empty_row);
  for (int k = 0; k < E; ++k) {
    long long gap = 0;
    if (l.r[k] >= 0) {
      const I following = k + 1 < E ? l.r[k + 1] : l.following;
      gap = max((following >= 0 ? static_cast<long long>(following) : rows) - l.r[k] - 1, 0LL);
    }
    warp_for_each_in_ranges(static_cast<long long>(l.r[k]) + 1, gap, empty_row);
  }
}

// A warp per tile of 32 * coo_per_lane consecutive entries, coo_per_lane consecutive entries
// per lane (read as 16-byte words where the tile is whole and the arrays aligned), summed by
// warp_row_sums; each row the tile ends is then added to (or written to) y once, by the lane
// where it ends.
// Staged (rows of fewer than 2 entries, coo_stages_row_sums): the lanes write their (row, sum)
// pairs to consecutive slots of a per-warp buffer in shared memory (an exclusive scan of the
// counts gives the slots) and the warp adds slot s by lane s % 32: whole-warp stores and
// atomics on consecutive elements rather than lanes 4 rows apart.
// In add mode every addition to y is an atomicAdd whose result is unused (a reduction the L2
// carries out, nothing for the thread to wait for): rows with entries in two tiles need it,
// and a plain y[r] += s waits for the load of y[r] (measured slower on rows of 1 entry, H200).
// The order of the additions to a split row therefore varies from run to run (within the
// bound of specs/gpu.md); write mode adds in a fixed order.
// Measured (H100, double, replicated set, add mode after y = beta * y): a warp per 32 entries,
// one entry per lane, a scan and an atomic per row piece for every 32 entries reached 0.81x
// cuSPARSE; 4 entries per lane with each lane adding its own rows reached 0.92x but 0.70x on
// rows of 1 entry, whose atomics then hit addresses 4 rows apart; staging every tile's rows
// took those to 0.99x but cost 7-16% where rows hold 2 to 21 entries (bcspwr10 0.97x -> 0.81x,
// ca-AstroPh 0.98x -> 0.86x), and staging only the tiles that end more than 64 rows, in the
// same kernel, still cost ca-AstroPh 6% (0.92x): the kernel's shared memory alone takes L1
// from the gathers of x. 8 entries a lane measured slower than 4 on the H200 (stop 33, device
// call 2: 0.988x against 1.022x cuSPARSE).
template <class V, class I, bool Staged, coo_rows Mode>
__global__ void __launch_bounds__(coo_block_threads)
    coo_accumulate(std::int64_t n, std::int64_t rows, const I* __restrict__ row, const I* __restrict__ col,
                   const V* __restrict__ val, V alpha, const V* __restrict__ x, V beta, V* y, bool aligned,
                   coo_parts<V, I> parts) {
  constexpr int warp = 32, E = coo_per_lane;
  constexpr std::int64_t tile = std::int64_t{warp} * E;
  const int lane = static_cast<int>(threadIdx.x % warp);
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / warp;
  for (std::int64_t base = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp * tile; base < n;
       base += warps * tile) {
    const std::int64_t e0 = base + std::int64_t{lane} * E;
    const bool vector = aligned && base + tile <= n;  // the same in every lane of the warp
    // Entries past n take row -1 (never added to y) and value 0.
    I r[E], c[E];
    V v[E];
#pragma unroll
    for (int k = 0; k < E; ++k) {
      r[k] = I(-1);
      c[k] = I(0);
      v[k] = V(0);
    }
    load_run(row, e0, n, vector, r);
    load_run(col, e0, n, vector, c);
    load_run(val, e0, n, vector, v);
    // write: the rows of the entries just before and after the tile (-1: none). A row the tile
    // ends that is one of them is split between tiles.
    I prev = I(-1), next = I(-1);
    if constexpr (Mode == coo_rows::write) {
      if (base > 0) prev = row[base - 1];
      if (base + tile < n) next = row[base + tile];
    }
    V p[E];
#pragma unroll
    for (int k = 0; k < E; ++k) p[k] = r[k] >= 0 ? v[k] * x[c[k]] : V(0);
    const warp_row_sums<V, I, E> sums(r, p, lane);
    // Entry k ends its row in this tile: the next entry starts another row, or (the last
    // entry) the next lane does, or the tile ends. Rows past n (-1) are never added.
    bool ends[E];
    int count = 0;
#pragma unroll
    for (int k = 0; k < E; ++k) {
      const I after = k + 1 < E ? r[k + 1] : lane == warp - 1 ? I(-2) : sums.next_head;
      ends[k] = r[k] >= 0 && after != r[k];
      count += ends[k] ? 1 : 0;
    }
    const auto row_sum = [&](int k) { return alpha * sums.at(r, k); };
    const std::int64_t t = base / tile;
    // Row rr's part in this tile, s = alpha * its sum.
    const auto put = [&](I rr, V s) {
      if constexpr (Mode == coo_rows::add) atomicAdd(y + rr, s);
      else if (rr == prev) parts.first[t] = s;
      else if (rr == next) parts.last[t] = s;
      else y[rr] = beta == V(0) ? s : s + beta * y[rr];
    };
    if constexpr (Mode == coo_rows::write) {
      // How the tile's first and last rows go on (next >= 0 only where the tile is whole, so
      // its last row is lane 31's last).
      const I last_row = __shfl_sync(0xffffffffu, r[E - 1], warp - 1);
      const bool goes_on = next >= 0 && last_row == next, through = goes_on && r[0] == prev && r[0] == next;
      if (lane == 0) {
        parts.through[t] = through ? 1 : 0;
        parts.head_row[t] = goes_on && !through ? last_row : I(-1);
      }
    }
    if constexpr (!Staged) {
#pragma unroll
      for (int k = 0; k < E; ++k)
        if (ends[k]) put(r[k], row_sum(k));
    } else {
      __shared__ I slot_row[coo_block_threads / warp][warp * E];
      __shared__ V slot_sum[coo_block_threads / warp][warp * E];
      I* const rows_out = slot_row[threadIdx.x / warp];
      V* const sums_out = slot_sum[threadIdx.x / warp];
      int first = group_inclusive_sum(count, warp);  // then less count: this lane's first slot
      const int total = __shfl_sync(0xffffffffu, first, warp - 1);
      first -= count;
#pragma unroll
      for (int k = 0; k < E; ++k)
        if (ends[k]) {
          rows_out[first] = r[k];
          sums_out[first] = row_sum(k);
          ++first;
        }
      __syncwarp();
      for (int slot = lane; slot < total; slot += warp) put(rows_out[slot], sums_out[slot]);
      __syncwarp();  // the buffer is refilled by the next tile
    }
    if constexpr (Mode == coo_rows::write) {
      // A lane's rows leave none out when they rise by as many as the rows it ends: the row
      // after its last entry less its first row (the steps between its entries, telescoped)
      // equals its count of ends (less the end lane 31 takes at the tile's end, where its last
      // row goes on). One vote a tile, then, on matrices without empty rows.
      const I following = lane == warp - 1 ? next : sums.next_head;  // the row after the lane's entries
      bool gaps = base == 0 && lane == 0 && r[0] > 0;
      if (r[0] >= 0) {
        const long long after = r[E - 1] >= 0 && following >= 0 ? static_cast<long long>(following) : rows;
        const int rises = count - (lane == warp - 1 && after == r[E - 1] ? 1 : 0);
        gaps = gaps || after - r[0] != rises;
      }
      if (__any_sync(0xffffffffu, gaps))
        write_empty_rows(lane_rows<I>{r, following}, base == 0 && lane == 0, rows, beta, y);
    }
  }
}

// write mode, after coo_accumulate: each row split between tiles summed from its parts, in
// tile order, and written once, by the thread of the tile where it begins (head_row). Most
// such rows end within a few tiles, which that thread walks itself (a tile of 128 entries
// costs a dependent load, about 60 ns). A row still open after join_walk tiles (a long row
// among short ones: arrow's first row spans 363 tiles) is walked by the whole warp, 32 tiles a
// step: a serial walk made arrow as it is 7 -> 29 us against scaling y and adding atomically
// (H200, stop 33 device call 6).
inline constexpr int join_walk = 4;
template <class V, class I>
__global__ void coo_join_parts(std::int64_t tiles, coo_parts<V, I> parts, V beta, V* y) {
  constexpr int warp = 32;
  const int lane = static_cast<int>(threadIdx.x % warp);
  // Whole warps take part in every step (grid_stride is a multiple of the warp).
  for (std::int64_t t = first_index(); t - lane < tiles; t += grid_stride()) {
    const I r = t < tiles ? parts.head_row[t] : I(-1);
    V sum = r >= 0 ? parts.last[t] : V(0);
    // The row goes on into tile t + 1 (so that tile exists) and through every tile marked so;
    // the last tile is never marked.
    std::int64_t u = t + 1;
    bool open = r >= 0;
    for (int step = 0; step < join_walk && open; ++step, ++u) {
      sum += parts.first[u];
      open = parts.through[u] != 0;
    }
    for (unsigned todo = __ballot_sync(0xffffffffu, open); todo != 0; todo &= todo - 1) {
      const int owner = __ffs(static_cast<int>(todo)) - 1;
      V part = V(0);
      for (std::int64_t w = __shfl_sync(0xffffffffu, u, owner) + lane;; w += warp) {
        const bool on = w < tiles && parts.through[w] != 0;
        const unsigned ends = __ballot_sync(0xffffffffu, !on);  // the row ends at the first
        if (ends == 0 || lane < __ffs(static_cast<int>(ends))) part += parts.first[w];
        if (ends != 0) break;
      }
      for (int d = warp / 2; d > 0; d /= 2) part += __shfl_xor_sync(0xffffffffu, part, d);
      if (lane == owner) sum += part;
    }
    if (r >= 0) y[r] = sum + scaled_y(beta, y, r);
  }
}

// Queues coo_accumulate in `Mode` over n > 0 entries on `stream` (staged: see
// coo_stages_row_sums); `what` names the caller in errors.
template <coo_rows Mode, class V, class I>
void launch_coo_rows(std::int64_t n, std::int64_t rows, const I* row, const I* col, const V* val, V alpha, const V* x,
                     V beta, V* y, bool staged, coo_parts<V, I> parts, cudaStream_t stream, std::string_view what) {
  constexpr int threads = coo_block_threads;
  const bool aligned = on_16_bytes(row, col, val);
  // A warp per tile, whole warps: every lane of a warp takes part in the shuffles.
  const std::int64_t tiles = (n + 32 * coo_per_lane - 1) / (32 * coo_per_lane);
  const unsigned blocks = launch_blocks(tiles * 32, threads);
  if (staged)
    coo_accumulate<V, I, true, Mode>
        <<<blocks, threads, 0, stream>>>(n, rows, row, col, val, alpha, x, beta, y, aligned, parts);
  else
    coo_accumulate<V, I, false, Mode>
        <<<blocks, threads, 0, stream>>>(n, rows, row, col, val, alpha, x, beta, y, aligned, parts);
  check_cuda(cudaGetLastError(), what);
}

// y += alpha * A * x over n row-sorted entries (HYB's tail).
template <class V, class I>
void launch_coo_accumulate(std::int64_t n, const I* row, const I* col, const V* val, V alpha, const V* x, V* y,
                           bool staged, cudaStream_t stream, std::string_view what) {
  if (n == 0) return;
  launch_coo_rows<coo_rows::add>(n, std::int64_t{0}, row, col, val, alpha, x, V(1), y, staged, coo_parts<V, I>{},
                                 stream, what);
}

// y = alpha * A * x + beta * y for a matrix of `rows` rows and n row-sorted entries: each row
// written once (coo_rows::write; the parts of split rows in ctx's workspace, two values, an
// index and a byte a tile of 128 entries) where coo_writes_rows, else y scaled and the rows
// added.
template <class V, class I>
void launch_coo_spmv(std::int64_t rows, std::int64_t n, const I* row, const I* col, const V* val, V alpha, const V* x,
                     V beta, V* y, bool staged, gpu_context& ctx, std::string_view what) {
  constexpr int threads = coo_block_threads;
  const auto stream = static_cast<cudaStream_t>(ctx.stream());
  if (n == 0 || !coo_writes_rows(rows, n)) {
    scale_y<V><<<launch_blocks(rows, threads), threads, 0, stream>>>(rows, beta, y);
    check_cuda(cudaGetLastError(), what);
    launch_coo_accumulate(n, row, col, val, alpha, x, y, staged, stream, what);
    return;
  }
  const std::int64_t tiles = (n + 32 * coo_per_lane - 1) / (32 * coo_per_lane);
  const std::size_t sums = round_up(tiles * sizeof(V)), heads = round_up(tiles * sizeof(I));
  auto* scratch = static_cast<unsigned char*>(ctx.workspace(2 * sums + heads + tiles));
  const coo_parts<V, I> parts{.first = reinterpret_cast<V*>(scratch),
                              .last = reinterpret_cast<V*>(scratch + sums),
                              .head_row = reinterpret_cast<I*>(scratch + 2 * sums),
                              .through = scratch + 2 * sums + heads};
  launch_coo_rows<coo_rows::write>(n, rows, row, col, val, alpha, x, beta, y, staged, parts, stream, what);
  if (tiles > 1) {
    coo_join_parts<V, I><<<launch_blocks(tiles, threads), threads, 0, stream>>>(tiles, parts, beta, y);
    check_cuda(cudaGetLastError(), what);
  }
}

}  // namespace spconv::gpu::detail
