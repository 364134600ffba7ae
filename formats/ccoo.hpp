// CCOO: balanced and compressed COO (Aliaga, Anzt, Quintana-Orti, Tomas, Tsai, "Balanced
// and Compressed Coordinate Layout for the Sparse Matrix-Vector Product on GPUs",
// Euro-Par 2020 Workshops, Sect. 2; /work/shared/papers/bccoo-aliaga-anzt.txt).
// Spec: specs/formats/ccoo.md.
//
// The entries, in row-major order, are cut into groups of K (one GPU thread's work) and
// the groups into chunks of B (one thread block's work), so every chunk but the last holds
// exactly B*K entries (the "balanced" part). As in the paper, each row is padded with
// explicit zeros to a multiple of K entries (an empty row gets one all-zero group), so a
// group never straddles two rows and a chunk of B <= 256 groups spans at most 256 rows:
// one byte per group holds the row offset from the chunk's baseline row. Per chunk a
// one-byte format code selects the encoding of its blob (the "compressed" part): row
// offsets present or not (single-row chunk), 8/16/32-bit column offsets from the chunk's
// baseline column, values stored directly or as one-byte indices into a global table of
// the 256 most frequent values. A per-chunk pad bitmap marks the padding entries so that
// they never mix with stored zeros (CSR round trips are exact).
#pragma once
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "formats/format.hpp"

namespace spconv {

static_assert(std::endian::native == std::endian::little,
              "ccoo blobs hold little-endian column offsets and values; decoding assumes a little-endian host");

struct ccoo_params {
  std::int32_t chunk_b = 0;  // B: groups (GPU threads) per chunk, [1, 256]; automatic: 256 (the paper's choice)
  std::int32_t chunk_k = 0;  // K: entries per group, [1, 1024]; automatic: 4, 2 or 1 (resolve_ccoo_params)

  template <class Self, class F>
  static void for_each_param(Self& p, F&& f) {
    f("chunk_b", p.chunk_b);
    f("chunk_k", p.chunk_k);
  }
};

// B is capped so that a chunk spans at most 256 rows (one-byte row offsets, Sect. 2);
// K only bounds the padding a single empty row costs.
inline constexpr std::int32_t ccoo_max_chunk_b = 256;
inline constexpr std::int32_t ccoo_max_chunk_k = 1024;
// The value table is indexed by one byte (Sect. 2: "the 256 most frequent values").
inline constexpr std::size_t ccoo_table_capacity = 256;

// Bits of a chunk's format code (chunk_format[c]).
namespace ccoo_code {
inline constexpr std::uint8_t single_row = 0x01;  // all groups in the chunk's baseline row: no row offsets stored
inline constexpr std::uint8_t width_mask = 0x06;  // (code & width_mask) >> 1: 0, 1, 2 = 8, 16, 32-bit column offsets
inline constexpr std::uint8_t lut = 0x08;         // values are one-byte indices into `table`
inline constexpr std::uint8_t pads = 0x10;        // the chunk holds padding entries: a pad bitmap is stored
inline constexpr std::uint8_t reserved = 0xE0;    // must be zero
inline constexpr int width_code(std::uint8_t code) { return (code & width_mask) >> 1; }
}  // namespace ccoo_code

// Byte positions of the sections of one chunk's blob (relative to chunk_ptr[c]):
// [row offsets: 1 byte per group] [pad bitmap: 1 bit per entry] [column offsets]
// [values], each section aligned to its element size, the blob padded to 8 bytes
// (so that every multi-byte field is naturally aligned for GPU loads). Absent
// sections have length 0. All bytes outside the sections are zero.
struct ccoo_layout {
  std::size_t rows = 0, pads = 0, cols = 0, values = 0;  // section starts
  std::size_t end = 0;                                   // end of the value section
  std::size_t size = 0;                                  // the chunk's blob length (end rounded up to 8)
  std::size_t col_bytes = 0, value_bytes = 0;
};

constexpr std::size_t ccoo_align(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// Only for codes whose width code is 0, 1 or 2 (validate() checks that first).
inline ccoo_layout ccoo_chunk_layout(std::int64_t entries, std::int32_t k, std::uint8_t code, std::size_t value_size) {
  const auto e = static_cast<std::size_t>(entries);
  ccoo_layout l;
  l.col_bytes = std::size_t{1} << ccoo_code::width_code(code);
  l.value_bytes = (code & ccoo_code::lut) ? 1 : value_size;
  std::size_t o = 0;
  l.rows = o;
  if (!(code & ccoo_code::single_row)) o += e / static_cast<std::size_t>(k);
  l.pads = o;
  if (code & ccoo_code::pads) o += (e + 7) / 8;
  o = ccoo_align(o, l.col_bytes);
  l.cols = o;
  o += e * l.col_bytes;
  o = ccoo_align(o, l.value_bytes);
  l.values = o;
  o += e * l.value_bytes;
  l.end = o;
  l.size = ccoo_align(o, 8);
  return l;
}

// Unaligned-safe little-endian field reads (memcpy compiles to a plain load).
template <class T>
T ccoo_load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline std::uint32_t ccoo_col_offset(const std::uint8_t* cols, std::size_t col_bytes, std::int64_t e) {
  switch (col_bytes) {
    case 1:
      return cols[e];
    case 2:
      return ccoo_load<std::uint16_t>(cols + 2 * e);
    default:
      return ccoo_load<std::uint32_t>(cols + 4 * e);
  }
}
inline bool ccoo_is_pad(const std::uint8_t* bitmap, std::int64_t e) {
  return bitmap != nullptr && ((bitmap[e >> 3] >> (e & 7)) & 1) != 0;
}

// The bit pattern a value is counted and compared by (so -0.0 != 0.0, NaNs by payload).
template <class V>
using ccoo_bits = std::conditional_t<sizeof(V) == 8, std::uint64_t, std::uint32_t>;

// Multiplicative hashing of a value's bit pattern (Knuth, TAOCP vol. 3, sec. 6.4): the top
// bits of bits * 2^64/phi pick a slot; shared by the CPU converter's tables and
// ccoo_chunk_patterns.
inline std::uint64_t ccoo_hash_bits(std::uint64_t bits) { return bits * 0x9E3779B97F4A7C15ull; }

// Whether one chunk's value fields (padding as +0.0), fed one by one, hold at most
// ccoo_table_capacity distinct bit patterns: only such a chunk can take table indices (Sect.
// 2: a chunk uses the table only if every value field of it is in the table). Where no chunk
// is such, the canonical table goes unused and `table` is empty whatever the counts, so
// csr_to_ccoo and validate() need not count the values (ccoo_value_table); the GPU converter
// asks the same of each chunk (find_coverable_chunk, convert/gpu/csr_to_ccoo.cu).
template <class B>
class ccoo_chunk_patterns {
 public:
  // Counts the pattern; false once more than ccoo_table_capacity patterns were met (and from
  // then on, without looking at the pattern).
  bool add(B bits) {
    if (distinct_ > ccoo_table_capacity) return false;
    for (auto i = static_cast<std::size_t>(ccoo_hash_bits(bits) >> (64 - log2_slots));; i = (i + 1) & (slots - 1)) {
      if (!used_[i]) {
        used_[i] = true;
        keys_[i] = bits;
        return ++distinct_ <= ccoo_table_capacity;
      }
      if (keys_[i] == bits) return true;
    }
  }

 private:
  static constexpr int log2_slots = 9;
  static constexpr std::size_t slots = std::size_t{1} << log2_slots;  // at most 257 in use
  static_assert(slots >= 2 * ccoo_table_capacity);
  std::array<B, slots> keys_{};
  std::array<bool, slots> used_{};
  std::size_t distinct_ = 0;
};

template <class V, class I = std::int32_t, class Space = host>
struct ccoo {
  static_assert(std::is_same_v<I, std::int32_t>, "ccoo stores 32-bit baselines and column offsets");
  using value_type = V;
  using index_type = I;
  using space = Space;
  using params_type = ccoo_params;
  static constexpr std::string_view name = "ccoo";
  static constexpr int version = 1;

  std::int64_t rows = 0, cols = 0;
  ccoo_params params;
  array<std::uint8_t, Space> chunk_format;  // C one-byte format codes (ccoo_code)
  array<I, Space> chunk_row;                // C baseline rows: the row of the chunk's first group
  array<I, Space> chunk_col;                // C baseline columns: the smallest stored column of the chunk
  array<std::uint64_t, Space> chunk_ptr;    // C + 1 byte offsets of the chunks' blobs in `blob`
  array<std::uint8_t, Space> blob;          // the chunks' blobs, back to back (ccoo_layout)
  array<V, Space> table;                    // <= 256 most frequent values; empty when no chunk uses it
  array<std::int64_t, Space> counts;        // {entries including padding, stored entries (= CSR nnz)}

  // Host only (reads counts[1]).
  std::int64_t nnz() const { return counts.size() == 2 ? counts[1] : 0; }
  std::int64_t entries() const { return counts.size() == 2 ? counts[0] : 0; }

  template <class Self, class F>
  static void for_each_array(Self& m, F&& f) {
    f("chunk_format", m.chunk_format);
    f("chunk_row", m.chunk_row);
    f("chunk_col", m.chunk_col);
    f("chunk_ptr", m.chunk_ptr);
    f("blob", m.blob);
    f("table", m.table);
    f("counts", m.counts);
  }
};

// The canonical value table of n stored values plus `pads` padding zeros (+0.0): the
// min(256, distinct) most frequent bit patterns, by count descending, ties by bit pattern
// ascending (as an unsigned integer). Deterministic; used by the converter and validate().
template <class V>
array<V> ccoo_value_table(const V* stored, std::int64_t n, std::int64_t pads);

// Throws errc::bad_input naming the broken invariant. Checks the layout (lengths, format
// codes, section sizes, zero filler), the decoded matrix (row coverage, row offsets,
// columns in range and strictly increasing per row, padding placement and content,
// counts) and the canonical encoding choices (baseline column, minimal column width,
// flags, value table and its use), so that a valid ccoo is exactly what csr_to_ccoo
// produces for its matrix and parameters.
template <class V, class I>
void validate(const ccoo<V, I, host>& m);

}  // namespace spconv
