// CCOO: the canonical value table and validate() (specs/formats/ccoo.md).
#include "formats/ccoo.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv {

template <class V>
array<V> ccoo_value_table(const V* stored, std::int64_t n, std::int64_t pads) {
  using B = ccoo_bits<V>;
  // Exact counts of every bit pattern: sort blocks in parallel, then merge the sorted
  // blocks, counting each pattern once; only the best candidates are kept as we go.
  array<B> bits(static_cast<std::size_t>(n));
  const int blocks = block_count(n, 1 << 16);
  std::vector<std::pair<std::int64_t, std::int64_t>> range(static_cast<std::size_t>(blocks), {0, 0});
  parallel_blocks(n, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) bits[i] = std::bit_cast<B>(stored[i]);
    std::sort(bits.begin() + lo, bits.begin() + hi);
    range[b] = {lo, hi};
  });

  struct cand {
    std::int64_t count;
    B bits;
  };
  // The table order: more frequent first, then the smaller bit pattern (a strict total
  // order, as patterns are distinct, so the top 256 are well defined).
  auto better = [](const cand& a, const cand& b) { return a.count != b.count ? a.count > b.count : a.bits < b.bits; };
  std::vector<cand> best;
  auto keep_best = [&] {
    if (best.size() <= ccoo_table_capacity) return;
    std::nth_element(best.begin(), best.begin() + ccoo_table_capacity - 1, best.end(), better);
    best.resize(ccoo_table_capacity);
  };
  const B zero_bits = std::bit_cast<B>(V(0));
  bool zero_seen = false;
  for (;;) {
    bool any = false;
    B lowest = 0;
    for (auto& [lo, hi] : range)
      if (lo < hi && (!any || bits[lo] < lowest)) {
        lowest = bits[lo];
        any = true;
      }
    if (!any) break;
    std::int64_t count = 0;
    for (auto& [lo, hi] : range)
      while (lo < hi && bits[lo] == lowest) {
        ++count;
        ++lo;
      }
    // Padding entries are explicit +0.0 values and are counted as such.
    if (lowest == zero_bits) {
      count += pads;
      zero_seen = true;
    }
    best.push_back({count, lowest});
    if (best.size() >= 16 * ccoo_table_capacity) keep_best();
  }
  if (!zero_seen && pads > 0) best.push_back({pads, zero_bits});
  keep_best();
  std::sort(best.begin(), best.end(), better);
  array<V> table(best.size());
  for (std::size_t i = 0; i < best.size(); ++i) table[i] = std::bit_cast<V>(best[i].bits);
  return table;
}

namespace {

std::string hex_byte(std::uint8_t b) {
  char s[8];
  std::snprintf(s, sizeof s, "0x%02x", static_cast<unsigned>(b));
  return s;
}

}  // namespace

template <class V, class I>
void validate(const ccoo<V, I, host>& m) {
  constexpr std::string_view n = "ccoo";
  using B = ccoo_bits<V>;
  auto str = [](auto v) { return std::to_string(v); };

  check_shape(n, m.rows, m.cols, std::numeric_limits<I>::max());
  const std::int64_t nb = m.params.chunk_b, nk = m.params.chunk_k;
  if (nb < 1 || nb > ccoo_max_chunk_b)
    invalid(n, "chunk_b = " + str(nb) + " is out of range [1, " + str(ccoo_max_chunk_b) + "]");
  if (nk < 1 || nk > ccoo_max_chunk_k)
    invalid(n, "chunk_k = " + str(nk) + " is out of range [1, " + str(ccoo_max_chunk_k) + "]");
  const std::int64_t chunk_entries = nb * nk;

  // ---- counts and array lengths ------------------------------------------------
  check_length(n, "counts", m.counts, 2);
  const std::int64_t entries = m.counts[0];
  if (entries < 0 || entries > std::numeric_limits<std::int32_t>::max())
    invalid(n, "counts[0] = " + str(entries) + " entries is out of range [0, 2147483647]");
  if (entries % nk != 0)
    invalid(n, "counts[0] = " + str(entries) + " entries is not a multiple of chunk_k = " + str(nk));
  if ((m.rows == 0 || m.cols == 0) && entries != 0)
    invalid(n, "counts[0] = " + str(entries) + " entries, but a " + str(m.rows) + " x " + str(m.cols) +
                   " matrix has none (no row can be padded without a column)");
  if (m.rows > 0 && m.cols > 0 && entries < m.rows * nk)
    invalid(n, "counts[0] = " + str(entries) + " entries cannot give each of the " + str(m.rows) +
                   " rows its group of chunk_k = " + str(nk) + " entries");
  const std::int64_t chunks = (entries + chunk_entries - 1) / chunk_entries;
  const auto nc = static_cast<std::size_t>(chunks);
  check_length(n, "chunk_format", m.chunk_format, nc);
  check_length(n, "chunk_row", m.chunk_row, nc);
  check_length(n, "chunk_col", m.chunk_col, nc);
  check_length(n, "chunk_ptr", m.chunk_ptr, nc + 1);
  check_pointers(n, "chunk_ptr", m.chunk_ptr, static_cast<std::int64_t>(m.blob.size()));
  if (m.table.size() > ccoo_table_capacity)
    invalid(n, "table has " + str(m.table.size()) + " values, more than the " + str(ccoo_table_capacity) +
                   " a one-byte index reaches");

  // ---- format codes and blob sizes first: the blob then bounds every later allocation ----
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::uint8_t code = m.chunk_format[c];
    if (code & ccoo_code::reserved)
      invalid(n, "chunk_format[" + str(c) + "] = " + hex_byte(code) + " sets reserved bits (" +
                     hex_byte(ccoo_code::reserved) + ")");
    if (ccoo_code::width_code(code) == 3)
      invalid(n, "chunk_format[" + str(c) + "] = " + hex_byte(code) +
                     " has column width code 3 (valid: 0, 1, 2 for 8, 16, 32 bits)");
    const std::int64_t e_count = std::min(chunk_entries, entries - c * chunk_entries);
    const ccoo_layout l = ccoo_chunk_layout(e_count, static_cast<std::int32_t>(nk), code, sizeof(V));
    // Sizes are multiples of 8, so this also keeps every blob 8-byte aligned.
    const std::uint64_t have = m.chunk_ptr[c + 1] - m.chunk_ptr[c];
    if (have != l.size)
      invalid(n, "chunk " + str(c) + ": occupies " + str(have) + " bytes of blob, its format code " + hex_byte(code) +
                     " and " + str(e_count) + " entries need " + str(l.size));
  }

  // ---- every chunk, in order: rows, padding, columns; gather the values ----------
  array<V> values(static_cast<std::size_t>(entries));  // stored values, in entry order
  std::int64_t stored = 0, pads_total = 0;
  // The row being walked (rows run on across chunk boundaries) and its state.
  std::int64_t row = -1, row_entries = 0, row_stored = 0, row_last_col = -1;
  bool row_padded = false;
  auto finish_row = [&] {
    if (row < 0) return;
    const std::int64_t groups = std::max<std::int64_t>(1, (row_stored + nk - 1) / nk);
    if (row_entries != groups * nk)
      invalid(n, "row " + str(row) + " occupies " + str(row_entries) + " entries, expected " + str(groups * nk) +
                     " (its " + str(row_stored) + " stored entries padded to a whole number of groups of chunk_k = " +
                     str(nk) + ", at least one group)");
  };
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::string at = "chunk " + str(c) + ": ";
    const std::uint8_t code = m.chunk_format[c];
    const std::int64_t e_count = std::min(chunk_entries, entries - c * chunk_entries);
    const std::int64_t g_count = e_count / nk;
    const ccoo_layout l = ccoo_chunk_layout(e_count, static_cast<std::int32_t>(nk), code, sizeof(V));
    const std::uint8_t* p = m.blob.data() + m.chunk_ptr[c];
    const bool single = code & ccoo_code::single_row, lut = code & ccoo_code::lut;
    const std::uint8_t* roff = single ? nullptr : p + l.rows;
    const std::uint8_t* bitmap = (code & ccoo_code::pads) ? p + l.pads : nullptr;

    // Filler: the gaps the alignment leaves and the unused bits of the bitmap.
    auto check_zero = [&](std::size_t from, std::size_t to) {
      for (std::size_t i = from; i < to; ++i)
        if (p[i] != 0) invalid(n, at + "filler byte " + str(i) + " of its blob is " + hex_byte(p[i]) + ", expected 0");
    };
    const std::size_t bitmap_end = l.pads + (bitmap ? static_cast<std::size_t>((e_count + 7) / 8) : 0);
    check_zero(bitmap_end, l.cols);
    check_zero(l.cols + static_cast<std::size_t>(e_count) * l.col_bytes, l.values);
    check_zero(l.end, l.size);
    if (bitmap && e_count % 8 != 0 && (bitmap[e_count / 8] >> (e_count % 8)) != 0)
      invalid(n, at + "pad bitmap marks entries beyond its " + str(e_count) + " entries");

    // Rows: the chunks cover rows 0..rows-1 in order, each row in at least one group.
    const std::int64_t base_row = m.chunk_row[c], base_col = m.chunk_col[c];
    const std::int64_t want_row = c == 0 ? 0 : row;
    if (c == 0 ? base_row != 0 : (base_row != want_row && base_row != want_row + 1))
      invalid(n, "chunk_row[" + str(c) + "] = " + str(base_row) + ", expected " +
                     (c == 0 ? std::string("0") : str(want_row) + " or " + str(want_row + 1)) +
                     " (chunks cover the rows in order, every row in at least one group)");
    if (base_row >= m.rows)
      invalid(n, "chunk_row[" + str(c) + "] = " + str(base_row) + " is out of range [0, " + str(m.rows) + ")");
    if (base_col < 0 || base_col >= m.cols)
      invalid(n, "chunk_col[" + str(c) + "] = " + str(base_col) + " is out of range [0, " + str(m.cols) + ")");
    if (roff) {
      if (roff[0] != 0) invalid(n, at + "row offset of group 0 is " + str(roff[0]) + ", expected 0");
      for (std::int64_t g = 1; g < g_count; ++g)
        if (roff[g] != roff[g - 1] && roff[g] != roff[g - 1] + 1)
          invalid(n, at + "row offsets jump from " + str(roff[g - 1]) + " to " + str(roff[g]) + " at group " + str(g) +
                         " (steps are 0 or 1: every row holds at least one group)");
      if (roff[g_count - 1] == 0) invalid(n, at + "all groups lie in one row but the single-row flag is not set");
      if (base_row + roff[g_count - 1] >= m.rows)
        invalid(n, at + "its last group is in row " + str(base_row + roff[g_count - 1]) + ", beyond the " +
                       str(m.rows) + " rows");
    }

    // Entries: padding (marked in the bitmap) is a suffix of its row, with column offset 0
    // and value +0.0; stored columns are in range and strictly increasing along a row.
    const std::uint8_t* cols = p + l.cols;
    const std::uint8_t* vals = p + l.values;
    std::int64_t min_col = -1, max_off = 0, chunk_pads = 0;
    for (std::int64_t g = 0; g < g_count; ++g) {
      const std::int64_t r = base_row + (roff ? roff[g] : 0);
      if (r != row) {
        finish_row();
        row = r;
        row_entries = row_stored = 0;
        row_last_col = -1;
        row_padded = false;
      }
      for (std::int64_t e = g * nk; e < (g + 1) * nk; ++e) {
        const std::int64_t off = ccoo_col_offset(cols, l.col_bytes, e);
        max_off = std::max(max_off, off);
        V v;
        if (lut) {
          if (vals[e] >= m.table.size())
            invalid(n, at + "entry " + str(e) + " has table index " + str(vals[e]) + ", beyond the table's " +
                           str(m.table.size()) + " values");
          v = m.table[vals[e]];
        } else {
          v = ccoo_load<V>(vals + e * sizeof(V));
        }
        ++row_entries;
        if (ccoo_is_pad(bitmap, e)) {
          if (off != 0) invalid(n, at + "padding entry " + str(e) + " has column offset " + str(off) + ", expected 0");
          if (std::bit_cast<B>(v) != B(0)) invalid(n, at + "padding entry " + str(e) + " has a value other than +0.0");
          row_padded = true;
          ++chunk_pads;
          continue;
        }
        const std::int64_t col = base_col + off;
        if (row_padded)
          invalid(n, at + "stored entry " + str(e) + " of row " + str(r) + " follows a padding entry of that row");
        if (col >= m.cols)
          invalid(n, at + "entry " + str(e) + " has column " + str(col) + ", out of range [0, " + str(m.cols) + ")");
        if (col <= row_last_col)
          invalid(n, at + "entry " + str(e) + " has column " + str(col) + " after column " + str(row_last_col) +
                         ": row " + str(r) + " is not strictly increasing");
        row_last_col = col;
        ++row_stored;
        min_col = min_col < 0 ? col : std::min(min_col, col);
        values[stored++] = v;
      }
    }
    pads_total += chunk_pads;

    // The encoding choices are the canonical ones (what the converter writes).
    if (bitmap && chunk_pads == 0) invalid(n, at + "pad flag set but no entry is marked as padding");
    const std::int64_t want_col = min_col < 0 ? 0 : min_col;
    if (base_col != want_col)
      invalid(n, "chunk_col[" + str(c) + "] = " + str(base_col) + ", expected the chunk's smallest stored column " +
                     str(want_col));
    const std::size_t need = max_off <= 0xFF ? 1 : max_off <= 0xFFFF ? 2 : 4;
    if (l.col_bytes != need)
      invalid(n, at + "column offsets use " + str(8 * l.col_bytes) + " bits, its largest offset " + str(max_off) +
                     " needs " + str(8 * need));
  }
  finish_row();
  if (chunks > 0 && row != m.rows - 1)
    invalid(n, "the chunks cover rows 0.." + str(row) + ", the matrix has " + str(m.rows) + " rows");
  if (m.counts[1] != stored)
    invalid(n, "counts[1] = " + str(m.counts[1]) + ", but the chunks hold " + str(stored) + " stored entries");

  // ---- the value table and its use ------------------------------------------------
  // A direct chunk's value fields (padding included, stored as +0.0) and their count.
  const auto direct_values = [&](std::int64_t c) {
    const std::int64_t e_count = std::min(chunk_entries, entries - c * chunk_entries);
    const ccoo_layout l = ccoo_chunk_layout(e_count, static_cast<std::int32_t>(nk), m.chunk_format[c], sizeof(V));
    return std::pair{m.blob.data() + m.chunk_ptr[c] + l.values, e_count};
  };
  const bool any_lut = std::any_of(m.chunk_format.begin(), m.chunk_format.end(),
                                   [](std::uint8_t code) { return (code & ccoo_code::lut) != 0; });
  const auto table_size_is = [&](std::size_t want_size) {
    if (m.table.size() != want_size)
      invalid(n, "table has " + str(m.table.size()) + " values, the canonical table has " + str(want_size) +
                     (any_lut ? "" : " (no chunk uses it)"));
  };
  // Without table chunks, and where no chunk holds at most ccoo_table_capacity distinct
  // patterns (ccoo_chunk_patterns), no table could cover a chunk: it must be empty, and the
  // canonical one need not be counted. The first chunk that fits ends the search; a last
  // chunk of at most ccoo_table_capacity fields (the only one that may hold fewer than B*K)
  // fits whatever its values.
  const auto fits = [&](std::int64_t c) {
    const auto [vals, e_count] = direct_values(c);
    ccoo_chunk_patterns<B> seen;
    for (std::int64_t e = 0; e < e_count; ++e)
      if (!seen.add(ccoo_load<B>(vals + e * sizeof(V)))) return false;
    return true;
  };
  bool coverable =
      any_lut || (chunks > 0 && entries - (chunks - 1) * chunk_entries <= static_cast<std::int64_t>(ccoo_table_capacity));
  for (std::int64_t c = 0; c < chunks && !coverable; ++c) coverable = fits(c);
  if (!coverable) {
    table_size_is(0);
    return;
  }
  const array<V> full = ccoo_value_table(values.data(), stored, pads_total);
  std::vector<B> sorted_bits(full.size());
  for (std::size_t i = 0; i < full.size(); ++i) sorted_bits[i] = std::bit_cast<B>(full[i]);
  std::sort(sorted_bits.begin(), sorted_bits.end());
  for (std::int64_t c = 0; c < chunks; ++c) {
    if (m.chunk_format[c] & ccoo_code::lut) continue;
    const auto [vals, e_count] = direct_values(c);
    bool covered = true;
    for (std::int64_t e = 0; e < e_count && covered; ++e)
      covered = std::binary_search(sorted_bits.begin(), sorted_bits.end(), ccoo_load<B>(vals + e * sizeof(V)));
    if (covered)
      invalid(n, "chunk " + str(c) + ": stores its values directly although the value table holds all of them");
  }
  const std::size_t want_size = any_lut ? full.size() : 0;
  table_size_is(want_size);
  for (std::size_t i = 0; i < want_size; ++i)
    if (std::bit_cast<B>(m.table[i]) != std::bit_cast<B>(full[i]))
      invalid(n, "table[" + str(i) +
                     "] differs from the canonical table (values by count descending, then bit "
                     "pattern ascending)");
}

#define SPCONV_INST(V)                                                         \
  template array<V> ccoo_value_table<V>(const V*, std::int64_t, std::int64_t); \
  template void validate<V, std::int32_t>(const ccoo<V, std::int32_t, host>&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv
