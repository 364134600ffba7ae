// CSR -> CCOO (specs/formats/ccoo.md; Aliaga et al., Euro-Par 2020 Workshops, Sect. 2).
// Rows are padded to whole groups of K entries, the groups cut into chunks of B, and each
// chunk encoded with the smallest fields that hold it. Two parallel passes over the
// chunks: the first picks each chunk's format code (hence its blob size), the second
// writes the blobs at their prefix-summed offsets. Every choice depends only on the
// chunk's own entries and the global value table, never on the thread count.
//
// The value table (ccoo_value_table's canonical table, formats/ccoo.hpp) is computed here
// from exact counts in hash tables (value_table below) rather than by sorting every value,
// and table indices are found in a small hash table of the at most 256 table values, once
// per entry (pass 1 keeps them for pass 2). A matrix none of whose chunks holds 256 or fewer
// distinct values (random values) cannot use a table: it is then not counted at all.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "convert/cpu/ccoo.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {
namespace {

using I = std::int32_t;
constexpr std::int64_t int32_limit = std::numeric_limits<std::int32_t>::max();

// Groups row r occupies: its entries padded with zeros to a multiple of K, and an empty
// row one all-zero group (Sect. 2: "each empty row is padded with an explicit zero
// element"; "pad each matrix row with zeros so that its dimension becomes an exact
// multiple of K"). So a group never straddles two rows.
std::int64_t row_groups(std::int64_t len, std::int64_t k) { return std::max<std::int64_t>(1, (len + k - 1) / k); }

template <class V>
std::int64_t padded_entries(const csr<V, I>& a, std::int64_t k) {
  const int blocks = block_count(a.rows, 1 << 14);
  std::vector<std::int64_t> part(static_cast<std::size_t>(blocks), 0);
  parallel_blocks(a.rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    std::int64_t s = 0;
    for (std::int64_t r = lo; r < hi; ++r) s += row_groups(a.row_ptr[r + 1] - a.row_ptr[r], k);
    part[b] = s;
  });
  return k * std::accumulate(part.begin(), part.end(), std::int64_t{0});
}

// Exact counts of bit patterns: open addressing with linear probing on a second hash (its
// top bits, from a multiplier unrelated to ccoo_hash_bits, so that the patterns of one
// partition by ccoo_hash_bits spread over the whole table), a count of 0 marking an empty slot,
// grown to keep at most half of the slots in use, up to `max_slots`.
template <class B>
class pattern_counter {
 public:
  struct slot {
    B bits;
    std::uint32_t count;  // of stored values: at most nnz < 2^31
  };

  explicit pattern_counter(std::size_t max_slots) : max_slots_(max_slots) { reset(0); }

  // Empties the table, sized for about `expected` patterns.
  void reset(std::size_t expected) {
    std::size_t size = 16;
    while (size < 2 * expected && size < max_slots_) size *= 2;
    slots_.assign(size, slot{B(0), 0});
    shift_ = 64 - std::countr_zero(size);
    used_ = 0;
  }
  // Adds n to the count of `bits`; false (nothing added) when that needs more than max_slots.
  bool add(B bits, std::uint32_t n) {
    if (2 * (used_ + 1) > slots_.size()) {
      if (2 * slots_.size() > max_slots_) return false;
      grow();
    }
    insert(bits, n);
    return true;
  }
  const std::vector<slot>& slots() const { return slots_; }

 private:
  static std::size_t home(B bits, int shift) {
    return static_cast<std::size_t>((std::uint64_t{bits} * 0xD6E8FEB86659FD93ull) >> shift);
  }
  void insert(B bits, std::uint32_t n) {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = home(bits, shift_);; i = (i + 1) & mask) {
      slot& s = slots_[i];
      if (s.count == 0) {
        s = {bits, n};
        ++used_;
        return;
      }
      if (s.bits == bits) {
        s.count += n;
        return;
      }
    }
  }
  void grow() {
    std::vector<slot> old(2 * slots_.size(), slot{B(0), 0});
    old.swap(slots_);
    --shift_;
    used_ = 0;
    for (const slot& s : old)
      if (s.count != 0) insert(s.bits, s.count);
  }

  std::vector<slot> slots_;
  std::size_t max_slots_;
  int shift_ = 0;
  std::size_t used_ = 0;
};

// A table candidate: a bit pattern and its count (padding included for +0.0).
template <class B>
struct candidate {
  std::int64_t count;
  B bits;
};

// The table order: more frequent first, then the smaller bit pattern. A strict total
// order on distinct patterns, so the first 256 are well defined.
template <class B>
bool better(const candidate<B>& x, const candidate<B>& y) {
  return x.count != y.count ? x.count > y.count : x.bits < y.bits;
}

// The best ccoo_table_capacity candidates offered so far. Once that many are known, a
// candidate that is not better than the worst of them cannot be among the best and is
// dropped at once (most patterns, on matrices of many distinct values).
template <class B>
class best_candidates {
 public:
  void offer(const candidate<B>& c) {
    if (full_ && !better(c, worst_)) return;
    kept_.push_back(c);
    if (kept_.size() == 2 * ccoo_table_capacity) compact();
  }
  void merge(const best_candidates& other) {
    for (const auto& c : other.kept_) offer(c);
  }
  // The best candidates, best first.
  std::vector<candidate<B>> sorted() {
    compact();
    std::sort(kept_.begin(), kept_.end(), better<B>);
    return kept_;
  }

 private:
  void compact() {
    if (kept_.size() <= ccoo_table_capacity) return;
    std::nth_element(kept_.begin(), kept_.begin() + ccoo_table_capacity - 1, kept_.end(), better<B>);
    kept_.resize(ccoo_table_capacity);
    worst_ = kept_.back();
    full_ = true;
  }

  std::vector<candidate<B>> kept_;
  candidate<B> worst_{0, B(0)};
  bool full_ = false;
};

// Offers the patterns of `counts`, adding the `pads` padding entries (explicit +0.0
// values) to the count of +0.0; sets zero_seen when +0.0 is among them.
template <class B>
void offer_all(const pattern_counter<B>& counts, B zero_bits, std::int64_t pads, best_candidates<B>& best,
               bool& zero_seen) {
  for (const auto& s : counts.slots())
    if (s.count != 0) {
      const bool zero = s.bits == zero_bits;
      best.offer({s.count + (zero ? pads : 0), s.bits});
      zero_seen = zero_seen || zero;
    }
}

// The canonical value table (ccoo_value_table in formats/ccoo.hpp: the min(256, distinct)
// most frequent bit patterns of n stored values plus `pads` +0.0 padding entries, by count
// descending, ties by bit pattern ascending), from exact counts. With few distinct values,
// one hash table per worker over a range of the values (runs of equal values counted at
// once), merged. When a table would outgrow the first-level cache, the values are instead
// partitioned by hash into buckets of about 512, each bucket counted in a small table (a
// pattern lies in one bucket, so its count there is exact).
template <class V>
array<V> value_table(const V* stored, std::int64_t n, std::int64_t pads) {
  using B = ccoo_bits<V>;
  constexpr std::size_t cached_slots = std::size_t{1} << 12;  // 32 or 64 KiB
  const B zero_bits = std::bit_cast<B>(V(0));
  best_candidates<B> best;
  bool zero_seen = false;

  const int blocks = block_count(n, 1 << 16);
  bool few = true;
  {
    std::vector<pattern_counter<B>> part(static_cast<std::size_t>(blocks), pattern_counter<B>(cached_slots));
    std::vector<char> fits(static_cast<std::size_t>(blocks), 1);
    parallel_blocks(n, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi;) {
        const B bits = std::bit_cast<B>(stored[i]);
        std::int64_t j = i + 1;
        while (j < hi && std::bit_cast<B>(stored[j]) == bits) ++j;
        if (!part[b].add(bits, static_cast<std::uint32_t>(j - i))) {
          fits[b] = 0;
          return;
        }
        i = j;
      }
    });
    few = std::all_of(fits.begin(), fits.end(), [](char f) { return f != 0; });
    for (std::size_t b = 1; b < part.size() && few; ++b)
      for (const auto& s : part[b].slots())
        if (s.count != 0 && !part[0].add(s.bits, s.count)) {
          few = false;
          break;
        }
    if (few) offer_all(part[0], zero_bits, pads, best, zero_seen);
  }
  if (!few) {
    const int log2_buckets = std::clamp(static_cast<int>(std::bit_width(static_cast<std::uint64_t>(n >> 9))), 1, 16);
    const std::size_t buckets = std::size_t{1} << log2_buckets;
    auto bucket_of = [&](B bits) { return static_cast<std::size_t>(ccoo_hash_bits(bits) >> (64 - log2_buckets)); };
    // Bucket sizes per worker, then each worker's place in each bucket.
    std::vector<std::vector<std::int64_t>> at(static_cast<std::size_t>(blocks), std::vector<std::int64_t>(buckets, 0));
    parallel_blocks(n, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) ++at[b][bucket_of(std::bit_cast<B>(stored[i]))];
    });
    std::vector<std::int64_t> bucket_start(buckets + 1, 0);
    for (std::size_t k = 0; k < buckets; ++k) {
      std::int64_t s = bucket_start[k];
      for (auto& w : at) {
        const std::int64_t size = w[k];
        w[k] = s;
        s += size;
      }
      bucket_start[k + 1] = s;
    }
    array<B> bits(static_cast<std::size_t>(n));
    parallel_blocks(n, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) {
        const B x = std::bit_cast<B>(stored[i]);
        bits[at[b][bucket_of(x)]++] = x;
      }
    });
    const int workers = block_count(static_cast<std::int64_t>(buckets), 16);
    std::vector<best_candidates<B>> found(static_cast<std::size_t>(workers));
    std::vector<char> zero_in(static_cast<std::size_t>(workers), 0);
    parallel_blocks(static_cast<std::int64_t>(buckets), workers, [&](int w, std::int64_t lo, std::int64_t hi) {
      pattern_counter<B> counts(std::numeric_limits<std::size_t>::max());
      bool zero = false;
      for (std::int64_t k = lo; k < hi; ++k) {
        counts.reset(static_cast<std::size_t>(bucket_start[k + 1] - bucket_start[k]));
        for (std::int64_t i = bucket_start[k]; i < bucket_start[k + 1]; ++i) counts.add(bits[i], 1);
        offer_all(counts, zero_bits, pads, found[w], zero);
      }
      zero_in[w] = zero;
    });
    for (int w = 0; w < workers; ++w) {
      best.merge(found[w]);
      zero_seen = zero_seen || zero_in[w];
    }
  }
  if (!zero_seen && pads > 0) best.offer({pads, zero_bits});
  const std::vector<candidate<B>> chosen = best.sorted();
  array<V> table(chosen.size());
  for (std::size_t i = 0; i < chosen.size(); ++i) table[i] = std::bit_cast<V>(chosen[i].bits);
  return table;
}

// Table index by bit pattern: open addressing over 512 slots for the at most 256 values.
template <class B>
class table_index {
 public:
  template <class V>
  table_index(const V* table, std::size_t n) {
    index_.fill(-1);
    for (std::size_t t = 0; t < n; ++t) {
      const B bits = std::bit_cast<B>(table[t]);
      std::size_t i = ccoo_hash_bits(bits) >> (64 - log2_slots);
      while (index_[i] >= 0) i = (i + 1) & (slots - 1);
      keys_[i] = bits;
      index_[i] = static_cast<std::int16_t>(t);
    }
  }
  // The index of `bits` in the table, or -1.
  int operator()(B bits) const {
    for (std::size_t i = ccoo_hash_bits(bits) >> (64 - log2_slots);; i = (i + 1) & (slots - 1)) {
      if (index_[i] < 0 || keys_[i] == bits) return index_[i];
    }
  }

 private:
  static constexpr int log2_slots = 9;
  static constexpr std::size_t slots = std::size_t{1} << log2_slots;
  static_assert(slots >= 2 * ccoo_table_capacity);
  std::array<B, slots> keys_{};
  std::array<std::int16_t, slots> index_;
};

void check_param(std::string_view name, std::int32_t v, std::int32_t max) {
  if (v < 0 || v > max)
    fail(errc::usage, "ccoo: " + std::string(name) + " = " + std::to_string(v) + " is out of range [1, " +
                          std::to_string(max) + "] (0 = automatic)");
}

}  // namespace

template <class V>
ccoo_params resolve_ccoo_params(const csr<V, I>& a, ccoo_params requested) {
  check_param("chunk_b", requested.chunk_b, ccoo_max_chunk_b);
  check_param("chunk_k", requested.chunk_k, ccoo_max_chunk_k);
  ccoo_params p = requested;
  if (p.chunk_b == 0) p.chunk_b = 256;
  if (p.chunk_k == 0) {
    // Padded entries for K = 1, 2, 4 in one pass over the rows.
    const int blocks = block_count(a.rows, 1 << 14);
    std::vector<std::array<std::int64_t, 3>> part(static_cast<std::size_t>(blocks));
    parallel_blocks(a.rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
      std::array<std::int64_t, 3> s{};
      for (std::int64_t r = lo; r < hi; ++r) {
        const std::int64_t len = a.row_ptr[r + 1] - a.row_ptr[r];
        for (int x = 0; x < 3; ++x) s[x] += row_groups(len, std::int64_t{1} << x) << x;
      }
      part[b] = s;
    });
    std::array<std::int64_t, 3> padded{};
    for (const auto& s : part)
      for (int x = 0; x < 3; ++x) padded[x] += s[x];
    p.chunk_k = 1;
    for (const int x : {2, 1})
      if (4 * padded[x] <= 5 * padded[0]) {
        p.chunk_k = 1 << x;
        break;
      }
  }
  return p;
}

template <class V>
ccoo<V> csr_to_ccoo(const csr<V, I>& a, const ccoo_params& requested) {
  using B = ccoo_bits<V>;
  if (a.rows > int32_limit || a.cols > int32_limit)
    fail(errc::unsupported, "ccoo: shape " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                                " exceeds the 32-bit baseline rows/columns and column offsets (at most " +
                                std::to_string(int32_limit) + " rows and columns)");
  validate(a);
  ccoo<V> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.params = resolve_ccoo_params(a, requested);
  const std::int64_t nb = out.params.chunk_b, nk = out.params.chunk_k, nnz = a.nnz();
  // Without rows or columns there is nothing to store and no column to pad with.
  if (a.rows == 0 || a.cols == 0) {
    out.chunk_ptr.assign(1, 0);
    out.counts.assign({0, 0});
    return out;
  }
  const std::int64_t entries = padded_entries(a, nk);
  if (entries > int32_limit)
    fail(errc::unsupported, "ccoo: " + std::to_string(entries) +
                                " entries after padding every row to a multiple of chunk_k = " + std::to_string(nk) +
                                " exceed the 32-bit entry count (at most " + std::to_string(int32_limit) +
                                "); use a smaller chunk_k");

  // First group of every row (exclusive scan; the same block partition in both passes).
  const std::int64_t rows = a.rows;
  array<std::int64_t> group_start(static_cast<std::size_t>(rows + 1));
  {
    const int blocks = block_count(rows, 1 << 14);
    std::vector<std::int64_t> part(static_cast<std::size_t>(blocks) + 1, 0);
    parallel_blocks(rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
      std::int64_t s = 0;
      for (std::int64_t r = lo; r < hi; ++r) s += row_groups(a.row_ptr[r + 1] - a.row_ptr[r], nk);
      part[b + 1] = s;
    });
    std::partial_sum(part.begin(), part.end(), part.begin());
    parallel_blocks(rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
      std::int64_t s = part[b];
      for (std::int64_t r = lo; r < hi; ++r) {
        group_start[r] = s;
        s += row_groups(a.row_ptr[r + 1] - a.row_ptr[r], nk);
      }
    });
    group_start[rows] = part[blocks];
  }
  const std::int64_t groups = entries / nk;
  const std::int64_t chunks = (groups + nb - 1) / nb;

  // Calls f(r, i0, i1, e0) for the rows of chunk c in order: positions [i0, i1) of row r
  // (those below the row's length are stored entries, the rest its padding, which follows
  // them), the first of them entry e0 of the chunk.
  auto segments = [&](std::int64_t c, auto&& f) {
    const std::int64_t g0 = c * nb, g1 = std::min(groups, g0 + nb);
    std::int64_t r = std::upper_bound(group_start.begin(), group_start.end(), g0) - group_start.begin() - 1;
    for (std::int64_t g = g0; g < g1; ++r) {
      const std::int64_t gh = std::min(group_start[r + 1], g1);
      f(r, (g - group_start[r]) * nk, (gh - group_start[r]) * nk, (g - g0) * nk);
      g = gh;
    }
  };
  auto chunk_entries = [&](std::int64_t c) { return (std::min(groups, (c + 1) * nb) - c * nb) * nk; };
  const I* const col = a.col_idx.data();
  const V* const val = a.values.data();

  // Whether some chunk holds at most ccoo_table_capacity distinct patterns among its value
  // fields (ccoo_chunk_patterns), the only chunks a table can cover; the workers stop once one
  // has found such a chunk. Where none does, the table goes unused, and is not counted. The
  // last chunk, the only one that may hold fewer than B*K fields, is such whatever its values
  // when it holds at most ccoo_table_capacity fields (then nothing is searched).
  std::atomic<bool> coverable{chunk_entries(chunks - 1) <= static_cast<std::int64_t>(ccoo_table_capacity)};
  parallel_for(chunks, 16, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1 && !coverable.load(std::memory_order_relaxed); ++c) {
      ccoo_chunk_patterns<B> seen;
      bool fits = true;
      segments(c, [&](std::int64_t r, std::int64_t i0, std::int64_t i1, std::int64_t) {
        const std::int64_t len = a.row_ptr[r + 1] - a.row_ptr[r];
        for (std::int64_t k = a.row_ptr[r] + i0; k < a.row_ptr[r] + std::min(i1, len) && fits; ++k)
          fits = seen.add(std::bit_cast<B>(val[k]));
        if (i1 > len) fits = fits && seen.add(B(0));  // padding: +0.0
      });
      if (fits) coverable.store(true, std::memory_order_relaxed);
    }
  });

  // The value table (Sect. 2 LUT) over every value field, padding zeros included, and a
  // lookup by bit pattern.
  array<V> table = coverable ? value_table(a.values.data(), nnz, entries - nnz) : array<V>{};
  const table_index<B> index_of(table.data(), table.size());
  const int zero_index = index_of(B(0));

  // Pass 1: each chunk's baselines and format code (Sect. 2, Table 1: one code per chunk).
  // Columns increase along a row, so a row's smallest and largest column in the chunk are
  // those of its first and last stored entry there. The table indices found on the way are
  // kept in `slot` (complete for the chunks the table covers, the only ones that use them).
  array<std::uint8_t> slot(static_cast<std::size_t>(table.empty() ? 0 : nnz));
  out.chunk_format.resize(chunks);
  out.chunk_row.resize(chunks);
  out.chunk_col.resize(chunks);
  out.chunk_ptr.resize(chunks + 1);
  parallel_for(chunks, 16, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      std::int64_t first_row = -1, last_row = -1, min_col = -1, max_col = -1;
      bool padded = false, covered = !table.empty();  // without a table, `slot` is empty too
      segments(c, [&](std::int64_t r, std::int64_t i0, std::int64_t i1, std::int64_t e0) {
        if (e0 == 0) first_row = r;
        last_row = r;
        const std::int64_t len = a.row_ptr[r + 1] - a.row_ptr[r], k0 = a.row_ptr[r] + i0;
        const std::int64_t k1 = a.row_ptr[r] + std::min(i1, len);
        if (k0 < k1) {
          min_col = min_col < 0 ? col[k0] : std::min<std::int64_t>(min_col, col[k0]);
          max_col = std::max<std::int64_t>(max_col, col[k1 - 1]);
          for (std::int64_t k = k0; k < k1 && covered; ++k) {
            const int t = index_of(std::bit_cast<B>(val[k]));
            covered = t >= 0;
            slot[k] = static_cast<std::uint8_t>(t);
          }
        }
        if (i1 > len) {
          padded = true;
          covered = covered && zero_index >= 0;
        }
      });
      // Offsets from the smallest column (the paper's "leftmost" baseline), so unsigned.
      const std::int64_t max_off = min_col < 0 ? 0 : max_col - min_col;
      const int width = max_off <= 0xFF ? 0 : max_off <= 0xFFFF ? 1 : 2;
      std::uint8_t code = static_cast<std::uint8_t>(width << 1);
      if (first_row == last_row) code |= ccoo_code::single_row;
      if (covered) code |= ccoo_code::lut;
      if (padded) code |= ccoo_code::pads;
      out.chunk_format[c] = code;
      out.chunk_row[c] = static_cast<I>(first_row);
      out.chunk_col[c] = static_cast<I>(min_col < 0 ? 0 : min_col);
      out.chunk_ptr[c + 1] = ccoo_chunk_layout(chunk_entries(c), static_cast<std::int32_t>(nk), code, sizeof(V)).size;
    }
  });
  const bool any_lut = std::any_of(out.chunk_format.begin(), out.chunk_format.end(),
                                   [](std::uint8_t code) { return (code & ccoo_code::lut) != 0; });
  if (!any_lut) table.clear();
  out.chunk_ptr[0] = 0;
  for (std::int64_t c = 0; c < chunks; ++c) out.chunk_ptr[c + 1] += out.chunk_ptr[c];

  // Pass 2: the blobs (Sect. 2, Fig. 2): row offsets, pad bitmap, column offsets, values.
  out.blob.resize(out.chunk_ptr[chunks]);
  parallel_for(chunks, 16, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::uint8_t code = out.chunk_format[c];
      const ccoo_layout l = ccoo_chunk_layout(chunk_entries(c), static_cast<std::int32_t>(nk), code, sizeof(V));
      std::uint8_t* p = out.blob.data() + out.chunk_ptr[c];
      std::memset(p, 0, l.size);  // filler and padding fields are zero
      const std::int64_t base_row = out.chunk_row[c];
      const I base_col = out.chunk_col[c];
      const bool single = code & ccoo_code::single_row, lut = code & ccoo_code::lut;
      // Column offsets of n stored entries from k0 on, as entries e0.. of the chunk, in
      // T's width (little-endian low bytes).
      auto offsets = [&](auto width, std::int64_t k0, std::int64_t n, std::int64_t e0) {
        using T = decltype(width);
        for (std::int64_t t = 0; t < n; ++t) {
          const auto off = static_cast<T>(col[k0 + t] - base_col);
          std::memcpy(p + l.cols + (e0 + t) * sizeof(T), &off, sizeof(T));
        }
      };
      segments(c, [&](std::int64_t r, std::int64_t i0, std::int64_t i1, std::int64_t e0) {
        if (!single)
          for (std::int64_t g = e0 / nk; g < (e0 + i1 - i0) / nk; ++g)
            p[l.rows + g] = static_cast<std::uint8_t>(r - base_row);
        const std::int64_t len = a.row_ptr[r + 1] - a.row_ptr[r], k0 = a.row_ptr[r] + i0;
        const std::int64_t n = std::max<std::int64_t>(0, std::min(i1, len) - i0);
        switch (l.col_bytes) {
          case 1:
            offsets(std::uint8_t{}, k0, n, e0);
            break;
          case 2:
            offsets(std::uint16_t{}, k0, n, e0);
            break;
          default:
            offsets(std::uint32_t{}, k0, n, e0);
        }
        if (lut)
          std::memcpy(p + l.values + e0, slot.data() + k0, static_cast<std::size_t>(n));
        else if (n > 0)
          std::memcpy(p + l.values + e0 * sizeof(V), val + k0, static_cast<std::size_t>(n) * sizeof(V));
        // Padding: column offset 0, value +0.0 (or the table's +0.0), marked in the bitmap.
        for (std::int64_t e = e0 + n; e < e0 + (i1 - i0); ++e) {
          p[l.pads + e / 8] |= static_cast<std::uint8_t>(1u << (e % 8));
          if (lut) p[l.values + e] = static_cast<std::uint8_t>(zero_index);
        }
      });
    }
  });
  out.table = std::move(table);
  out.counts.assign({entries, nnz});
  return out;
}

#define SPCONV_INST(V)                                                                   \
  template ccoo_params resolve_ccoo_params<V>(const csr<V, std::int32_t>&, ccoo_params); \
  template ccoo<V> csr_to_ccoo<V>(const csr<V, std::int32_t>&, const ccoo_params&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
