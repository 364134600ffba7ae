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
// Block order is the order of the positions (block row, q, i*c + j), and consecutive block rows
// hold consecutive entries (block row br's start at row_ptr[br * r]). So for a run of block rows
// whose columns span few blocks, one bit per position (the block row's spanned block columns
// times r*c, run after run) is a bit array in block order: each entry sets its bit, and its
// rank among the run's entries is the number of set bits below its own, one popcount scan of
// the words; it opens its block when no bit of its block lies below its own. Counting, not
// searching or sorting: O(1) per entry plus a word per 32 positions, in a warp's share of
// shared memory (order_counted). Such runs are most block rows: a banded or clustered matrix
// spans few block columns per block row (a block row of 8 x 8 blocks may span 4096 columns).
//
// Of the other block rows (a wider span, a sparse one of over 128 bits per entry), runs of
// few entries over few rows, most block rows of graph-like matrices, are sorted by a warp in
// the counting pass (order_sorted: a bitonic sort of their keys by shuffles); block rows of
// more entries over at most 8 rows of at most 32 entries each (stencil-like matrices) are
// merged there, a warp a block row (order_merged: bitonic merges of the rows, each already
// sorted), and other block rows of at most 512 entries over at most 32 rows are sorted by the
// same network after each slot of 32 entries is sorted (graph-like matrices of long rows; those
// of over 256 entries by a kernel of their own, order_slot_rows).
// The rest, and blocks of more than 64 positions (BCSR up to 16 x 16) or one row each (r = 1,
// where nothing is searched), take their ranks by searching (order_searched). With the rows
// sorted, the
// entries that come before the entry (i, j) of a block row in block order (q = j / c) are
//   - in each row above i, those of columns < (q + 1) * c,
//   - in row i, those before it,
//   - in each row below i, those of columns < q * c,
// one binary search per other row of the block row. The entry opens (heads) its block when no
// row above holds a column in [q * c, (q + 1) * c) and the entry before it in row i lies left
// of q * c. Work is split by entries, in chunks of `chunk` (those of each such block row, which
// the counting pass lists, or all entries when r*c > 64), so a block row of millions of entries
// spreads over many warps.
//
// An inclusive scan of the heads in block order (by word of 4 flags) numbers the blocks; the
// heads before a block row's first entry are its block pointer.
#pragma once
#include <cuda_runtime.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cub/device/device_scan.cuh>
#include <string>

#include "formats/csr.hpp"
#include "formats/device.hpp"
#include "formats/device_kernel.cuh"
#include "kernels/gpu/resident_blocks.cuh"
#include "kernels/gpu/search.cuh"

namespace spconv::gpu::block_rows {
// Internal linkage: each of the two converters compiles its own copy of these kernels.
namespace {

using I = std::int32_t;
constexpr int threads = 256;  // a multiple of the warp size: the kernels step by warps
constexpr int warps_per_block = threads / 32;
constexpr unsigned full_warp = 0xffffffffu;

// A warp's shared memory in order_counted: its bit array of span_words words, the set bits
// before each quad of words as 16 bits (at most span_bits < 2^16), and a ring of stage_bytes
// for the entries of the walks' next steps (for_each_entry). 8 warps x 6 KiB = 48 KiB a block,
// 4 blocks a multiprocessor (as the 64 registers a thread allow), which leaves L1 60 KiB: 54 KiB
// a block (a count per word and a ring of 768 bytes) left it 28 KiB, and the merging pass,
// which gathers values through L1, lost 3% (27-point stencil, H100, 4.61 -> 4.72 SpMV-times).
constexpr int span_words = 1024;
constexpr int span_bits = 32 * span_words;
constexpr int stage_bytes = 1536;
constexpr int counted_warp_bytes =
    span_words * sizeof(std::uint32_t) + span_words / 4 * sizeof(std::uint16_t) + stage_bytes;
constexpr int counted_shared_bytes = warps_per_block * counted_warp_bytes;
// Bits of span per entry beyond which a block row is searched rather than counted (4 words).
constexpr std::int64_t sparse_span = 128;
// order_counted cuts the sequence of block rows and entries into tasks of up to this many
// items, a warp's unit of work: never more block rows, nor more entries besides those of its
// last block row. Smaller matrices get smaller tasks (down to min_task_items), so that there
// are about tasks_wanted of them, several per warp the device holds at once (4224 on an H100).
// Smaller tasks end the pass with less imbalance between warps, and a block (8 warps, one
// task each) holds its place on the multiprocessor until its last warp is done (yet blocks of
// 4, 2 or 1 warps, each warp keeping its 6 KiB, measured no better in stop 26: 5.07 SpMV-times
// with 8, 5.08, 5.12, 5.09; Groebner_id2003_aug 8.36, 8.18, 8.80, 9.27). Stop 24
// (CSR -> MBR, H100, double, replicated set / stencil SpMV-times, each in one device call):
// 4096 -> 1024 items, 5.64 / 4.73 -> 5.47 / 4.57 (512: 5.55 / 4.67). Stop 25, with the
// walks' entries staged and the 16-way search for the task's block rows: 1024 -> 512, 5.32 /
// 4.55 -> 5.24 / 4.46 (bcsstk33 6.97 -> 6.18, sparse-images 8.31 -> 7.74; 2048: 5.52 / 4.67).
// On the H200 (stop 37, device call 5): 512 -> 384, 5.10 / 4.33 -> 5.22 / 4.22; 256, 5.47 / 4.79.
constexpr std::int64_t task_items = 512, min_task_items = 256, tasks_wanted = 8192;
// Entries per warp and step of order_searched: one search over all rows serves the chunk, the
// rest search the few rows of its block row.
constexpr int chunk = 128;

// Bits all zero: +0.0, BCSR's fill value (formats/bcsr.hpp), told by bits since -0.0 == 0.
__device__ __forceinline__ bool all_bits_zero(float v) { return __float_as_uint(v) == 0u; }
__device__ __forceinline__ bool all_bits_zero(double v) { return __double_as_longlong(v) == 0; }

// The row holding entry k, searched in [lo, hi] where row_ptr[lo] <= k < row_ptr[hi + 1]:
// the last row whose start is <= k (empty rows share their start with the next row).
__device__ __forceinline__ std::int64_t row_holding(const I* row_ptr, std::int64_t lo, std::int64_t hi,
                                                    std::int64_t k) {
  return upper_bound(row_ptr, lo, hi + 1, k) - 1;
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

// x / d by a multiplication, for the small quotients of order_counted: with m = floor((2^32 - 1)
// / d) + 1 = 2^32 / d + e (0 <= e <= 1), x * m / 2^32 = x / d + x * e / 2^32, whose excess is
// below 1 / d for x < 2^32 / d and so never reaches the next multiple of 1 / d: the high word is
// exactly floor(x / d). (d = 1 would need m = 2^32: it returns x.) A runtime division takes
// several times the instructions, and order_counted needs two per entry and pass.
struct small_divisor {
  std::uint32_t d, m;
  __device__ explicit small_divisor(std::uint32_t divisor)
      : d(divisor), m(divisor > 1 ? 0xffffffffu / divisor + 1 : 0) {}
  __device__ std::uint32_t operator()(std::uint32_t x) const { return d > 1 ? __umulhi(x, m) : x; }
};

// The first block row br in [0, mb] with br + row_ptr[min(br * r, rows)] >= target, for a
// target <= mb + nnz (block row mb reaches it). The sum grows by at least 1 per block row and
// by the entries of each, so cutting it at multiples of the task size bounds both in a task.
__device__ std::int64_t first_block_row_at(const I* row_ptr, std::int64_t rows, int r, std::int64_t mb,
                                           std::int64_t target) {
  std::int64_t lo = 0, hi = mb;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (mid + row_ptr[mid * r < rows ? mid * r : rows] < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// first[t] = the first block row of order_counted's task t (t <= tasks; first[tasks] = mb), a
// thread each: the searches of all tasks run side by side here, where a warp starting its
// task waited on each step of its own (Nsight Compute, H100, Groebner_id2003_aug replicated:
// 12% of the counting pass's stall samples with a binary search, 10% with a 16-way search by
// half warps). A second kernel costs the matrices as they are some microseconds.
// items = block rows + entries, as the host counts them.
__global__ void find_task_starts(const I* row_ptr, std::int64_t rows, int r, std::int64_t items,
                                 std::int64_t items_per_task, std::int64_t tasks, I* first) {
  const std::int64_t mb = (rows + r - 1) / r;
  for (std::int64_t t = first_index(); t <= tasks; t += grid_stride()) {
    const std::int64_t target = t * items_per_task;
    first[t] = static_cast<I>(first_block_row_at(row_ptr, rows, r, mb, target < items ? target : items));
  }
}

// cp.async of `Bytes` (4 or 8) from global to shared memory, its group commit and the wait for
// all groups but the last N, with memory clobbers so that the compiler keeps the shared
// memory's reads and writes on their side of them (the wait in cuda_pipeline_primitives.h
// has none).
template <int Bytes>
__device__ __forceinline__ void copy_async(void* to_shared, const void* from_global) {
  static_assert(Bytes == 4 || Bytes == 8);
  const auto shared_address = static_cast<unsigned>(__cvta_generic_to_shared(to_shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(shared_address),
               "l"(__cvta_generic_to_global(from_global)), "n"(Bytes)
               : "memory");
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_copies_but() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// What a walk of for_each_entry reads of each entry, copied from global to shared memory by
// cp.async (sm_80 on) a few steps before the step that uses it: the copies need no registers
// while in flight, so a warp has several steps' loads under way where a load into registers
// a step ahead made the counting pass spill (stop 24). `slots` steps fit the ring. Each step
// had waited for its own loads: 37% of the pass's stall samples on Groebner_id2003_aug
// replicated (Nsight Compute, H100), whose block rows of 280 entries are all counted.
struct columns_staged {  // the first walk: columns
  static constexpr int slots = 8;
  static_assert(slots * 32 * sizeof(I) <= stage_bytes);
  const I* col;
  I* ring;  // slots x 32
  __device__ void fetch(int slot, std::uint32_t k) const {
    copy_async<sizeof(I)>(ring + slot * 32 + threadIdx.x % 32, col + k);
  }
  __device__ I read(int slot) const { return ring[slot * 32 + threadIdx.x % 32]; }
};

// An entry's column and value, as order_counted's second walk reads them.
template <class V>
struct column_value {
  I col;
  V val;
};

template <class V>
struct entries_staged {  // the second walk: columns and values
  static constexpr int slots = 4;
  static_assert(slots * 32 * (sizeof(I) + sizeof(V)) <= stage_bytes);
  const I* col;
  const V* val;
  V* val_ring;  // slots x 32, then the columns' slots x 32
  __device__ I* col_ring() const { return reinterpret_cast<I*>(val_ring + slots * 32); }
  __device__ void fetch(int slot, std::uint32_t k) const {
    const unsigned at = slot * 32 + threadIdx.x % 32;
    copy_async<sizeof(V)>(val_ring + at, val + k);
    copy_async<sizeof(I)>(col_ring() + at, col + k);
  }
  __device__ column_value<V> read(int slot) const {
    const unsigned at = slot * 32 + threadIdx.x % 32;
    return {col_ring()[at], val_ring[at]};
  }
};

// Calls f(active, i, entry) in every lane for the entries k of [ea, eb), the entries of
// the rows [ra, rb) (row_ptr[ra] == ea, row_ptr[rb] == eb), i being the row holding k: 32
// consecutive entries per step, lane l on the step's l-th (coalesced); lanes past eb get active
// false and the last entry, so that f may shuffle. `entry` is what `source` (columns_staged,
// entries_staged) copied of k, source.slots steps ahead; a step's slot is refilled after f,
// which has used what it read there.
// Rows come from a window rather than a search per entry: lane l holds the start of row
// base + 1 + l, and each lane counts those at or before its entry: where the window's starts
// are distinct, by one OR of the starts inside the step (rows_at), else by a binary search over
// the lanes by shuffles (sorted starts; empty rows share theirs). The window moves on by 32
// rows only when a step's entries pass it, so most steps read no row start: a window read at
// every step put a memory latency between consecutive steps (each window following from the
// last step's row), 60% of the counting pass's stalls on Groebner_id2003_aug and bcsstk13
// (Nsight Compute, H100).
template <class S, class F>
__device__ __forceinline__ void for_each_entry(const I* row_ptr, I ea, I eb, I ra, I rb, const S& source, F&& f) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  // Unsigned positions: k0 + 32 * slots may pass 2^31 - 1 (it stays below 2^32).
  const std::uint32_t end = static_cast<std::uint32_t>(eb);
  // Every step commits one group of copies (empty past eb), so that waiting for all but the
  // last slots - 1 groups waits for the step about to run.
  const auto fetch = [&](int slot, std::uint32_t k0) {
    if (k0 < end) source.fetch(slot, k0 + lane < end ? k0 + lane : end - 1);
    commit_copies();
  };
  for (int m = 0; m < S::slots; ++m) fetch(m, static_cast<std::uint32_t>(ea) + 32 * m);
  // Rows base + 1 .. base + 32; past rb the start of row rb, eb, which lies after every k.
  // Row base starts at or before every entry still to come.
  std::uint32_t base = static_cast<std::uint32_t>(ra);
  const auto window = [&] {
    const std::uint32_t p = base + 1 + lane;
    return row_ptr[p < static_cast<std::uint32_t>(rb) ? p : rb];
  };
  I start = window();
  // Whether the window's starts below eb are distinct (no empty row among them), so that the
  // rows of a step's entries follow from one mask of the starts inside the step (rows_at).
  const auto distinct = [&] {
    const I next = __shfl_down_sync(full_warp, start, 1);
    return !__any_sync(full_warp, lane < 31 && start == next && start < eb);
  };
  bool exact = distinct();
  // The starts at or before entry k0 + o, o < 32 (this lane's k): those before the step, and
  // those inside it up to o, one bit each at their offset (distinct, and a start of eb or later
  // lies past every o). One OR over the warp where the search by shuffles took six.
  const auto rows_at = [&](std::uint32_t k0, std::uint32_t o) {
    const std::uint32_t rel = static_cast<std::uint32_t>(start) - k0;  // wraps past 31 before k0
    const unsigned inside = __reduce_or_sync(full_warp, rel < 32 ? 1u << rel : 0u);
    const int before = __popc(__ballot_sync(full_warp, static_cast<std::uint32_t>(start) < k0));
    return before + __popc(inside & ((2u << o) - 1u));
  };
  int slot = 0;
  for (std::uint32_t k0 = static_cast<std::uint32_t>(ea); k0 < end; k0 += 32) {
    const bool active = k0 + lane < end;
    const I k = static_cast<I>(active ? k0 + lane : end - 1);
    wait_copies_but<S::slots - 1>();
    const auto entry = source.read(slot);
    std::uint32_t i = base;
    bool found = false;
    for (;;) {
      const int n = exact ? rows_at(k0, static_cast<std::uint32_t>(k) - k0) : warp_count_at_or_below(start, k);
      // Fewer than 32 starts at or before k: row base + n holds k. All 32: move the window on
      // (row base + 32 starts at or before this step's last entry, so before every later one).
      if (!found) {
        i = base + n;
        found = n < 32;
      }
      if (__all_sync(full_warp, found)) break;
      base += 32;
      start = window();
      exact = distinct();
    }
    f(active, static_cast<I>(i), entry);
    fetch(slot, k0 + 32 * S::slots);
    slot = slot + 1 < S::slots ? slot + 1 : 0;
  }
}

// Adds the stored zeros the warp's lanes counted to *zero_count where given: one atomic per warp
// at most. Every lane of the warp must reach it (a full-mask reduction).
__device__ __forceinline__ void add_warp_zeros(I* zero_count, I zeros, int lane) {
  if (zero_count == nullptr) return;
  const I total = __reduce_add_sync(full_warp, zeros);
  if (lane == 0 && total > 0) atomicAdd(zero_count, total);
}

// Lists the wide block rows among a warp's 32 (lane l: block row l of the group, `wide`,
// its entries [e0, e1); lanes from n on hold none) for order_searched: each run of
// consecutive wide block rows, whose entries are consecutive, as chunks of up to `chunk`
// entries, chunk d being the pair chunks[2d], chunks[2d + 1] = its first and end entry. A wide
// block row holds at least 2 entries (it spans more than one block), so the pairs fit in nnz
// elements. One atomic per warp: short wide block rows are the rule in graph-like matrices.
__device__ __forceinline__ void list_wide_runs(bool wide, int n, I e0, I e1, I* chunks, I* chunk_count) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const unsigned wide_lanes = __ballot_sync(full_warp, wide);
  if (wide_lanes == 0) return;
  const unsigned below = (1u << lane) - 1u;
  const bool opens = wide && (lane == 0 || !((wide_lanes >> (lane - 1)) & 1u));
  // The run's last block row: the lane before the next one that is not wide (or n).
  const unsigned later_narrow = ~wide_lanes & ~below & ~(1u << lane);
  const int stop = later_narrow != 0 ? min(__ffs(static_cast<int>(later_narrow)) - 1, n) : n;
  const I run_end = __shfl_sync(full_warp, e1, opens ? stop - 1 : lane);
  const I count = opens ? static_cast<I>((std::int64_t{run_end} - e0 + chunk - 1) / chunk) : 0;
  const I incl = group_inclusive_sum(count);
  I base = 0;
  if (lane == 31) base = atomicAdd(chunk_count, incl);
  base = __shfl_sync(full_warp, base, 31) + incl - count;
  for (I m = 0; m < count; ++m) {
    const std::int64_t from = e0 + std::int64_t{m} * chunk;
    chunks[2 * (base + m)] = static_cast<I>(from);
    chunks[2 * (base + m) + 1] = static_cast<I>(min(from + chunk, std::int64_t{run_end}));
  }
}

// Lists the block rows of the lanes where `listed` (block row br, its first block column q_lo)
// for order_slot_rows' sort by 16 slots, from the end of the chunk array down (`end` = chunks +
// nnz): pair d at end[-2d - 2], end[-2d - 1]. Such a block row holds over 256 entries, so the
// pairs and list_wide_runs' chunks (at most one pair per 2 entries) fit in nnz elements together.
__device__ __forceinline__ void list_slot_rows(bool listed, std::int64_t br, std::uint32_t q_lo, I* end, I* count) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const unsigned lanes = __ballot_sync(full_warp, listed);
  if (lanes == 0) return;
  I base = 0;
  if (lane == 0) base = atomicAdd(count, __popc(lanes));
  const I d = __shfl_sync(full_warp, base, 0) + __popc(lanes & ((1u << lane) - 1u));
  if (listed) {
    end[-2 * d - 2] = static_cast<I>(br);
    end[-2 * d - 1] = static_cast<I>(q_lo);
  }
}

// Wide block rows small enough to sort (see order_counted): at most sort_entries entries over at
// most 32 rows (a lane per row start).
constexpr int sort_entries = 64;
constexpr int sort_rows = 32;

// Block order by sorting, for a group of consecutive wide block rows [br0, br0 + nb) holding
// the entries [ea, eb) (at most sort_entries of them, over at most sort_rows rows): every
// entry gets the key (block row in the group, block column q, place i*c + j inside the block,
// its index in the group), the warp sorts the keys (a bitonic sort, two per lane, by
// shuffles), and the entry of sorted position p goes to block-order position ea + p. Keys are
// distinct (no two entries share row and column), so the sort fixes the order; an entry opens
// its block when the key before it has another block row or block column. Writes like
// order_searched (out, head, place, head_col; the stored zeros counted into zeros).
template <class V>
__device__ void order_sorted(const I* row_ptr, std::int64_t rows, const I* col, const V* val, int r, int c,
                             std::int64_t br0, int nb, I ea, I eb, V* out, std::uint8_t* head, std::uint8_t* place,
                             I* head_col, bool count_zeros, I& zeros) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t row0 = br0 * r, row_end = min(row0 + std::int64_t{nb} * r, rows);
  const int nrows = static_cast<int>(row_end - row0);
  // Lane l holds the start of row row0 + l; lanes past the group hold eb, after every entry.
  const I start = lane < nrows ? row_ptr[row0 + lane] : eb;
  constexpr std::uint64_t none = ~std::uint64_t{0};
  std::uint64_t key[2];
  for (int h = 0; h < 2; ++h) {
    const I k = ea + h * 32 + lane;
    const bool inside = k < eb;
    const I j = inside ? col[k] : 0;
    // Rows of the group starting at or before k: k's row is the last.
    const int rows_at_or_before = warp_count_at_or_below(start, k);
    const int i = rows_at_or_before - 1, brl = i / r;
    const std::uint32_t q = static_cast<std::uint32_t>(j) / static_cast<std::uint32_t>(c);
    const int in_block = (i - brl * r) * c + static_cast<int>(static_cast<std::uint32_t>(j) - q * c);
    key[h] = inside ? std::uint64_t(brl) << 43 | std::uint64_t{q} << 12 | std::uint64_t(in_block) << 6 |
                          static_cast<std::uint64_t>(h * 32 + lane)
                    : none;
  }
  // Bitonic sort of the 64 keys, element e = h * 32 + lane.
  for (int k = 2; k <= 64; k *= 2)
    for (int d = k / 2; d > 0; d /= 2) {
      if (d == 32) {  // partners in the same lane (k = 64: ascending)
        const std::uint64_t lo = min(key[0], key[1]), hi = max(key[0], key[1]);
        key[0] = lo;
        key[1] = hi;
        continue;
      }
      for (int h = 0; h < 2; ++h) {
        const int e = h * 32 + lane;
        const std::uint64_t other = __shfl_xor_sync(full_warp, key[h], d);
        const bool keep_min = ((e & d) == 0) == ((e & k) == 0);
        key[h] = keep_min ? min(key[h], other) : max(key[h], other);
      }
    }
  const std::uint64_t key0_of_31 = __shfl_sync(full_warp, key[0], 31);
  for (int h = 0; h < 2; ++h) {
    const std::uint64_t before_in_lane = __shfl_up_sync(full_warp, key[h], 1);
    const int p = h * 32 + lane;
    if (p >= eb - ea) continue;
    const std::uint64_t k = key[h], before = lane > 0 ? before_in_lane : key0_of_31;
    const bool opens = p == 0 || (before >> 12) != (k >> 12);
    const I t = ea + p, from = ea + static_cast<I>(k & 63);
    const V v = val[from];
    out[t] = v;
    head[t] = opens ? 1 : 0;
    place[t] = static_cast<std::uint8_t>((k >> 6) & 63);
    if (opens) head_col[t] = static_cast<I>((k >> 12) & 0x7fffffffu);
    if (count_zeros && all_bits_zero(v)) ++zeros;
  }
}

// order_merged's 32-bit key of an entry: its block column less the block row's first (the high
// bits), its place i*c + j inside the block (6 bits) and its index in the block row (the low
// index_bits, at least 8: Slots * 32 entries). merge_span<Slots> bounds the block columns a
// block row may span, so that every key stays below the padding key 0xffffffff.
template <int Slots>
constexpr int merge_index_bits = Slots <= 8 ? 8 : 9;
template <int Slots>
constexpr std::uint32_t merge_span = (1u << (32 - 6 - merge_index_bits<Slots>)) - 1;
// Wide block rows of at most merge_rows rows of at most 32 entries each (a lane per entry), over
// fewer than merge_span<8> block columns (2^18 - 1): most block rows of stencil-like matrices
// (the 27-point stencil's 8 rows of 27 entries span ~10K blocks of 8 columns, too wide to count
// and too many entries to sort).
constexpr int merge_rows = 8;
constexpr int merge_row_entries = 32;
// Other wide block rows of at most 512 entries (16 slots of 32) over at most sort_rows rows and
// fewer than merge_span block columns are sorted by a warp alone, by the same network after a
// sort of each slot (order_merged with SlotPerRow false): rows of over 32 entries, as in
// graph-like matrices of 8 x 1 blocks (ca-AstroPh). Up to sort_8_slots_entries take 8 slots,
// the others 16 (order_slot_rows).
constexpr int sort_slots_entries = 512, sort_8_slots_entries = 8 * 32;

// Block order by merging, for one wide block row br (see above) holding the entries [ea, eb):
// slot h of the warp (element h * 32 + lane, h < Slots, r <= Slots) holds row h's entry `lane`
// as the 32-bit key (q - q_lo, i*c + j inside the block, index in the block row: see
// merge_index_bits). A row holds its entries by column, so by (q, i*c + j): every slot is
// sorted (padded with the greatest key), and bitonic merges of slot pairs, then quads, then eights sort the block
// row. Each merge first compares an element with its mirror in the other half, so that every
// later exchange keeps the smaller key below; only exchanges at distances under 32 shuffle. 21
// exchanges of 8 keys a lane for 8 slots, about 3 warp instructions an entry and no memory
// between them: the searches this replaces (order_searched) took 39 an entry, waiting on a load
// each step. Writes like order_searched (out, head, place, head_col; the stored zeros counted
// into zeros).
// With SlotPerRow false, slot h holds the block row's entries 32h .. 32h + 31 instead (any
// rows, at most 32 of them, at most 32 * Slots entries), and each slot is first sorted by a
// bitonic sort over its lanes (15 exchanges of every key), which makes it a sorted slot for
// the merges.
template <int Slots, bool SlotPerRow, class V>
__device__ void order_merged(const I* row_ptr, std::int64_t rows, const I* col, const V* val, int r, int c,
                             const small_divisor& by_c, std::int64_t br, I ea, I eb, std::uint32_t q_lo, V* out,
                             std::uint8_t* head, std::uint8_t* place, I* head_col, bool count_zeros, I& zeros) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t row0 = br * r;
  const int nrows = static_cast<int>(min(row0 + r, rows) - row0);
  // Lane l <= nrows: the start of row row0 + l (l = nrows: eb); the lanes after: eb.
  const I start = lane <= nrows ? row_ptr[row0 + lane] : eb;
  const std::uint32_t cu = static_cast<std::uint32_t>(c);
  constexpr int index_bits = merge_index_bits<Slots>, q_shift = index_bits + 6;
  constexpr std::uint32_t index_mask = (1u << index_bits) - 1u;
  constexpr std::uint32_t none = 0xffffffffu;  // above every key: q - q_lo < merge_span<Slots>
  // Entry k of row i of the block row: its key. Small offsets: across < merge_span * c <= 2^24
  // (see small_divisor).
  const auto key_of = [&](I k, int i) {
    const std::uint32_t across = static_cast<std::uint32_t>(col[k]) - q_lo * cu, q_off = by_c(across);
    const std::uint32_t in_block = static_cast<std::uint32_t>(i) * cu + (across - q_off * cu);
    return q_off << q_shift | in_block << index_bits | static_cast<std::uint32_t>(k - ea);
  };
  std::uint32_t key[Slots];
  if constexpr (SlotPerRow) {
#pragma unroll
    for (int h = 0; h < Slots; ++h) {
      const I k = __shfl_sync(full_warp, start, h) + lane;
      key[h] = k < __shfl_sync(full_warp, start, h + 1) ? key_of(k, h) : none;
    }
  } else {
#pragma unroll
    for (int h = 0; h < Slots; ++h) {
      const I k = ea + h * 32 + lane;
      // The rows starting at or before k: k's row is the last (every lane shuffles).
      const int i = warp_count_at_or_below(start, k < eb ? k : eb - 1) - 1;
      key[h] = k < eb ? key_of(k, i) : none;
    }
#pragma unroll 1
    for (int k = 2; k <= 32; k *= 2)
#pragma unroll 1
      for (int d = k / 2; d >= 1; d /= 2)
#pragma unroll
        for (int h = 0; h < Slots; ++h) {
          const std::uint32_t other = __shfl_xor_sync(full_warp, key[h], d);
          // Runs of k lanes alternately ascending and descending, the last (k = 32) ascending.
          const bool keep_min = ((lane & d) == 0) == ((lane & k) == 0);
          key[h] = keep_min ? min(key[h], other) : max(key[h], other);
        }
  }
#pragma unroll
  for (int k = 2; k <= Slots; k *= 2) {  // merging the sorted halves of each k slots
#pragma unroll
    for (int h = 0; h < Slots; ++h) {
      if (h % k >= k / 2) continue;
      // Element (h, lane) mirrors (m, 31 - lane) in the other half, which keeps the greater.
      const int m = h ^ (k - 1);
      const std::uint32_t mirror_of_h = __shfl_xor_sync(full_warp, key[m], 31);
      const std::uint32_t mirror_of_m = __shfl_xor_sync(full_warp, key[h], 31);
      key[h] = min(key[h], mirror_of_h);
      key[m] = max(key[m], mirror_of_m);
    }
#pragma unroll
    for (int d = k / 4; d >= 1; d /= 2)  // distances of d slots: inside the lane
#pragma unroll
      for (int h = 0; h < Slots; ++h) {
        if ((h & d) != 0) continue;
        const std::uint32_t a = key[h], b = key[h + d];
        key[h] = min(a, b);
        key[h + d] = max(a, b);
      }
#pragma unroll
    for (int d = 16; d >= 1; d /= 2)  // distances under a slot: across lanes
#pragma unroll
      for (int h = 0; h < Slots; ++h) {
        const std::uint32_t other = __shfl_xor_sync(full_warp, key[h], d);
        key[h] = (lane & d) == 0 ? min(key[h], other) : max(key[h], other);
      }
  }
  const I count = eb - ea;
#pragma unroll
  for (int h = 0; h < Slots; ++h) {
    if (h * 32 >= count) break;  // the same in every lane
    const std::uint32_t up = __shfl_up_sync(full_warp, key[h], 1);
    const int slot_before = h > 0 ? h - 1 : 0;  // read where h > 0
    const std::uint32_t last_of_slot_before = h > 0 ? __shfl_sync(full_warp, key[slot_before], 31) : 0;
    const int p = h * 32 + lane;
    if (p >= count) continue;
    const std::uint32_t k = key[h], before = lane > 0 ? up : last_of_slot_before;
    const bool opens = p == 0 || (before >> q_shift) != (k >> q_shift);
    const I t = ea + p;
    const V v = val[ea + static_cast<I>(k & index_mask)];
    out[t] = v;
    head[t] = opens ? 1 : 0;
    place[t] = static_cast<std::uint8_t>((k >> index_bits) & 63u);
    if (opens) head_col[t] = static_cast<I>(q_lo + (k >> q_shift));
    if (count_zeros && all_bits_zero(v)) ++zeros;
  }
}

// Block order by counting (see the top of this file) for the block rows whose span fits a
// warp's bit array, for r > 1 and r*c <= 64; the others are listed for order_searched
// (list_wide_runs; `chunks` has room for nnz). Writes out[t], head[t], place[t] and head_col[t] (heads only) like
// order_searched, and counts the stored zeros into zero_count where given.
//
// A warp takes a task of items_per_task items (block rows [task_lo, task_hi) from
// task_first, find_task_starts) 32 block rows at a time, a lane summing up each: its entries and the
// block columns they span (the rows are sorted: their first and last entries bound them).
// Consecutive block rows whose spans fit the bit array together form a run; a run's entries
// are walked twice, once to set the bits and once, after the scan of the words, to place them.
template <class V>
__global__ void __launch_bounds__(threads, 4)
    order_counted(std::int64_t nnz, const I* row_ptr, std::int64_t rows, const I* col, const V* val, int r, int c,
                  std::int64_t items_per_task, const I* task_first, V* out, std::uint8_t* head, std::uint8_t* place,
                  I* head_col, I* zero_count, I* chunks, I* chunk_count) {
  __shared__ uint4 counted_shared[counted_shared_bytes / sizeof(uint4)];  // uint4: 16-byte accesses
  const int lane = static_cast<int>(threadIdx.x % 32);
  unsigned char* const mine = reinterpret_cast<unsigned char*>(counted_shared) + threadIdx.x / 32 * counted_warp_bytes;
  std::uint32_t* const bits = reinterpret_cast<std::uint32_t*>(mine);
  std::uint16_t* const before = reinterpret_cast<std::uint16_t*>(mine + span_words * sizeof(std::uint32_t));
  unsigned char* const stage = mine + span_words * sizeof(std::uint32_t) + span_words / 4 * sizeof(std::uint16_t);
  const std::uint32_t ru = static_cast<std::uint32_t>(r), cu = static_cast<std::uint32_t>(c);
  const small_divisor by_r(ru), by_c(cu);
  const I rc = r * c;
  const std::int64_t mb = (rows + r - 1) / r, items = mb + nnz, tasks = (items + items_per_task - 1) / items_per_task;
  I zeros = 0;
  for (std::int64_t task = first_index() / 32; task < tasks; task += grid_stride() / 32) {
    const I bound = lane < 2 ? task_first[task + lane] : 0;
    const std::int64_t task_lo = __shfl_sync(full_warp, bound, 0), task_hi = __shfl_sync(full_warp, bound, 1);
    for (std::int64_t g = task_lo; g < task_hi; g += 32) {
      const int n = task_hi - g < 32 ? static_cast<int>(task_hi - g) : 32;
      // Lane l: block row g + l, its entries [e0, e1), its columns [j_lo, j_hi].
      I e0 = 0, e1 = 0, longest = 0;
      std::uint32_t j_lo = 0xffffffffu, j_hi = 0;
      if (lane < n) {
        const std::int64_t r0 = (g + lane) * r, r_end = r0 + r < rows ? r0 + r : rows;
        e0 = e1 = row_ptr[r0];
        for (std::int64_t p = r0; p < r_end; ++p) {
          const I f = row_ptr[p + 1];
          if (f > e1) {
            j_lo = min(j_lo, static_cast<std::uint32_t>(col[e1]));
            j_hi = max(j_hi, static_cast<std::uint32_t>(col[f - 1]));
            longest = max(longest, f - e1);
          }
          e1 = f;
        }
      }
      const std::uint32_t q_lo = j_lo / cu;
      const std::int64_t need = e1 > e0 ? (std::int64_t{j_hi / cu} - q_lo + 1) * rc : 0;
      // Counting costs a word per 32 bits of the span (cleared, then scanned) and two walks per
      // entry; a sparse span (graph-like rows: few entries over many block columns) costs more
      // in words than a search per entry does.
      const bool wide = need > span_bits || need > sparse_span * (std::int64_t{e1} - e0);
      // Wide block rows of few entries (graph-like matrices) are sorted here, in groups of
      // consecutive ones; the others are listed for order_searched, whose per-entry searches
      // in every row of the block row cost several times more per entry.
      const bool sortable = wide && r <= sort_rows && e1 - e0 <= sort_entries;
      // Wide block rows of short rows, too many entries to sort in a group: merged, one at a time.
      const bool mergeable = wide && !sortable && r <= merge_rows && longest <= merge_row_entries &&
                             j_hi / cu - q_lo < merge_span<8>;
      // The others of at most 512 entries: sorted by slots, then merged, one at a time.
      const bool slot_sortable =
          wide && !sortable && !mergeable && r <= sort_rows && e1 - e0 <= sort_slots_entries &&
          j_hi / cu - q_lo < (e1 - e0 <= sort_8_slots_entries ? merge_span<8> : merge_span<16>);
      list_wide_runs(wide && !sortable && !mergeable && !slot_sortable, n, e0, e1, chunks, chunk_count);
      // Those of over 256 entries are listed for a kernel of their own (order_slot_rows): the 16
      // keys a lane of their sort made this kernel's walks spill.
      const bool slots16 = slot_sortable && e1 - e0 > sort_8_slots_entries;
      list_slot_rows(slots16, g + lane, q_lo, chunks + nnz, chunk_count + 1);
      for (unsigned rest = __ballot_sync(full_warp, mergeable); rest != 0; rest &= rest - 1) {
        const int l = __ffs(static_cast<int>(rest)) - 1;
        const I ea = __shfl_sync(full_warp, e0, l), eb = __shfl_sync(full_warp, e1, l);
        const std::uint32_t q = __shfl_sync(full_warp, q_lo, l);
        if (r <= 4)
          order_merged<4, true>(row_ptr, rows, col, val, r, c, by_c, g + l, ea, eb, q, out, head, place, head_col,
                                zero_count != nullptr, zeros);
        else
          order_merged<8, true>(row_ptr, rows, col, val, r, c, by_c, g + l, ea, eb, q, out, head, place, head_col,
                                zero_count != nullptr, zeros);
      }
      for (unsigned rest = __ballot_sync(full_warp, slot_sortable && !slots16); rest != 0; rest &= rest - 1) {
        const int l = __ffs(static_cast<int>(rest)) - 1;
        const I ea = __shfl_sync(full_warp, e0, l), eb = __shfl_sync(full_warp, e1, l);
        const std::uint32_t q = __shfl_sync(full_warp, q_lo, l);
        order_merged<8, false>(row_ptr, rows, col, val, r, c, by_c, g + l, ea, eb, q, out, head, place, head_col,
                               zero_count != nullptr, zeros);
      }
      for (unsigned rest = __ballot_sync(full_warp, sortable); rest != 0;) {
        const int first = __ffs(static_cast<int>(rest)) - 1;
        int last = first;
        const I ga = __shfl_sync(full_warp, e0, first);
        I gb = __shfl_sync(full_warp, e1, first);
        while (last < 31 && ((rest >> (last + 1)) & 1u)) {
          const I next_end = __shfl_sync(full_warp, e1, last + 1);
          if (next_end - ga > sort_entries || (last + 2 - first) * r > sort_rows) break;
          gb = next_end;
          ++last;
        }
        rest &= ~((last == 31 ? full_warp : (1u << (last + 1)) - 1u) & ~((1u << first) - 1u));  // lanes first..last
        order_sorted(row_ptr, rows, col, val, r, c, g + first, last - first + 1, ga, gb, out, head, place, head_col,
                     zero_count != nullptr, zeros);
      }
      // The block row's first bit in the bit array of the 32: the bits of the lanes before.
      const I own = wide ? 0 : static_cast<I>(need);
      const I end = group_inclusive_sum(own);
      const I start = end - own;
      const unsigned wide_lanes = __ballot_sync(full_warp, wide);
      for (int l = 0; l < n;) {
        if ((wide_lanes >> l) & 1u) {
          ++l;
          continue;
        }
        // The run: lanes [l, e), up to the next wide block row and as far as the bits fit.
        const unsigned later_wide = wide_lanes & (0xffffffffu << l);
        const int stop = later_wide != 0 ? __ffs(static_cast<int>(later_wide)) - 1 : n;
        const I from = __shfl_sync(full_warp, start, l);
        const int e = l + __popc(__ballot_sync(full_warp, lane >= l && lane < stop && end - from <= span_bits));
        const I ea = __shfl_sync(full_warp, e0, l), eb = __shfl_sync(full_warp, e1, e - 1);
        const int words = (__shfl_sync(full_warp, end, e - 1) - from + 31) / 32;
        if (ea < eb) {
          // Rows below 2^31 (I).
          const I ra = static_cast<I>((g + l) * r), rb = static_cast<I>((g + e) * r < rows ? (g + e) * r : rows);
          // Entry k of row i, column j: its bit (block row's first bit, block column, i*c + j), its block
          // column q and its position in_block = i*c + j inside the block. Divisions of small
          // offsets: rows after ra (< 32 r <= 2^11) by r, columns after the block row's first
          // block column (< span_bits / r <= 2^15, the span fits) by c.
          const auto bit_of = [&](I j, I i, std::uint32_t& q, int& in_block) {
            const std::uint32_t down = static_cast<std::uint32_t>(i - ra), br_off = by_r(down);
            const int src = l + static_cast<int>(br_off);
            const std::uint32_t q0 = __shfl_sync(full_warp, q_lo, src);
            const I first = __shfl_sync(full_warp, start, src);
            const std::uint32_t across = static_cast<std::uint32_t>(j) - q0 * cu, q_off = by_c(across);
            q = q0 + q_off;
            in_block = static_cast<int>((down - br_off * ru) * cu + (across - q_off * cu));
            return first - from + static_cast<I>(q_off) * rc + in_block;
          };
          // Four words a lane (16-byte accesses), here and in the scan below: a run of 8 x 8 block rows
          // spans hundreds of words for a few hundred entries, so the word loops took as many steps
          // as the walks. Words up to a multiple of 4 are cleared, so they count no bits.
          const int quads = (words + 3) / 4;
          for (int w = lane; w < quads; w += 32) reinterpret_cast<uint4*>(bits)[w] = uint4{0, 0, 0, 0};
          __syncwarp();
          const columns_staged columns{col, reinterpret_cast<I*>(stage)};
          for_each_entry(row_ptr, ea, eb, ra, rb, columns, [&](bool active, I i, I j) {
            std::uint32_t q = 0;
            int in_block = 0;
            const I b = bit_of(j, i, q, in_block);
            if (active) atomicOr(bits + b / 32, 1u << (b % 32));
          });
          __syncwarp();
          I run = 0;
          for (int w0 = 0; w0 < quads; w0 += 32) {
            const int w = w0 + lane;
            const uint4 four = w < quads ? reinterpret_cast<const uint4*>(bits)[w] : uint4{0, 0, 0, 0};
            const I ones = __popc(four.x) + __popc(four.y) + __popc(four.z) + __popc(four.w);
            const I incl = group_inclusive_sum(ones);
            // Below 2^16: the bits before a word (span_bits).
            if (w < quads) before[w] = static_cast<std::uint16_t>(run + incl - ones);
            run += __shfl_sync(full_warp, incl, 31);
          }
          __syncwarp();
          // The set bits below bit b: the entries before it in block order. Its word's quad
          // (one 16-byte read) gives the bits below it in the quad.
          const auto rank = [&](I b) {
            const int w = b / 32;
            const uint4 four = reinterpret_cast<const uint4*>(bits)[w / 4];
            const std::uint32_t own = w % 4 == 0 ? four.x : w % 4 == 1 ? four.y : w % 4 == 2 ? four.z : four.w;
            const I earlier = (w % 4 > 0 ? __popc(four.x) : 0) + (w % 4 > 1 ? __popc(four.y) : 0) +
                              (w % 4 > 2 ? __popc(four.z) : 0);
            return I{before[w / 4]} + earlier + __popc(own & ((1u << (b % 32)) - 1u));
          };
          const entries_staged<V> entries{col, val, reinterpret_cast<V*>(stage)};
          for_each_entry(row_ptr, ea, eb, ra, rb, entries,
                         [&](bool active, I i, const column_value<V>& e) {
            std::uint32_t q = 0;
            int in_block = 0;
            const I b = bit_of(e.col, i, q, in_block);
            if (active) {
              const I t = ea + rank(b);
              const bool opens = rank(b - in_block) == t - ea;
              const V v = e.val;
              out[t] = v;
              head[t] = opens ? 1 : 0;
              place[t] = static_cast<std::uint8_t>(in_block);
              if (opens) head_col[t] = static_cast<I>(q);
              if (zero_count != nullptr && all_bits_zero(v)) ++zeros;
            }
          });
          __syncwarp();  // the next run clears the words read above
        }
        l = e;
      }
    }
  }
  // Every lane gets here: the loops above step whole warps.
  add_warp_zeros(zero_count, zeros, lane);
}

// Block order by searching (see the top of this file): puts every entry of its chunks at its
// block-order position t: out[t] = its value, head[t] = 1 where it opens its block, place[t] =
// i*c + j inside the block (< r*c <= 256: MBR's bit, BCSR's value offset), head_col[t] = the
// block column at heads only. With zero_count given, adds the entries whose bits are all zero
// to it (BCSR's stored zeros). The chunks: with `chunks` given, the *chunk_count chunks that
// order_counted listed (list_wide_runs); else all entries, chunk d being [d * chunk,
// (d + 1) * chunk). OtherRows: r > 1 (with r = 1 an entry's rank is its index, and the
// kernel leaves out the searches' registers).
template <class V, bool OtherRows>
__global__ void order_searched(std::int64_t nnz, const I* row_ptr, std::int64_t rows, const I* col, const V* val,
                               int r, int c, const I* chunks, const I* chunk_count, V* out, std::uint8_t* head,
                               std::uint8_t* place, I* head_col, I* zero_count) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t count = chunks != nullptr ? *chunk_count : (nnz + chunk - 1) / chunk;
  I zeros = 0;
  // A warp takes a chunk (the same in all its lanes, so they step together): lanes 0 and 1 find
  // the rows of its first and last entries by a search over all rows, and each lane then
  // searches only the rows between, for its entries lo + lane + 32 m (coalesced).
  for (std::int64_t d = first_index() / 32; d < count; d += grid_stride() / 32) {
    const std::int64_t lo = chunks != nullptr ? chunks[2 * d] : d * chunk;
    const std::int64_t hi = chunks != nullptr ? chunks[2 * d + 1] : (lo + chunk < nnz ? lo + chunk : nnz);
    long long found = 0;
    if (lane < 2) found = row_holding(row_ptr, 0, rows - 1, lane == 0 ? lo : hi - 1);
    const std::int64_t row_lo = __shfl_sync(full_warp, found, 0), row_hi = __shfl_sync(full_warp, found, 1);
    for (std::int64_t k = lo + lane; k < hi; k += 32) {
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
      for (I p = r0; OtherRows && p < r_end; ++p) {
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
  // Every lane gets here: the loop above steps whole warps.
  add_warp_zeros(zero_count, zeros, lane);
}

// Block order by sorting 16 slots (order_merged) for the block rows order_counted listed
// (list_slot_rows: `count` pairs down from `end`), a warp each. A kernel of its own: its 16 keys
// a lane took the searching kernel from 39 registers to 64, and a resident wave of it from 48
// warps a multiprocessor to 32.
template <class V>
__global__ void order_slot_rows(const I* row_ptr, std::int64_t rows, const I* col, const V* val, int r, int c,
                                const I* end, const I* count, V* out, std::uint8_t* head, std::uint8_t* place,
                                I* head_col, I* zero_count) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t listed = *count;
  const small_divisor by_c(static_cast<std::uint32_t>(c));
  I zeros = 0;
  for (std::int64_t d = first_index() / 32; d < listed; d += grid_stride() / 32) {
    const std::int64_t br = end[-2 * d - 2], row0 = br * r;
    const I ea = row_ptr[row0], eb = row_ptr[row0 + r < rows ? row0 + r : rows];
    const std::uint32_t q_lo = static_cast<std::uint32_t>(end[-2 * d - 1]);
    order_merged<16, false>(row_ptr, rows, col, val, r, c, by_c, br, ea, eb, q_lo, out, head, place, head_col,
                            zero_count != nullptr, zeros);
  }
  // Every lane gets here: the loop above steps whole warps.
  add_warp_zeros(zero_count, zeros, lane);
}

// The block number of block-order position t: the heads in [0, t], so that t lies in block
// block_number - 1. block_no holds the heads up to the end of each 4-byte word of head
// (block_order); t's word less those after t in it. Head bytes are 0 or 1: a popcount counts
// them.
__device__ __forceinline__ I block_number(const I* block_no, const std::uint8_t* head, std::int64_t t) {
  const std::uint32_t word = reinterpret_cast<const std::uint32_t*>(head)[t / 4];
  const int shift = 8 * static_cast<int>(t % 4 + 1);
  return block_no[t / 4] - __popc(shift < 32 ? word >> shift : 0u);
}

// block_ptr[br] = the blocks of the block rows before br: the heads among the entries before
// the block row's first, v = row_ptr[min(br * r, rows)], which is the block number of v - 1
// (0 when v = 0; block_no and head are never read for a matrix without entries). value_ptr[br]
// = v where given (MBR). block_ptr[mb] (mb = ceil(rows / r)) is then the number of blocks.
__global__ void block_row_offsets(std::int64_t mb, const I* row_ptr, std::int64_t rows, int r, const I* block_no,
                                  const std::uint8_t* head, I* block_ptr, I* value_ptr) {
  for (std::int64_t br = first_index(); br <= mb; br += grid_stride()) {
    const I v = row_ptr[br * r < rows ? br * r : rows];
    block_ptr[br] = v == 0 ? 0 : block_number(block_no, head, v - 1);
    if (value_ptr != nullptr) value_ptr[br] = v;
  }
}

// The scan's input: the heads in a 4-byte word of head flags, as an I, so that the block
// numbers are summed in I.
struct heads_in_word {
  __device__ I operator()(std::uint32_t word) const { return __popc(word); }
};

// a's entries in block order (see the top of this file), by block-order position t.
// block_no is scanned by word of head: 4 positions a count, a quarter of the writes and reads
// of a count per position (the scan over the 224M positions of the 27-point stencil took
// 0.60 ms, the whole CSR -> MBR 6.3; Nsight Compute, H100).
// head and place are padded to a multiple of this many positions, for the 16-byte loads of the
// MBR converter's last pass (csr_to_mbr.cu).
constexpr std::int64_t padded_positions = 16;

struct block_order {
  device_array<std::uint8_t> head;   // 1 where the entry opens its block; 0 in the padding to
                                     // a multiple of padded_positions
  device_array<std::uint8_t> place;  // i*c + j inside its block (padded as head, the padding unset)
  device_array<I> head_col;          // the block's column, written at heads only
  device_array<I> block_no;          // heads in [0, 4w + 3]: see block_number
};

void check_launch(const std::string& who, const char* what) { check_cuda(cudaGetLastError(), who + ": " + what); }

// Orders a's entries into blocks of r x c (r*c <= 256): values to `out` (nnz elements) in block
// order, the arrays of block_order, the stored zeros counted into *zero_count when given;
// block_ptr (ceil(rows / r) + 1 elements) and, where given, value_ptr (as many) are written,
// block_ptr's last element being the number of blocks. Queued on ctx's stream; no wait. Where a
// has entries, the number of blocks and then, where counted, the stored zeros (an I each) are
// queued to ctx.copy_back before the block pointers: wait_copies_back() has them while the
// device writes the pointers. A matrix without entries gets its pointers only (all 0). `who`
// names the conversion in errors.
template <class V>
block_order order_by_blocks(const csr<V, I, device>& a, int r, int c, V* out, I* zero_count, I* block_ptr,
                            I* value_ptr, gpu_context& ctx, const std::string& who) {
  const cudaStream_t s = stream_of(ctx);
  const std::int64_t nnz = a.nnz(), mb = (a.rows + r - 1) / r;
  block_order o;
  if (nnz > 0) {
    // Whole words of head flags (block_number) and whole chunks of 16 (device allocations are
    // aligned to far more than 16 bytes), the padding holding no heads.
    const std::int64_t words = (nnz + 3) / 4;
    const std::int64_t padded = (nnz + padded_positions - 1) / padded_positions * padded_positions;
    o.head.resize(padded);
    if (padded > nnz)
      check_cuda(cudaMemsetAsync(o.head.data() + nnz, 0, padded - nnz, s), who + ": clearing the flags' padding");
    o.place.resize(padded);
    o.head_col.resize(nnz);
    o.block_no.resize(nnz);
    const I* row_ptr = a.row_ptr.data();
    const I* col = a.col_idx.data();
    const V* val = a.values.data();
    // Rows of one block row (r = 1) search nothing: they take the searching pass throughout.
    if (r > 1 && r * c <= 64) {
      // The chunk list of the wide block rows and the list of block rows to sort by 16 slots
      // live in block_no until the scan numbers the blocks there (list_slot_rows: they fit).
      device_array<I> listed(2);  // the chunks' count, then the block rows'
      check_cuda(cudaMemsetAsync(listed.data(), 0, 2 * sizeof(I), s), who + ": clearing the chunk count");
      const std::int64_t items = mb + nnz;
      const std::int64_t per_task = std::clamp(items / tasks_wanted, min_task_items, task_items);
      const std::int64_t tasks = (items + per_task - 1) / per_task;
      device_array<I> task_first(tasks + 1);
      find_task_starts<<<launch_blocks(tasks + 1, threads), threads, 0, s>>>(row_ptr, a.rows, r, items, per_task,
                                                                             tasks, task_first.data());
      check_launch(who, "finding the tasks' block rows");
      order_counted<V><<<launch_blocks(tasks * 32, threads), threads, 0, s>>>(
          nnz, row_ptr, a.rows, col, val, r, c, per_task, task_first.data(), out, o.head.data(), o.place.data(),
          o.head_col.data(), zero_count, o.block_no.data(), listed.data());
      check_launch(who, "putting the entries in block order");
      // The listed chunks are counted on the device by one resident wave of blocks (none
      // when every block row was counted).
      const auto searched = order_searched<V, true>;
      searched<<<resident_blocks(searched, threads, ctx.device(), who), threads, 0, s>>>(
          nnz, row_ptr, a.rows, col, val, r, c, o.block_no.data(), listed.data(), out, o.head.data(), o.place.data(),
          o.head_col.data(), zero_count);
      check_launch(who, "putting the wide block rows in block order");
      const auto slot_rows = order_slot_rows<V>;
      slot_rows<<<resident_blocks(slot_rows, threads, ctx.device(), who), threads, 0, s>>>(
          row_ptr, a.rows, col, val, r, c, o.block_no.data() + nnz, listed.data() + 1, out, o.head.data(),
          o.place.data(), o.head_col.data(), zero_count);
      check_launch(who, "sorting the block rows of 257 to 512 entries");
    } else {
      const auto searched = r > 1 ? order_searched<V, true> : order_searched<V, false>;
      searched<<<launch_blocks((nnz + chunk - 1) / chunk * 32, threads), threads, 0, s>>>(
          nnz, row_ptr, a.rows, col, val, r, c, nullptr, nullptr, out, o.head.data(), o.place.data(),
          o.head_col.data(), zero_count);
      check_launch(who, "putting the entries in block order");
    }
    const auto heads =
        thrust::make_transform_iterator(reinterpret_cast<const std::uint32_t*>(o.head.data()), heads_in_word{});
    std::size_t bytes = 0;
    check_cuda(cub::DeviceScan::InclusiveSum(nullptr, bytes, heads, o.block_no.data(), words, s),
               who + ": sizing the block numbering");
    check_cuda(cub::DeviceScan::InclusiveSum(ctx.workspace(bytes), bytes, heads, o.block_no.data(), words, s),
               who + ": numbering the blocks");
    // The heads of all words: the padding holds none.
    ctx.copy_back(0, o.block_no.data() + words - 1, sizeof(I));
    if (zero_count != nullptr) ctx.copy_back(sizeof(I), zero_count, sizeof(I));
  }
  block_row_offsets<<<launch_blocks(mb + 1, threads), threads, 0, s>>>(
      mb, a.row_ptr.data(), a.rows, r, o.block_no.data(), o.head.data(), block_ptr, value_ptr);
  check_launch(who, "writing the block row pointers");
  return o;
}

}  // namespace
}  // namespace spconv::gpu::block_rows
