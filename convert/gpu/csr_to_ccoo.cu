// CSR -> CCOO on the GPU (specs/formats/ccoo.md, "GPU"; Aliaga et al., Euro-Par 2020
// Workshops, Sect. 2), byte-identical to cpu::csr_to_ccoo. The CPU's steps:
//   1. groups per row, exclusive scan (cub) -> the first group of every row;
//   2. the value table (ccoo_value_table): exact counts of the values' bit patterns in a hash
//      table (a large table per block in shared memory, flushed once into one in global
//      memory; patterns split into partitions where they are too many), +0.0 credited with
//      the padding entries; the distinct patterns with their counts are sorted
//      by pattern, then stably by count descending: the first min(256, distinct) are the
//      canonical table. A matrix with too many distinct patterns for one count first looks
//      for a chunk that a table could cover at all (find_coverable_chunk): where there is
//      none, no table is stored and none is made; otherwise the count is redone in
//      partitions, and past those (or past the global table) a radix sort of all the values
//      counts (sorted_value_table);
//   3. per chunk (one warp): rows, column range, padding and table coverage -> the format
//      code, baselines and blob size; the sizes are scanned into chunk_ptr;
//   4. per chunk (one warp): the blob, every byte of it, filler included.
// A warp per chunk rather than the paper's block (its SpMV's unit): the conversion's
// per-chunk set-up is a chain of dependent loads, and a warp per chunk keeps 8 times more
// chunks in flight per multiprocessor to hide it.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <limits>
#include <string>
#include <vector>

#include "convert/gpu/ccoo.hpp"
#include "convert/gpu/ccoo_device.cuh"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/search.cuh"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
using ccoo_device::section;
constexpr int block_threads = 256;
constexpr unsigned full_warp = 0xffffffffu;
constexpr int max_groups = ccoo_max_chunk_b;  // groups of one chunk

// ---- bit pattern hashing ------------------------------------------------------------

// The 64-bit finaliser of SplitMix64 (Steele, Lea, Flood, OOPSLA 2014): every input bit
// reaches the top bits, which pick the slot, so patterns that differ only in their high
// (exponent) or only in their low (mantissa) bits spread alike.
__device__ __forceinline__ std::uint64_t mix(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// Slot of a pattern whose mix() is `hash` in a table of 2^log2_slots slots (log2_slots in
// [1, 63]): the top bits, so that the low ones are free to pick a partition (count_patterns).
__device__ __forceinline__ unsigned home(std::uint64_t hash, int log2_slots) {
  return static_cast<unsigned>(hash >> (64 - log2_slots));
}
template <class B>
__device__ __forceinline__ unsigned slot_of(B bits, int log2_slots) {
  return home(mix(bits), log2_slots);
}

template <class B>
__device__ __forceinline__ B atomic_cas(B* p, B expected, B desired) {
  if constexpr (sizeof(B) == 8)
    return atomicCAS(reinterpret_cast<unsigned long long*>(p), expected, desired);
  else
    return atomicCAS(reinterpret_cast<unsigned*>(p), expected, desired);
}
// ---- step 2: exact counts of the bit patterns ---------------------------------------

// What the GPU reports back to the host, one 64-bit word each (read in two batches, so that
// the conversion waits for the device only where a size must be known).
enum info_word : int {
  info_total_groups,  // the group count (group_start[rows])
  info_distinct,      // distinct patterns collected from the hash table
  info_overflow,      // nonzero: the hash table could not take every pattern
  info_full,          // nonzero: a block's shared table was full; counted again, in more partitions
  info_special,       // count of the all-ones pattern, which marks empty slots
  info_any_lut,       // nonzero: some chunk uses the table
  info_coverable,     // nonzero: some chunk holds at most ccoo_table_capacity distinct patterns
  info_blob_bytes,    // chunk_ptr[chunks]
  info_words
};

// Open addressing with linear probing; a slot is empty while its key is the all-ones
// pattern (that pattern, a NaN, is counted apart: info_special). Keys go from empty to their
// pattern once (compare-and-swap), so every thread adding a pattern follows the same probe
// sequence to the same slot and a pattern has at most one slot. A probe sequence longer than
// max_probes gives up and sets info_overflow: then the counts are incomplete and the sort
// route takes over. At a load of at most 1/2 (counter_log2_slots) that takes pathological
// clustering; it is how a matrix of too many distinct patterns ends up on the sort route.
template <class B>
struct pattern_table {
  B* keys;
  std::uint32_t* counts;  // at most the entry count, < 2^31
  int log2_slots;
  unsigned long long* info;
};
template <class B>
constexpr B empty_key = std::numeric_limits<B>::max();
constexpr int max_probes = 64;

// Adds n to the count of `key` (not the empty key; hash = mix(key)) in a table of 2^log2 slots
// (global or shared memory), probing at most `probes` slots from its home; false when none of
// them holds the key or is free.
template <class B>
__device__ bool probe_add(B* keys, std::uint32_t* counts, int log2, int probes, B key, std::uint64_t hash,
                          std::uint32_t n) {
  const unsigned mask = (1u << log2) - 1;
  unsigned i = home(hash, log2);
  for (int probe = 0; probe < probes; ++probe, i = (i + 1) & mask) {
    B k = *static_cast<volatile B*>(keys + i);
    if (k == empty_key<B>) {
      k = atomic_cas(keys + i, empty_key<B>, key);
      if (k == empty_key<B>) k = key;
    }
    if (k == key) {
      atomicAdd(counts + i, n);
      return true;
    }
  }
  return false;
}

// Adds n to the count of `key` in the global table, or marks it overflowed.
template <class B>
__device__ void table_add(const pattern_table<B>& t, B key, std::uint64_t hash, std::uint32_t n) {
  if (!probe_add(t.keys, t.counts, t.log2_slots, max_probes, key, hash, n)) atomicOr(t.info + info_overflow, 1ull);
}

// Every block counts into a table of its own in shared memory, as large as a block may have
// (2^14 patterns, 192 KiB for double, on an H100), one block per multiprocessor: a pattern
// costs shared atomics only, and reaches the global table once per block, when the block
// ends. Global atomics, one per value where patterns are many (thousands of distinct values
// are common in real matrices), were 20 cuSPARSE SpMV-times on such matrices.
//
// Where a block meets more patterns than its table takes, the patterns are split by hash into
// P partitions (gridDim.y; the low bits of the hash, the slots use the top ones), each
// counted in a pass of its own over the values. A full table (no slot within shared_probes,
// which linear probing reaches at a load of ~85%) ends the count at once (info_full), and
// the host counts again with twice the partitions, up to max_partitions; past those (over
// ~200K distinct patterns in one block's share of the values) the sort route counts instead.
// A failed count stops soon when patterns are many (the tables fill early).
constexpr int count_threads = 1024;
constexpr int count_items = 8;        // values per thread per tile, loaded before they are counted
constexpr int most_shared_log2 = 14;  // slots per block table: 2^14 at most,
constexpr int least_shared_log2 = 8;  // 2^8 at least (fits the 48 KiB every GPU gives)
constexpr int shared_probes = 128;
constexpr int max_partitions = 16;

// A block table of 2^log2 slots in dynamic shared memory: keys, then counts, then the count of
// the all-ones pattern.
template <class B>
struct block_table {
  B* keys;
  std::uint32_t* counts;
  std::uint32_t* special;
  int log2;
};
template <class B>
std::size_t block_table_bytes(int log2) {
  return (std::size_t{1} << log2) * (sizeof(B) + sizeof(std::uint32_t)) + sizeof(std::uint32_t);
}

// Adds n to the count of `key` (hash = mix(key)) in the block's table; where the table has no
// place for it within shared_probes slots, nowhere: the count is incomplete (info_full).
template <class B>
__device__ void block_add(const block_table<B>& s, const pattern_table<B>& t, B key, std::uint64_t hash,
                          std::uint32_t n) {
  if (key == empty_key<B>) {
    atomicAdd(s.special, n);
    return;
  }
  if (!probe_add(s.keys, s.counts, s.log2, shared_probes, key, hash, n)) atomicOr(t.info + info_full, 1ull);
}

// One value per lane (where `valid`; lanes hold consecutive values): the length of the run of
// equal patterns in consecutive valid lanes that starts at this lane, 0 where none starts.
// Each run adds its length at once, through its first lane, so that a warp of equal values
// costs one shared atomic and a warp of distinct ones one probe sequence per lane, side by
// side. Runs, not every equal lane (__match_any_sync): matching is the slow instruction here,
// and a row's equal values mostly sit side by side. Measured on the H100 (double, the
// replicated set at 100M entries, both with the rolled loop of count_patterns, one device
// call), the whole CSR -> CCOO conversion in cuSPARSE SpMV-times: geometric mean 5.16 with
// matching, 4.30 with runs; Groebner_id2003_aug 11.3 -> 7.2, bcsstk13 10.3 -> 6.4, fidapex6
// 10.6 -> 6.6; n1024-l1, whose few patterns alternate, 3.24 -> 3.17. Every lane of the warp
// must call it (full-mask shuffles).
template <class B>
__device__ std::uint32_t run_length(B key, bool valid) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const B before = __shfl_up_sync(full_warp, key, 1);
  const unsigned valid_lanes = __ballot_sync(full_warp, valid);
  const bool starts = valid && (lane == 0 || before != key || ((valid_lanes >> (lane - 1)) & 1u) == 0);
  // The run ends before the next lane that starts one or is not valid.
  const unsigned later = lane == 31 ? 0u : ~0u << (lane + 1);
  const unsigned ends = (__ballot_sync(full_warp, starts) | ~valid_lanes) & later;
  if (!starts) return 0;
  return static_cast<std::uint32_t>(ends != 0 ? __ffs(static_cast<int>(ends)) - 1 - lane : 32 - lane);
}

// Counts every stored value's pattern of partition blockIdx.y into t, and the padding entries
// as +0.0 (Sect. 2: rows are padded with explicit zeros, and the table counts every value
// field). Also reports the group count. Tiles of count_threads * count_items values,
// grid-stride along x; a table of 2^log2 slots per block (dynamic shared memory).
template <class B>
__global__ void __launch_bounds__(count_threads, 1)
    count_patterns(const B* values, std::int64_t n, pattern_table<B> t, const std::int64_t* group_start,
                   std::int64_t rows, std::int64_t k, int log2) {
  extern __shared__ __align__(16) unsigned char table_memory[];
  const int slots = 1 << log2;
  const block_table<B> s{reinterpret_cast<B*>(table_memory),
                         reinterpret_cast<std::uint32_t*>(table_memory + std::size_t{sizeof(B)} * slots),
                         reinterpret_cast<std::uint32_t*>(table_memory + std::size_t{sizeof(B) + 4} * slots), log2};
  for (int i = threadIdx.x; i < slots; i += blockDim.x) {
    s.keys[i] = empty_key<B>;
    s.counts[i] = 0;
  }
  if (threadIdx.x == 0) *s.special = 0;
  __syncthreads();
  // A pattern's partition: the low bits of its hash; the all-ones pattern is counted in 0.
  const unsigned partitions = gridDim.y, part = blockIdx.y;
  const auto in_part = [&](B key, std::uint64_t hash) {
    return (key == empty_key<B> ? 0u : static_cast<unsigned>(hash) & (partitions - 1)) == part;
  };
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const std::int64_t groups = group_start[rows], pads = groups * k - n;
    if (part == 0) t.info[info_total_groups] = static_cast<unsigned long long>(groups);
    // Beyond 2^31 - 1 entries the conversion is refused (after this kernel): no count then.
    const std::uint64_t zero_hash = mix(B(0));
    if (pads > 0 && groups * k <= INT_MAX && in_part(B(0), zero_hash))
      block_add(s, t, B(0), zero_hash, static_cast<std::uint32_t>(pads));
  }
  const int lane = threadIdx.x % 32;
  constexpr std::int64_t tile = std::int64_t{count_threads} * count_items;
  for (std::int64_t base = blockIdx.x * tile; base < n; base += std::int64_t{gridDim.x} * tile) {
    // Once the counts are incomplete they are dropped: stop early (warp-uniform).
    int stop = 0;
    if (lane == 0) {
      const volatile unsigned long long* info = t.info;
      stop = info[info_overflow] != 0 || info[info_full] != 0;
    }
    if (__shfl_sync(full_warp, stop, 0)) break;
    B v[count_items];
#pragma unroll
    for (int i = 0; i < count_items; ++i) {
      const std::int64_t at = base + i * count_threads + threadIdx.x;
      v[i] = at < n ? values[at] : B(0);
    }
    // Rolled: each item's adds diverge (probe loops of different lengths), and eight unrolled
    // copies of this loop made about 47 KB of machine code, beyond the instruction cache.
    // Unrolled, even with the runs of all 8 items found before any add, the conversion took
    // 4.77 SpMV-times in geometric mean (max 9.81) where rolled it takes 4.30 (max 7.93), in
    // two device calls on the H100.
#pragma unroll 1
    for (int i = 0; i < count_items; ++i) {
      const std::uint64_t hash = mix(v[i]);
      const std::uint32_t length = run_length(v[i], base + i * count_threads + threadIdx.x < n && in_part(v[i], hash));
      if (length != 0) block_add(s, t, v[i], hash, length);
    }
  }
  __syncthreads();
  // A count that failed is redone from scratch: its tables need no flush.
  if (*static_cast<volatile unsigned long long*>(t.info + info_full) != 0) return;
  for (int i = threadIdx.x; i < slots; i += blockDim.x)
    if (s.keys[i] != empty_key<B>) table_add(t, s.keys[i], mix(s.keys[i]), s.counts[i]);
  if (threadIdx.x == 0 && *s.special != 0)
    atomicAdd(t.info + info_special, static_cast<unsigned long long>(*s.special));
}

// The occupied slots (and the all-ones pattern) as (pattern, count) pairs, in no particular
// order; their number goes to info_distinct. Warps append together (one atomic each).
template <class B>
__global__ void collect_patterns(pattern_table<B> t, B* bits, std::uint32_t* counts) {
  if (t.info[info_full] != 0) return;  // the count is redone
  const std::int64_t slots = std::int64_t{1} << t.log2_slots;
  const int lane = threadIdx.x % 32;
  // The loop bound is the same for a whole warp (blockDim is a multiple of 32), so every
  // lane reaches the ballot.
  for (std::int64_t i0 = first_index() - lane; i0 < slots; i0 += grid_stride()) {
    const std::int64_t i = i0 + lane;
    const B key = i < slots ? t.keys[i] : empty_key<B>;
    const bool have = key != empty_key<B>;
    const unsigned found = __ballot_sync(full_warp, have);
    if (found == 0) continue;
    unsigned long long at = 0;
    if (lane == 0) at = atomicAdd(t.info + info_distinct, static_cast<unsigned long long>(__popc(found)));
    at = __shfl_sync(full_warp, at, 0) + __popc(found & ((1u << lane) - 1));
    if (have) {
      bits[at] = key;
      counts[at] = t.counts[i];
    }
  }
  if (first_index() == 0 && t.info[info_special] != 0) {
    const unsigned long long at = atomicAdd(t.info + info_distinct, 1ull);
    bits[at] = empty_key<B>;
    counts[at] = static_cast<std::uint32_t>(t.info[info_special]);
  }
}

// Hash table slots for nnz values: at least twice the distinct patterns that nnz values and
// +0.0 can have, so that the load stays at most 1/2, up to 2^21 slots (24 MiB for double,
// within the L2 cache of an H100), where more than about 2^20 distinct patterns overflow.
int counter_log2_slots(std::int64_t nnz) {
  constexpr int most = 21;
  int log2 = 4;
  while (log2 < most && (std::int64_t{1} << log2) < 2 * (nnz + 2)) ++log2;
  return log2;
}

// ---- the table lookup: at most 256 patterns in 2^log2 >= 2n slots ----------------------

constexpr int lookup_max_log2 = 9;
static_assert((1u << lookup_max_log2) >= 2 * ccoo_table_capacity);

int lookup_log2_slots(std::int64_t n) {
  int log2 = 1;
  while ((std::int64_t{1} << log2) < 2 * n) ++log2;
  return log2;
}

// Slots of the n table patterns: index[i] is the table position of keys[i], -1 if empty.
// One block; patterns are distinct, so each thread claims a slot for its own.
template <class B>
__global__ void build_lookup(const B* table, int n, int log2_slots, B* keys, std::int16_t* index) {
  __shared__ B s_keys[1 << lookup_max_log2];
  __shared__ int s_index[1 << lookup_max_log2];
  const int slots = 1 << log2_slots;
  for (int i = threadIdx.x; i < slots; i += blockDim.x) {
    s_keys[i] = 0;
    s_index[i] = -1;
  }
  __syncthreads();
  for (int p = threadIdx.x; p < n; p += blockDim.x) {
    const B bits = table[p];
    for (unsigned i = slot_of(bits, log2_slots);; i = (i + 1) & (slots - 1))
      if (atomicCAS(s_index + i, -1, p) == -1) {
        s_keys[i] = bits;
        break;
      }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < slots; i += blockDim.x) {
    keys[i] = s_keys[i];
    index[i] = static_cast<std::int16_t>(s_index[i]);
  }
}

template <class B>
struct lookup {
  const B* keys;
  const std::int16_t* index;
  int log2_slots;
};

// The block's copy of the lookup, in shared memory.
template <class B>
struct shared_lookup {
  B keys[1 << lookup_max_log2];
  std::int16_t index[1 << lookup_max_log2];

  __device__ void load(const lookup<B>& l) {
    for (int i = threadIdx.x; i < (1 << l.log2_slots); i += blockDim.x) {
      keys[i] = l.keys[i];
      index[i] = l.index[i];
    }
  }
  // The table position of `bits`, or -1.
  __device__ int find(B bits, int log2_slots) const {
    const unsigned mask = (1u << log2_slots) - 1;
    for (unsigned i = slot_of(bits, log2_slots);; i = (i + 1) & mask) {
      const int p = index[i];
      if (p < 0 || keys[i] == bits) return p;
    }
  }
};

// ---- steps 3 and 4: one warp per chunk ------------------------------------------------

// Groups per row: max(1, ceil(len / K)) (Sect. 2: rows padded to a multiple of K, an empty
// row to one group of explicit zeros); one extra 0 at the end makes the exclusive scan also
// return the total.
__global__ void row_groups(const I* row_ptr, std::int64_t rows, std::int64_t k, std::int64_t* groups) {
  for (std::int64_t r = first_index(); r <= rows; r += grid_stride()) {
    if (r == rows) {
      groups[r] = 0;
      continue;
    }
    const std::int64_t len = row_ptr[r + 1] - row_ptr[r];
    groups[r] = len == 0 ? 1 : (len + k - 1) / k;
  }
}

// The row of each chunk's first group (its baseline row): the last row starting at or
// before it.
__global__ void chunk_rows(const std::int64_t* group_start, std::int64_t rows, std::int64_t b, std::int64_t chunks,
                           I* chunk_row) {
  for (std::int64_t c = first_index(); c < chunks; c += grid_stride()) {
    const std::int64_t g = c * b;
    chunk_row[c] = static_cast<I>(upper_bound(group_start, 0, rows + 1, g) - 1);
  }
}

constexpr int chunk_warps = block_threads / 32;  // chunks per block
constexpr int entry_rounds = 4;                  // entries per lane loaded before they are used

// The matrix and chunking, as both chunk kernels see them (values as bit patterns).
template <class B>
struct source {
  const I* row_ptr;
  const I* col_idx;
  const B* values;
  const std::int64_t* group_start;  // rows + 1
  std::int64_t rows, groups, chunks;
  int b, k;
};

// One chunk's groups, for the warp that handles it.
struct warp_chunk {
  int first[max_groups];          // CSR position of each group's first entry
  std::uint16_t len[max_groups];  // its stored entries; the rest of its K are padding
  std::uint8_t row[max_groups];   // its row offset from the chunk's baseline row (< 256)
  int start[max_groups + 1];      // set-up: first group of rows r0.., from the chunk's first group
  int ptr[max_groups + 1];        // set-up: row_ptr of rows r0..
};

// Fills w for chunk c and returns its group count. The chunk's groups lie in rows r0 (its
// baseline row) to r1 (the next chunk's baseline row, or the last row); a chunk of n <= B
// groups also spans at most n rows (every row has a group). So the starts of rows r0 ..
// min(r1, r0 + n - 1) + 1 locate every group. Ends with __syncwarp.
template <class B>
__device__ int load_chunk(const source<B>& m, std::int64_t c, std::int64_t r0, std::int64_t r1, warp_chunk& w,
                          int lane) {
  const std::int64_t g0 = c * m.b;
  const int count = static_cast<int>(min(static_cast<std::int64_t>(m.b), m.groups - g0));
  const int nr = static_cast<int>(min(static_cast<std::int64_t>(count), r1 - r0 + 1)) + 1;
  // Starts beyond the chunk are clamped to its group count: only their order matters.
#pragma unroll
  for (int q = 0; q < (max_groups + 1 + 31) / 32; ++q) {
    const int i = lane + 32 * q;
    if (i < nr) {
      w.start[i] = static_cast<int>(min(m.group_start[r0 + i] - g0, static_cast<std::int64_t>(count)));
      w.ptr[i] = m.row_ptr[r0 + i];
    }
  }
  __syncwarp();
  for (int g = lane; g < count; g += 32) {
    // The last row starting at or before g: start[0] <= 0 <= g < start[nr - 1].
    const int lo = static_cast<int>(upper_bound(w.start, 0, nr - 1, g) - 1);
    const std::int64_t first = w.ptr[lo] + (static_cast<std::int64_t>(g) - w.start[lo]) * m.k;
    w.first[g] = static_cast<int>(first);
    w.len[g] = static_cast<std::uint16_t>(
        max(static_cast<std::int64_t>(0), min(static_cast<std::int64_t>(m.k), w.ptr[lo + 1] - first)));
    w.row[g] = static_cast<std::uint8_t>(lo);
  }
  __syncwarp();
  return count;
}

// Step 3, as the CPU's first pass: format code, baselines, blob size (Sect. 2, Table 1: one
// code per chunk). Columns increase along a row, so a group's smallest and largest column
// are those of its first and last stored entry. The values are read only when the table
// may miss some (check_values: more than 256 distinct patterns); a chunk stops reading at
// its first miss.
template <class V>
__global__ void __launch_bounds__(block_threads)
    chunk_codes(source<ccoo_bits<V>> m, lookup<ccoo_bits<V>> table, bool check_values, const I* chunk_row,
                std::uint8_t* chunk_format, I* chunk_col, std::uint64_t* sizes, unsigned long long* info) {
  using B = ccoo_bits<V>;
  __shared__ warp_chunk chunk[chunk_warps];
  __shared__ shared_lookup<B> s_table;
  if (check_values) s_table.load(table);
  __syncthreads();
  const int lane = threadIdx.x % 32;
  const std::int64_t c = std::int64_t{blockIdx.x} * chunk_warps + threadIdx.x / 32;
  if (c >= m.chunks) return;
  warp_chunk& w = chunk[threadIdx.x / 32];
  const int count = load_chunk(m, c, chunk_row[c], c + 1 < m.chunks ? chunk_row[c + 1] : m.rows - 1, w, lane);

  int lo_col = INT_MAX, hi_col = -1;
  bool padded = false;
#pragma unroll
  for (int q = 0; q < max_groups / 32; ++q) {
    const int g = lane + 32 * q;
    if (g < count) {
      const int len = w.len[g], first = w.first[g];
      if (len > 0) {
        lo_col = min(lo_col, m.col_idx[first]);
        hi_col = max(hi_col, m.col_idx[first + len - 1]);
      }
      padded = padded || len < m.k;
    }
  }
  lo_col = __reduce_min_sync(full_warp, lo_col);
  hi_col = __reduce_max_sync(full_warp, hi_col);
  padded = __any_sync(full_warp, padded);

  const int e_count = count * m.k;
  bool covered = true;
  if (check_values) {
    const bool zero_in = s_table.find(B(0), table.log2_slots) >= 0;  // padding is +0.0
    for (int e0 = 0; e0 < e_count && covered; e0 += 32 * entry_rounds) {
      B v[entry_rounds];
      int state[entry_rounds];  // 0: no entry, 1: stored, 2: padding
#pragma unroll
      for (int u = 0; u < entry_rounds; ++u) {
        const int e = e0 + u * 32 + lane;
        state[u] = 0;
        v[u] = 0;
        if (e < e_count) {
          const int g = e / m.k, j = e - g * m.k;
          state[u] = j < w.len[g] ? 1 : 2;
          if (state[u] == 1) v[u] = m.values[w.first[g] + j];
        }
      }
      bool mine = true;
#pragma unroll
      for (int u = 0; u < entry_rounds; ++u)
        if (state[u] != 0) mine = mine && (state[u] == 1 ? s_table.find(v[u], table.log2_slots) >= 0 : zero_in);
      covered = __all_sync(full_warp, mine);
    }
  }
  if (lane != 0) return;
  // Offsets from the smallest stored column (0 without one), so they are unsigned.
  const long long max_off = hi_col < 0 ? 0 : static_cast<long long>(hi_col) - lo_col;
  const int width = max_off <= 0xFF ? 0 : max_off <= 0xFFFF ? 1 : 2;
  std::uint8_t code = static_cast<std::uint8_t>(width << 1);
  if (w.row[count - 1] == 0) code |= ccoo_code::single_row;
  if (covered) code |= ccoo_code::lut;
  if (padded) code |= ccoo_code::pads;
  chunk_format[c] = code;
  chunk_col[c] = hi_col < 0 ? 0 : lo_col;
  sizes[c] = ccoo_device::chunk_section(e_count, m.k, code, sizeof(V)).size;
  if (covered) info[info_any_lut] = 1;  // every writer stores the same value
}

// Whether some chunk could use a value table at all (Sect. 2: a chunk takes table indices only
// if every value field of it is in the table, which holds at most ccoo_table_capacity
// patterns): one whose value fields, padding (+0.0) included, hold at most that many distinct
// patterns. Where no chunk can, no table is stored whatever the counts (the CPU leaves
// `table` empty when no chunk uses it), so a matrix whose patterns are too many to count in
// the hash tables needs no exact count (the sort route) either. A warp per chunk: the chunk's
// stored values are one stretch of the CSR values (its groups' entries in order, from its
// first group's first entry to the next chunk's), read 32 at a time (coalesced) into a set in
// shared memory; the warp stops once it has met more patterns than a table holds (after about
// ccoo_table_capacity values where values are all distinct), or once any warp has found a
// chunk. Sets info[info_coverable]. Every chunk holds more value fields than a table (the host
// answers for a last chunk of fewer, and every chunk but the last has B*K).
constexpr int set_log2 = 9;  // 512 slots: at most 256 patterns and a round of 32 more, load < 0.6
template <class B>
__global__ void __launch_bounds__(block_threads)
    find_coverable_chunk(source<B> m, const I* chunk_row, unsigned long long* info) {
  __shared__ B sets[chunk_warps][1 << set_log2];
  const int lane = threadIdx.x % 32;
  const std::int64_t c = std::int64_t{blockIdx.x} * chunk_warps + threadIdx.x / 32;
  // Once one warp has found a chunk, the others stop at the end of their round (the flag is
  // read at its start, so that the load's latency passes with the round's own).
  const auto flag = [&] {
    return lane == 0 && *static_cast<volatile unsigned long long*>(info + info_coverable) != 0 ? 1 : 0;
  };
  const auto found = [&](int read) { return __shfl_sync(full_warp, read, 0) != 0; };
  if (c >= m.chunks || found(flag())) return;
  const auto first_entry = [&](std::int64_t chunk) -> std::int64_t {
    if (chunk == m.chunks) return m.row_ptr[m.rows];
    const std::int64_t r = chunk_row[chunk];  // the row of the chunk's first group
    return m.row_ptr[r] + (chunk * m.b - m.group_start[r]) * m.k;
  };
  const std::int64_t e0 = first_entry(c), stored = first_entry(c + 1) - e0;
  const std::int64_t fields = min(static_cast<std::int64_t>(m.b), m.groups - c * m.b) * m.k;
  B* const set = sets[threadIdx.x / 32];
  for (int i = lane; i < (1 << set_log2); i += 32) set[i] = empty_key<B>;
  __syncwarp();
  // Position 0 is +0.0 when the chunk has padding; the stored values follow.
  const std::int64_t pad = stored < fields ? 1 : 0, n = stored + pad;
  int distinct = 0;
  bool ones = false;  // the all-ones pattern (it marks empty slots) was met
  for (std::int64_t p0 = 0; p0 < n; p0 += 32) {
    const int stop = flag();
    const std::int64_t p = p0 + lane;
    const B key = p >= n ? empty_key<B> : p < pad ? B(0) : m.values[e0 + p - pad];
    bool added = false;
    if (p < n && key != empty_key<B>) {
      const unsigned mask = (1u << set_log2) - 1;
      for (unsigned i = slot_of(key, set_log2);; i = (i + 1) & mask) {
        const B old = atomic_cas(set + i, empty_key<B>, key);
        if (old == empty_key<B> || old == key) {
          added = old == empty_key<B>;
          break;
        }
      }
    }
    distinct += __popc(__ballot_sync(full_warp, added));
    if (!ones && __any_sync(full_warp, p < n && key == empty_key<B>)) {
      ones = true;
      ++distinct;
    }
    if (distinct > ccoo_table_capacity || found(stop)) return;  // the whole warp
  }
  if (lane == 0) info[info_coverable] = 1;
}

// Step 4: row offsets, pad bitmap, column offsets, values (Sect. 2, Fig. 2), and the zero
// filler, so the blob needs no clearing. Lane l handles entries l, l + 32, ...: the CSR reads
// and the blob writes of a warp are contiguous. The pad bitmap bytes are shared by
// neighbouring entries: a ballot gathers the flags of the warp's 32 consecutive entries and
// four lanes write their four bytes.
template <class V>
__global__ void __launch_bounds__(block_threads)
    chunk_blobs(source<ccoo_bits<V>> m, lookup<ccoo_bits<V>> table, bool table_used, const std::uint8_t* chunk_format,
                const I* chunk_row, const I* chunk_col, const std::uint64_t* chunk_ptr, std::uint8_t* blob) {
  using B = ccoo_bits<V>;
  __shared__ warp_chunk chunk[chunk_warps];
  __shared__ shared_lookup<B> s_table;
  if (table_used) s_table.load(table);
  __syncthreads();
  const int lane = threadIdx.x % 32;
  const std::int64_t c = std::int64_t{blockIdx.x} * chunk_warps + threadIdx.x / 32;
  if (c >= m.chunks) return;
  warp_chunk& w = chunk[threadIdx.x / 32];
  const std::uint8_t code = chunk_format[c];
  const bool single = code & ccoo_code::single_row, lut = code & ccoo_code::lut, pads = code & ccoo_code::pads;
  const int base_col = chunk_col[c];
  std::uint8_t* const p = blob + chunk_ptr[c];
  const int count = load_chunk(m, c, chunk_row[c], c + 1 < m.chunks ? chunk_row[c + 1] : m.rows - 1, w, lane);
  const int e_count = count * m.k;
  const section l = ccoo_device::chunk_section(e_count, m.k, code, sizeof(V));

  if (!single)
    for (int g = lane; g < count; g += 32) p[l.rows + g] = w.row[g];
  // The alignment gaps after the bitmap, the column offsets and the values: under 8 bytes each.
  const std::uint32_t pads_end = l.pads + (pads ? (static_cast<std::uint32_t>(e_count) + 7) / 8 : 0);
  const std::uint32_t cols_end = l.cols + static_cast<std::uint32_t>(e_count) * l.col_bytes;
  const std::uint32_t values_end = l.values + static_cast<std::uint32_t>(e_count) * l.value_bytes;
  if (lane < 8) {
    if (pads_end + lane < l.cols) p[pads_end + lane] = 0;
    if (cols_end + lane < l.values) p[cols_end + lane] = 0;
    if (values_end + lane < l.size) p[values_end + lane] = 0;
  }
  // Padding: column offset 0, value +0.0 or, in a table chunk, the table's +0.0 (there
  // whenever the chunk has padding, as the chunk is covered).
  const std::uint8_t zero_index = lut ? static_cast<std::uint8_t>(s_table.find(B(0), table.log2_slots)) : 0;

  // The bounds are the same for the whole warp, so every lane reaches the ballot.
  for (int e0 = 0; e0 < e_count; e0 += 32 * entry_rounds) {
    B v[entry_rounds];
    int col[entry_rounds];
    bool stored[entry_rounds];
#pragma unroll
    for (int u = 0; u < entry_rounds; ++u) {
      const int e = e0 + u * 32 + lane;
      stored[u] = false;
      v[u] = 0;
      col[u] = base_col;
      if (e < e_count) {
        const int g = e / m.k, j = e - g * m.k;
        if (j < w.len[g]) {
          stored[u] = true;
          col[u] = m.col_idx[w.first[g] + j];
          v[u] = m.values[w.first[g] + j];
        }
      }
    }
#pragma unroll
    for (int u = 0; u < entry_rounds; ++u) {
      const int w0 = e0 + u * 32, e = w0 + lane;
      const bool valid = e < e_count;
      if (valid) {
        const auto off = static_cast<std::uint32_t>(col[u] - base_col);
        switch (l.col_bytes) {
          case 1: p[l.cols + e] = static_cast<std::uint8_t>(off); break;
          case 2: reinterpret_cast<std::uint16_t*>(p + l.cols)[e] = static_cast<std::uint16_t>(off); break;
          default: reinterpret_cast<std::uint32_t*>(p + l.cols)[e] = off; break;
        }
        if (lut)
          p[l.values + e] = stored[u] ? static_cast<std::uint8_t>(s_table.find(v[u], table.log2_slots)) : zero_index;
        else
          reinterpret_cast<B*>(p + l.values)[e] = v[u];
      }
      if (pads) {
        const unsigned mask = __ballot_sync(full_warp, valid && !stored[u]);
        // w0 is a multiple of 32: the warp's flags fill 4 whole bitmap bytes, of which those
        // holding at least one entry are inside the bitmap.
        if (lane < 4 && w0 + 8 * lane < e_count)
          p[l.pads + w0 / 8 + lane] = static_cast<std::uint8_t>(mask >> (8 * lane));
      }
    }
  }
}

// ---- host side ----------------------------------------------------------------------

void check_launch(const char* what) { check_cuda(cudaGetLastError(), std::string("gpu::csr_to_ccoo: ") + what); }

template <class T>
T read_one(const T* device_ptr, gpu_context& ctx) {
  T v{};
  check_cuda(cudaMemcpyAsync(&v, device_ptr, sizeof(T), cudaMemcpyDeviceToHost, stream_of(ctx)),
             "gpu::csr_to_ccoo: reading back a result");
  ctx.synchronize();
  return v;
}

std::array<std::uint64_t, info_words> read_info(const device_array<std::uint64_t>& info, gpu_context& ctx) {
  std::array<std::uint64_t, info_words> h{};
  check_cuda(cudaMemcpyAsync(h.data(), info.data(), sizeof h, cudaMemcpyDeviceToHost, stream_of(ctx)),
             "gpu::csr_to_ccoo: reading back sizes");
  ctx.synchronize();
  return h;
}

void check_param(const char* name, std::int32_t v, std::int32_t max) {
  if (v < 1 || v > max)
    fail(errc::usage, std::string("gpu::csr_to_ccoo: ") + name + " = " + std::to_string(v) + " is out of range [1, " +
                          std::to_string(max) +
                          "]: pass resolved parameters (cpu::resolve_ccoo_params chooses the automatic ones)");
}

template <class B>
struct value_table_result {
  std::vector<B> table;   // bit patterns in table order
  std::int64_t distinct;  // distinct patterns, +0.0 of the padding included
};

// The canonical value table by sorting every value (for matrices whose distinct patterns
// overflow the hash tables, global or shared in every partition, and where some chunk could
// use a table): radix sort of the bit patterns, run-length encoding (cub), +0.0 credited with
// the `pads` padding entries, then a stable descending radix sort of the counts, which keeps
// equal counts in ascending bit order.
template <class V>
value_table_result<ccoo_bits<V>> sorted_value_table(const csr<V, I, device>& a, std::int64_t pads, gpu_context& ctx) {
  using B = ccoo_bits<V>;
  const cudaStream_t s = stream_of(ctx);
  const std::int64_t nnz = a.nnz();
  // Slot 0 is kept free for a +0.0 candidate made of padding alone, so that it can go in
  // front of the runs (bit pattern 0 is the smallest) without moving them.
  device_array<B> bits(nnz + 1), sorted(nnz);
  device_array<std::uint32_t> counts(nnz + 1);
  std::int64_t runs = 0;
  if (nnz > 0) {
    std::size_t bytes = 0;
    const auto* in = reinterpret_cast<const B*>(a.values.data());
    check_cuda(cub::DeviceRadixSort::SortKeys(nullptr, bytes, in, sorted.data(), nnz, 0, int{sizeof(B) * 8}, s),
               "gpu::csr_to_ccoo: sizing the value sort");
    check_cuda(cub::DeviceRadixSort::SortKeys(ctx.workspace(bytes), bytes, in, sorted.data(), nnz, 0,
                                              int{sizeof(B) * 8}, s),
               "gpu::csr_to_ccoo: value sort");
    device_array<int> num_runs(1);
    check_cuda(cub::DeviceRunLengthEncode::Encode(nullptr, bytes, sorted.data(), bits.data() + 1, counts.data() + 1,
                                                  num_runs.data(), static_cast<int>(nnz), s),
               "gpu::csr_to_ccoo: sizing the value count");
    check_cuda(cub::DeviceRunLengthEncode::Encode(ctx.workspace(bytes), bytes, sorted.data(), bits.data() + 1,
                                                  counts.data() + 1, num_runs.data(), static_cast<int>(nnz), s),
               "gpu::csr_to_ccoo: value count");
    runs = read_one(num_runs.data(), ctx);
  }
  std::int64_t first = 1, n = runs;
  if (pads > 0) {
    if (runs > 0 && read_one(bits.data() + 1, ctx) == B(0)) {
      const std::uint32_t zeros = read_one(counts.data() + 1, ctx) + static_cast<std::uint32_t>(pads);
      check_cuda(cudaMemcpyAsync(counts.data() + 1, &zeros, sizeof zeros, cudaMemcpyHostToDevice, s),
                 "gpu::csr_to_ccoo: counting padding");
    } else {
      const B zero_bits = 0;
      const auto pad_count = static_cast<std::uint32_t>(pads);
      check_cuda(cudaMemcpyAsync(bits.data(), &zero_bits, sizeof zero_bits, cudaMemcpyHostToDevice, s),
                 "gpu::csr_to_ccoo: adding +0.0 for padding");
      check_cuda(cudaMemcpyAsync(counts.data(), &pad_count, sizeof pad_count, cudaMemcpyHostToDevice, s),
                 "gpu::csr_to_ccoo: counting padding");
      first = 0;
      ++n;
    }
  }
  value_table_result<B> r{{}, n};
  if (n == 0) return r;
  device_array<std::uint32_t> counts_sorted(n);
  device_array<B> bits_sorted(n);
  std::size_t bytes = 0;
  check_cuda(cub::DeviceRadixSort::SortPairsDescending(nullptr, bytes, counts.data() + first, counts_sorted.data(),
                                                       bits.data() + first, bits_sorted.data(), n, 0, 32, s),
             "gpu::csr_to_ccoo: sizing the count sort");
  check_cuda(cub::DeviceRadixSort::SortPairsDescending(ctx.workspace(bytes), bytes, counts.data() + first,
                                                       counts_sorted.data(), bits.data() + first, bits_sorted.data(),
                                                       n, 0, 32, s),
             "gpu::csr_to_ccoo: count sort");
  r.table.resize(static_cast<std::size_t>(std::min<std::int64_t>(n, ccoo_table_capacity)));
  check_cuda(cudaMemcpyAsync(r.table.data(), bits_sorted.data(), r.table.size() * sizeof(B), cudaMemcpyDeviceToHost, s),
             "gpu::csr_to_ccoo: reading the value table");
  ctx.synchronize();
  return r;
}

}  // namespace

template <class V>
ccoo<V, I, device> csr_to_ccoo(const csr<V, I, device>& a, const ccoo_params& resolved, gpu_context& ctx) {
  using B = ccoo_bits<V>;
  check_param("chunk_b", resolved.chunk_b, ccoo_max_chunk_b);
  check_param("chunk_k", resolved.chunk_k, ccoo_max_chunk_k);
  const cudaStream_t s = stream_of(ctx);
  ccoo<V, I, device> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.params = resolved;
  const std::int64_t nb = resolved.chunk_b, nk = resolved.chunk_k, nnz = a.nnz(), rows = a.rows;
  // Without rows or columns there is nothing to store and no column to pad with.
  if (a.rows == 0 || a.cols == 0) {
    const std::uint64_t zero = 0;
    const std::int64_t counts[2] = {0, 0};
    out.chunk_ptr.upload(&zero, 1);
    out.counts.upload(counts, 2);
    return out;
  }
  const auto* values = reinterpret_cast<const B*>(a.values.data());

  // 1. The first group of every row.
  device_array<std::int64_t> groups(rows + 1), group_start(rows + 1);
  row_groups<<<launch_blocks(rows + 1, block_threads), block_threads, 0, s>>>(a.row_ptr.data(), rows, nk,
                                                                              groups.data());
  check_launch("counting groups");
  std::size_t bytes = 0;
  check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, bytes, groups.data(), group_start.data(), rows + 1, s),
             "gpu::csr_to_ccoo: sizing the group scan");
  check_cuda(cub::DeviceScan::ExclusiveSum(ctx.workspace(bytes), bytes, groups.data(), group_start.data(), rows + 1, s),
             "gpu::csr_to_ccoo: group scan");

  // 2. Exact counts of the bit patterns, padding included, into the hash table, and the
  // distinct patterns collected; the first wait for the device reads their number back with
  // the group count.
  device_array<std::uint64_t> info(info_words);
  const int log2_slots = counter_log2_slots(nnz);
  const std::int64_t slots = std::int64_t{1} << log2_slots;
  device_array<B> keys(slots), found_bits(slots + 1);
  device_array<std::uint32_t> counts(slots), found_counts(slots + 1);
  const pattern_table<B> table{keys.data(), counts.data(), log2_slots,
                               reinterpret_cast<unsigned long long*>(info.data())};
  int sms = 0, shared_optin = 0;
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx.device()),
             "gpu::csr_to_ccoo: reading the multiprocessor count");
  check_cuda(cudaDeviceGetAttribute(&shared_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx.device()),
             "gpu::csr_to_ccoo: reading the shared memory size");
  // The largest block table the device gives a block (count_patterns).
  int shared_log2 = most_shared_log2;
  while (shared_log2 > least_shared_log2 &&
         block_table_bytes<B>(shared_log2) > static_cast<std::size_t>(std::max(shared_optin, 48 << 10)))
    --shared_log2;
  const std::size_t shared_bytes = block_table_bytes<B>(shared_log2);
  check_cuda(cudaFuncSetAttribute(count_patterns<B>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(shared_bytes)),
             "gpu::csr_to_ccoo: sizing the counting blocks");
  // A block per multiprocessor (fewer for a small matrix); each flushes its table once.
  constexpr std::int64_t tile = std::int64_t{count_threads} * count_items;
  const auto count_blocks = static_cast<unsigned>(std::clamp<std::int64_t>((nnz + tile - 1) / tile, 1, sms));
  std::array<std::uint64_t, info_words> h{};
  // The chunks, once the group count is back: their number and baseline rows.
  constexpr std::int64_t int32_limit = std::numeric_limits<std::int32_t>::max();
  std::int64_t total_groups = 0, entries = 0, chunks = 0;
  bool laid_out = false;
  const auto lay_out = [&] {
    total_groups = static_cast<std::int64_t>(h[info_total_groups]);
    entries = total_groups * nk;
    if (entries > int32_limit)
      fail(errc::unsupported, "ccoo: " + std::to_string(entries) +
                                  " entries after padding every row to a multiple of chunk_k = " + std::to_string(nk) +
                                  " exceed the 32-bit entry count (at most " + std::to_string(int32_limit) +
                                  "); use a smaller chunk_k");
    chunks = (total_groups + nb - 1) / nb;
    out.chunk_row.resize(chunks);
    chunk_rows<<<launch_blocks(chunks, block_threads), block_threads, 0, s>>>(group_start.data(), rows, nb, chunks,
                                                                              out.chunk_row.data());
    check_launch("finding the baseline rows");
    laid_out = true;
  };
  const auto matrix = [&] {
    return source<B>{a.row_ptr.data(), a.col_idx.data(), values, group_start.data(), rows, total_groups, chunks,
                     static_cast<int>(nb), static_cast<int>(nk)};
  };
  const auto chunk_blocks = [&] { return static_cast<unsigned>((chunks + chunk_warps - 1) / chunk_warps); };
  bool coverable = true;  // some chunk could use a table (find_coverable_chunk)
  for (int partitions = 1;; partitions *= 2) {
    check_cuda(cudaMemsetAsync(info.data(), 0, info_words * sizeof(std::uint64_t), s), "gpu::csr_to_ccoo: clearing");
    check_cuda(cudaMemsetAsync(keys.data(), 0xFF, slots * sizeof(B), s),
               "gpu::csr_to_ccoo: clearing the value counts");
    check_cuda(cudaMemsetAsync(counts.data(), 0, slots * sizeof(std::uint32_t), s),
               "gpu::csr_to_ccoo: clearing the value counts");
    count_patterns<B><<<dim3(count_blocks, static_cast<unsigned>(partitions)), count_threads, shared_bytes, s>>>(
        values, nnz, table, group_start.data(), rows, nk, shared_log2);
    check_launch("counting values");
    collect_patterns<B><<<launch_blocks(slots, block_threads), block_threads, 0, s>>>(table, found_bits.data(),
                                                                                      found_counts.data());
    check_launch("collecting the distinct values");
    h = read_info(info, ctx);
    if (partitions == 1 && (h[info_full] != 0 || h[info_overflow] != 0)) {
      // Too many patterns for one count: before counting them again, or sorting them all,
      // find out whether any chunk could use the table that the counts would give.
      // A chunk of at most ccoo_table_capacity value fields could be covered whatever its
      // values; only the last chunk can have fewer than B*K. It is found before the kernel,
      // which would otherwise read every other chunk before reaching the last.
      lay_out();
      coverable = (total_groups - (chunks - 1) * nb) * nk <= static_cast<std::int64_t>(ccoo_table_capacity);
      if (!coverable) {
        find_coverable_chunk<B><<<chunk_blocks(), block_threads, 0, s>>>(matrix(), out.chunk_row.data(), table.info);
        check_launch("looking for chunks a table could cover");
        coverable = read_info(info, ctx)[info_coverable] != 0;
      }
      if (!coverable) break;
    }
    if (h[info_full] == 0 || partitions == max_partitions) break;
  }
  if (!laid_out) lay_out();
  const std::int64_t counts_host[2] = {entries, nnz};
  out.counts.upload(counts_host, 2);

  // The canonical table (ccoo_value_table), as bit patterns on the device in table order;
  // check_values: whether a chunk must read its values to know if the table covers it (the
  // table does not hold every distinct pattern). Where no chunk can be covered, no table is
  // made (neither branch): each chunk then misses at its first value.
  device_array<B> table_bits;
  int table_size = 0;
  bool check_values = true;
  const auto take = [&](std::int64_t distinct) {
    table_size = static_cast<int>(std::min<std::int64_t>(distinct, ccoo_table_capacity));
    check_values = distinct > static_cast<std::int64_t>(ccoo_table_capacity);
  };
  if (coverable && h[info_overflow] == 0 && h[info_full] == 0) {
    // By pattern, then stably by count descending: equal counts keep the ascending pattern
    // order, the table's tie rule.
    const auto distinct = static_cast<std::int64_t>(h[info_distinct]);
    device_array<B> bits_by_pattern(distinct);
    device_array<std::uint32_t> counts_by_pattern(distinct), counts_sorted(distinct);
    table_bits.resize(distinct);
    check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, bytes, found_bits.data(), bits_by_pattern.data(),
                                               found_counts.data(), counts_by_pattern.data(), distinct, 0,
                                               int{sizeof(B) * 8}, s),
               "gpu::csr_to_ccoo: sizing the pattern sort");
    check_cuda(cub::DeviceRadixSort::SortPairs(ctx.workspace(bytes), bytes, found_bits.data(), bits_by_pattern.data(),
                                               found_counts.data(), counts_by_pattern.data(), distinct, 0,
                                               int{sizeof(B) * 8}, s),
               "gpu::csr_to_ccoo: pattern sort");
    check_cuda(cub::DeviceRadixSort::SortPairsDescending(nullptr, bytes, counts_by_pattern.data(), counts_sorted.data(),
                                                         bits_by_pattern.data(), table_bits.data(), distinct, 0, 32, s),
               "gpu::csr_to_ccoo: sizing the count sort");
    check_cuda(cub::DeviceRadixSort::SortPairsDescending(ctx.workspace(bytes), bytes, counts_by_pattern.data(),
                                                         counts_sorted.data(), bits_by_pattern.data(),
                                                         table_bits.data(), distinct, 0, 32, s),
               "gpu::csr_to_ccoo: count sort");
    take(distinct);
  } else if (coverable) {
    const value_table_result<B> r = sorted_value_table(a, entries - nnz, ctx);
    table_bits.upload(r.table.data(), r.table.size());
    take(r.distinct);
  }
  const int lookup_log2 = lookup_log2_slots(table_size);
  device_array<B> lookup_keys(std::size_t{1} << lookup_log2);
  device_array<std::int16_t> lookup_index(std::size_t{1} << lookup_log2);
  build_lookup<B><<<1, block_threads, 0, s>>>(table_bits.data(), table_size, lookup_log2, lookup_keys.data(),
                                              lookup_index.data());
  check_launch("indexing the value table");
  const lookup<B> index{lookup_keys.data(), lookup_index.data(), lookup_log2};

  // 3. Format codes, baseline columns and blob sizes (the baseline rows came with the chunk
  // count); chunk_ptr by an inclusive scan behind a 0. When the table holds every distinct
  // pattern, every chunk is covered without reading a value.
  const source<B> m = matrix();
  out.chunk_format.resize(chunks);
  out.chunk_col.resize(chunks);
  out.chunk_ptr.resize(chunks + 1);
  device_array<std::uint64_t> sizes(chunks);
  chunk_codes<V><<<chunk_blocks(), block_threads, 0, s>>>(m, index, check_values, out.chunk_row.data(),
                                                          out.chunk_format.data(), out.chunk_col.data(), sizes.data(),
                                                          table.info);
  check_launch("choosing the chunk formats");
  check_cuda(cudaMemsetAsync(out.chunk_ptr.data(), 0, sizeof(std::uint64_t), s), "gpu::csr_to_ccoo: chunk_ptr[0]");
  check_cuda(cub::DeviceScan::InclusiveSum(nullptr, bytes, sizes.data(), out.chunk_ptr.data() + 1, chunks, s),
             "gpu::csr_to_ccoo: sizing the blob scan");
  check_cuda(cub::DeviceScan::InclusiveSum(ctx.workspace(bytes), bytes, sizes.data(), out.chunk_ptr.data() + 1,
                                           chunks, s),
             "gpu::csr_to_ccoo: blob scan");
  copy_on_device(info.data() + info_blob_bytes, out.chunk_ptr.data() + chunks, 1, ctx, "gpu::csr_to_ccoo: blob size");
  h = read_info(info, ctx);

  // 4. The blobs, and the table when a chunk uses it.
  const bool table_used = h[info_any_lut] != 0;
  out.blob.resize(h[info_blob_bytes]);
  chunk_blobs<V><<<chunk_blocks(), block_threads, 0, s>>>(m, index, table_used, out.chunk_format.data(),
                                                        out.chunk_row.data(), out.chunk_col.data(),
                                                        out.chunk_ptr.data(), out.blob.data());
  check_launch("writing the blobs");
  if (table_used) {
    out.table.resize(table_size);
    copy_on_device(reinterpret_cast<B*>(out.table.data()), table_bits.data(), table_size, ctx,
                   "gpu::csr_to_ccoo: the value table");
  }
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V) \
  template ccoo<V, I, device> csr_to_ccoo<V>(const csr<V, I, device>&, const ccoo_params&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
