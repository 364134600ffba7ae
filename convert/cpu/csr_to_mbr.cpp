// CSR -> MBR on the CPU (shared/papers/mbr-kannan.txt sec. III).
//
// Counting blocks (the automatic rule) is exact. With every candidate side dividing 8, one
// pass gathers each 8-row block row into 8 x 8 tiles, one bit per position, and reads the
// blocks of every size off each tile (count_with_tiles). For other given sides, one pass
// keeps per candidate width c, last[q] = the last row so far with an entry in block column
// q: the entry (i, j) is the first of its r x c block exactly when last[j / c] lies before
// the block row's first row (earlier entries of the block are in earlier rows of the block
// row, or earlier in row i, which sets last[j / c] = i), so one array per c counts every r
// (count_with_markers). Both cost a word per 8 or c columns, so a matrix with far more
// columns than entries (up to 2^31) is counted instead by merging the r sorted rows of each
// block row in column order, with O(r) memory.
//
// Conversion: walking a block row's r rows together, a block at a time (the smallest
// column among the rows' next entries opens it, then each row takes its entries inside
// it), meets the blocks in increasing block column and, inside a block, the entries row by
// row, i.e. in increasing bit position i*c + j: exactly the order in which MBR stores
// bitmaps and values. Work is split over ranges of whole block rows, the same ranges for
// counting and filling; the exact per-range block counts are each range's first block, so
// the fill is one pass and the output does not depend on the thread count.
#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "convert/cpu/blocking.hpp"
#include "convert/cpu/mbr.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

namespace {

using I = std::int32_t;

// Sides the automatic rule tries (the sizes the paper evaluates, sec. V, up to 8 x 8).
constexpr std::array<I, 4> candidate_sides = {1, 2, 4, 8};
constexpr std::size_t max_candidates = candidate_sides.size();

using blocking::ceil_div;
using blocking::divider;
using blocking::partition;
using blocking::with_known_height;

// Tiles of count_with_tiles: tile_side x tile_side, one bit per position in a 64-bit word.
constexpr I tile_side = 8;

// Exact block counts of the candidates rs x cs per worker range, n[(w * |rs| + ri) * |cs| + ci]
// (pairs with r * c > 64 are counted too and never chosen).
struct block_census {
  std::vector<I> rs, cs;
  partition part;
  bool use_markers = true;
  bool tiles = false;  // every r and c divides tile_side: count_with_tiles applies
  std::vector<std::int64_t> n;

  std::int64_t& at(int w, std::size_t ri, std::size_t ci) { return n[(w * rs.size() + ri) * cs.size() + ci]; }
  std::int64_t at(int w, std::size_t ri, std::size_t ci) const { return n[(w * rs.size() + ri) * cs.size() + ci]; }
  std::int64_t total(std::size_t ri, std::size_t ci) const {
    std::int64_t s = 0;
    for (int w = 0; w < part.workers; ++w) s += at(w, ri, ci);
    return s;
  }
};

template <class V>
block_census make_census(const csr<V, I>& a, std::vector<I> rs, std::vector<I> cs) {
  block_census bc;
  bc.rs = std::move(rs);
  bc.cs = std::move(cs);
  std::int64_t unit = 1;
  for (const I r : bc.rs) unit = std::lcm(unit, std::int64_t{r});
  bc.tiles = tile_side % unit == 0 && std::all_of(bc.cs.begin(), bc.cs.end(), [](I c) { return tile_side % c == 0; });
  if (bc.tiles) unit = tile_side;
  bc.part.unit = unit;
  bc.part.units = ceil_div(a.rows, unit);
  // One array entry per block column and c: used while the columns do not outnumber the
  // entries and rows by far, so the arrays stay within a small multiple of the CSR.
  const std::int64_t work = a.nnz() + a.rows;
  bc.use_markers = a.cols <= 2 * work + (std::int64_t{1} << 16);
  // About 4096 rows per worker; each worker's arrays cost about `cols` words, so a worker
  // also gets at least about half that many entries and rows.
  int workers = block_count(bc.part.units, std::max<std::int64_t>(1, 4096 / unit));
  if (bc.use_markers)
    workers = static_cast<int>(std::min<std::int64_t>(workers, std::max<std::int64_t>(1, 2 * work / (a.cols + 1))));
  bc.part.workers = workers;
  bc.n.assign(static_cast<std::size_t>(workers) * bc.rs.size() * bc.cs.size(), 0);
  return bc;
}

// The counting loop over rows [row_lo, row_hi) for NF widths: the entry of row i with
// d = last[f][q] opens a block for rs[t] exactly when g = i - d > (i - row_lo) mod rs[t].
// With g clamped to the largest r (larger gaps count for every r), a table gives, for i's
// place in the unit and g, the increments of all r at once packed in 16-bit fields, so an
// entry costs one load and one add per width; the fields are flushed before they can
// overflow. A function of its own so that its accumulators are locals the compiler keeps
// in registers (stores to `last` cannot alias them).
template <int NF>
void count_rows(const I* row_ptr, const I* col, std::int64_t row_lo, std::int64_t row_hi, std::int64_t unit,
                const std::vector<I>& rs, const divider* div, I* const* last, std::int64_t* counts) {
  const std::size_t nr = rs.size();
  const I gmax = *std::max_element(rs.begin(), rs.end());
  const std::size_t bins = static_cast<std::size_t>(gmax) + 1;
  std::vector<std::uint64_t> table(static_cast<std::size_t>(unit) * bins);
  for (std::size_t p = 0; p < static_cast<std::size_t>(unit); ++p)
    for (std::size_t g = 0; g < bins; ++g)
      for (std::size_t t = 0; t < nr; ++t)
        if (g > p % static_cast<std::size_t>(rs[t])) table[p * bins + g] |= std::uint64_t{1} << (16 * t);
  // Local copies: stores to last[] (ints) could otherwise alias the dividers' fields.
  std::array<divider, NF> dv;
  std::array<I*, NF> lf;
  for (int f = 0; f < NF; ++f) {
    dv[f] = div[f];
    lf[f] = last[f];
  }
  constexpr I max_pending = 0xFFFF;
  std::array<std::uint64_t, NF> acc{};
  I pending = 0;
  auto flush = [&] {
    for (int f = 0; f < NF; ++f)
      for (std::size_t t = 0; t < nr; ++t) counts[f * nr + t] += (acc[f] >> (16 * t)) & 0xFFFF;
    acc.fill(0);
    pending = 0;
  };
  std::size_t place = 0;
  for (std::int64_t i = row_lo; i < row_hi; ++i) {
    const I row = static_cast<I>(i), k_end = row_ptr[i + 1];
    const std::uint64_t* const tp = table.data() + place * bins;
    for (I k = row_ptr[i]; k < k_end;) {
      const I stop = static_cast<I>(std::min<std::int64_t>(k_end, std::int64_t{k} + (max_pending - pending)));
      pending += stop - k;
      for (; k < stop; ++k) {
        const I j = col[k];
        for (int f = 0; f < NF; ++f) {
          const I q = dv[f](j);
          const I g = std::min(row - lf[f][q], gmax);
          lf[f][q] = row;
          acc[f] += tp[g];
        }
      }
      if (pending == max_pending) flush();
    }
    place = place + 1 == static_cast<std::size_t>(unit) ? 0 : place + 1;
  }
  flush();
}

// Counts every candidate in one pass (one `last` array per c).
template <class V>
void count_with_markers(const csr<V, I>& a, block_census& bc) {
  const std::size_t nr = bc.rs.size(), nc = bc.cs.size();
  std::vector<divider> div;
  for (const I c : bc.cs) div.emplace_back(c);
  parallel_blocks(bc.part.units, bc.part.workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    const std::int64_t row_lo = bc.part.first_row(lo, a.rows), row_hi = bc.part.first_row(hi, a.rows);
    std::vector<array<I>> last(nc);
    std::array<I*, max_candidates> lp{};
    for (std::size_t f = 0; f < nc; ++f) {
      last[f].resize(static_cast<std::size_t>(ceil_div(a.cols, bc.cs[f])));
      std::fill(last[f].begin(), last[f].end(), I{-1});
      lp[f] = last[f].data();
    }
    std::vector<std::int64_t> counts(nc * nr, 0);
    constexpr std::array<decltype(&count_rows<1>), max_candidates> by_width = {count_rows<1>, count_rows<2>,
                                                                              count_rows<3>, count_rows<4>};
    by_width[nc - 1](a.row_ptr.data(), a.col_idx.data(), row_lo, row_hi, bc.part.unit, bc.rs, div.data(), lp.data(),
                     counts.data());
    for (std::size_t f = 0; f < nc; ++f)
      for (std::size_t t = 0; t < nr; ++t) bc.at(w, t, f) = counts[f * nr + t];
  });
}

// Per byte b: the number of nonzero groups of 1, 2, 4 and 8 adjacent bits, in the 16-bit
// fields 0..3.
constexpr std::array<std::uint64_t, 256> tile_row_groups = [] {
  std::array<std::uint64_t, 256> t{};
  for (unsigned b = 0; b < 256; ++b) {
    const unsigned b2 = (b | b >> 1) & 0x55u, b4 = (b2 | b2 >> 2) & 0x11u;
    t[b] = static_cast<std::uint64_t>(std::popcount(b)) | static_cast<std::uint64_t>(std::popcount(b2)) << 16 |
           static_cast<std::uint64_t>(std::popcount(b4)) << 32 | static_cast<std::uint64_t>(b != 0) << 48;
  }
  return t;
}();

// Counts every r x c with r, c dividing 8 in one pass, by 8 x 8 tiles. For each 8-row
// block row, every entry sets bit i (its row in the block row) of byte j (its column), so
// the 8 bytes of 8 adjacent columns form one tile, column by column, in a 64-bit word;
// entries of one row touch different bytes, so no entry waits for the previous one. A
// second walk over the block row's entries reads each tile once (and clears it): OR-ing
// its bytes 2, 4, 8 at a time gives the c-column groups, and a table gives the nonzero
// 1-, 2-, 4- and 8-row groups of each byte. Blocks average several entries per tile on
// most matrices, so this costs less than a `last` array per c; a tile with one entry
// holds one block of every size.
template <class V>
void count_with_tiles(const csr<V, I>& a, block_census& bc) {
  parallel_blocks(bc.part.units, bc.part.workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    const std::int64_t row_lo = bc.part.first_row(lo, a.rows), row_hi = bc.part.first_row(hi, a.rows);
    array<std::uint64_t> tiles(static_cast<std::size_t>(ceil_div(a.cols, tile_side)));
    std::fill(tiles.begin(), tiles.end(), std::uint64_t{0});
    auto* const rows_of_col = reinterpret_cast<std::uint8_t*>(tiles.data());  // byte j: column j's rows
    const I* col = a.col_idx.data();
    // acc[l]: the blocks of 2^l columns, r = 1, 2, 4, 8 in its 16-bit fields; a tile adds
    // at most 64 to a field, so they are flushed every 1000 tiles.
    std::array<std::uint64_t, 4> acc{};
    std::array<std::int64_t, 16> total{};  // [log2 c * 4 + log2 r]
    std::int64_t singles = 0;
    int pending = 0;
    auto flush = [&] {
      for (int l = 0; l < 4; ++l)
        for (int f = 0; f < 4; ++f) total[4 * l + f] += static_cast<std::int64_t>((acc[l] >> (16 * f)) & 0xFFFF);
      acc.fill(0);
      pending = 0;
    };
    for (std::int64_t row0 = row_lo; row0 < row_hi; row0 += tile_side) {
      const std::int64_t row_end = std::min<std::int64_t>(row_hi, row0 + tile_side);
      for (std::int64_t i = row0; i < row_end; ++i) {
        const auto bit = static_cast<std::uint8_t>(1u << (i - row0));
        for (I e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) rows_of_col[col[e]] |= bit;
      }
      for (I e = a.row_ptr[row0]; e < a.row_ptr[row_end]; ++e) {
        const std::size_t q = static_cast<std::size_t>(col[e]) / tile_side;
        const std::uint64_t m = tiles[q];
        if (m == 0) continue;  // read already
        tiles[q] = 0;
        if ((m & (m - 1)) == 0) {
          ++singles;
          continue;
        }
        const std::uint64_t m2 = m | m >> 8, m4 = m2 | m2 >> 16, m8 = m4 | m4 >> 32;
        for (int j = 0; j < 8; ++j) acc[0] += tile_row_groups[(m >> (8 * j)) & 0xFF];
        for (int j = 0; j < 8; j += 2) acc[1] += tile_row_groups[(m2 >> (8 * j)) & 0xFF];
        acc[2] += tile_row_groups[m4 & 0xFF] + tile_row_groups[(m4 >> 32) & 0xFF];
        acc[3] += tile_row_groups[m8 & 0xFF];
        if (++pending == 1000) flush();
      }
    }
    flush();
    auto level = [](I side) { return std::countr_zero(static_cast<unsigned>(side)) & 3; };
    for (std::size_t ri = 0; ri < bc.rs.size(); ++ri)
      for (std::size_t ci = 0; ci < bc.cs.size(); ++ci)
        bc.at(w, ri, ci) = total[4 * level(bc.cs[ci]) + level(bc.rs[ri])] + singles;
  });
}

// The same counts by merging, per block row, its r sorted rows in column order: a new
// r x c block starts wherever the block column changes. O(r) memory, for matrices with
// too many columns for count_with_markers.
template <class V>
void count_by_merging(const csr<V, I>& a, block_census& bc) {
  constexpr I done = std::numeric_limits<I>::max();  // above every column (cols <= I max)
  const std::size_t nc = bc.cs.size();
  std::vector<divider> div;
  for (const I c : bc.cs) div.emplace_back(c);
  parallel_blocks(bc.part.units, bc.part.workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    const std::int64_t row_lo = bc.part.first_row(lo, a.rows), row_hi = bc.part.first_row(hi, a.rows);
    for (std::size_t ri = 0; ri < bc.rs.size(); ++ri) {
      const std::int64_t r = bc.rs[ri];
      std::array<std::int64_t, max_candidates> count{};
      std::array<I, max_candidates> last;
      std::array<I, 64> head, pos, end;
      auto next = [&](int i) { return pos[i] < end[i] ? a.col_idx[pos[i]] : done; };
      for (std::int64_t row0 = row_lo; row0 < row_hi; row0 += r) {
        const int rr = static_cast<int>(std::min(r, row_hi - row0));
        for (int i = 0; i < rr; ++i) {
          pos[i] = a.row_ptr[row0 + i];
          end[i] = a.row_ptr[row0 + i + 1];
          head[i] = next(i);
        }
        last.fill(-1);
        for (;;) {
          int best = 0;
          for (int i = 1; i < rr; ++i) best = head[i] < head[best] ? i : best;
          const I col = head[best];
          if (col == done) break;
          ++pos[best];
          head[best] = next(best);
          for (std::size_t ci = 0; ci < nc; ++ci) {
            const I q = div[ci](col);
            count[ci] += q != last[ci];
            last[ci] = q;
          }
        }
      }
      for (std::size_t ci = 0; ci < nc; ++ci) bc.at(w, ri, ci) = count[ci];
    }
  });
}

template <class V>
block_census take_census(const csr<V, I>& a, std::vector<I> rs, std::vector<I> cs) {
  block_census bc = make_census(a, std::move(rs), std::move(cs));
  if (bc.use_markers && bc.tiles)
    count_with_tiles(a, bc);
  else if (bc.use_markers)
    count_with_markers(a, bc);
  else
    count_by_merging(a, bc);
  return bc;
}

// The candidates for a requested side: the given one, or all of candidate_sides that fit
// r * c <= 64 with some partner (a fixed side is at most 64, so the partner 1 always fits).
std::vector<I> sides(I requested, I other) {
  if (requested != 0) return {requested};
  std::vector<I> out;
  for (const I s : candidate_sides)
    if (other == 0 || s * other <= 64) out.push_back(s);
  return out;
}

void check_field(std::string_view name, std::int32_t v, std::int32_t hi) {
  if (v < 0 || v > hi)
    fail(errc::usage, "mbr: " + std::string(name) + " = " + std::to_string(v) + " is out of range [0, " +
                          std::to_string(hi) + "] (0 = automatic)");
}

// Checks the request; with a side left 0, counts the blocks of every candidate and picks by
// the rule (mbr.hpp), returning the census (empty when both sides were given).
template <class V>
mbr_params resolve(const csr<V, I>& a, const mbr_params& requested, block_census* census) {
  check_field("block_rows", requested.block_rows, 64);
  check_field("block_cols", requested.block_cols, 64);
  const std::int32_t wb = requested.bitmap_bytes;
  if (wb != 0 && wb != 1 && wb != 2 && wb != 4 && wb != 8)
    fail(errc::usage, "mbr: bitmap_bytes = " + std::to_string(requested.bitmap_bytes) +
                          " is not one of 0 (derive), 1, 2, 4, 8");

  mbr_params p = requested;
  if (p.block_rows == 0 || p.block_cols == 0) {
    block_census bc = take_census(a, sides(requested.block_rows, requested.block_cols),
                                  sides(requested.block_cols, requested.block_rows));
    std::int64_t best_bytes = -1;
    for (std::size_t ri = 0; ri < bc.rs.size(); ++ri)
      for (std::size_t ci = 0; ci < bc.cs.size(); ++ci) {
        const std::int64_t r = bc.rs[ri], c = bc.cs[ci];
        if (r * c > 64) continue;
        const std::int64_t ptr_bytes = 2 * static_cast<std::int64_t>(sizeof(I)) * (ceil_div(a.rows, r) + 1);
        const std::int64_t bytes =
            bc.total(ri, ci) * (static_cast<std::int64_t>(sizeof(I)) + mbr_bitmap_bytes(r * c)) + ptr_bytes;
        const bool larger = r * c > std::int64_t{p.block_rows} * p.block_cols ||
                            (r * c == std::int64_t{p.block_rows} * p.block_cols && r > p.block_rows);
        if (best_bytes < 0 || bytes < best_bytes || (bytes == best_bytes && larger)) {
          best_bytes = bytes;
          p.block_rows = static_cast<I>(r);
          p.block_cols = static_cast<I>(c);
        }
      }
    if (census) *census = std::move(bc);
  }
  const std::int64_t positions = std::int64_t{p.block_rows} * p.block_cols;
  if (positions > 64)
    fail(errc::unsupported, "mbr: " + std::to_string(p.block_rows) + " x " + std::to_string(p.block_cols) +
                                " blocks have " + std::to_string(positions) +
                                " positions; a bitmap holds at most 64 (r*c <= 64)");
  const int w = mbr_bitmap_bytes(positions);
  if (requested.bitmap_bytes != 0 && requested.bitmap_bytes != w)
    fail(errc::usage, "mbr: bitmap_bytes = " + std::to_string(requested.bitmap_bytes) + " but " +
                          std::to_string(p.block_rows) + " x " + std::to_string(p.block_cols) + " blocks need " +
                          std::to_string(w) + " (the smallest of 1, 2, 4, 8 holding r*c bits)");
  p.bitmap_bytes = w;
  return p;
}

// The blocks of one column (c = 1) of the block row of rows [row0, row0 + h), from block
// b on; returns the block after the last. A block is then one column of the rows, so the
// rows merged in column order (the upper row on ties) give the entries in bit order, block
// after block, and the merge can run without data-dependent branches: it picks its row by
// comparisons, blocks advance by adding a comparison, and the current block's bitmap is
// rewritten at every entry. With the row count known at compile time (H > 0) the rows'
// cursors are updated by selection, never through a run-time index, and stay in registers.
// Blocks of one column are chosen for matrices of scattered entries, where a walk block by
// block would mispredict at nearly every entry.
template <int H, class V>
std::int64_t merge_columns(const I* row_ptr, const I* col, const V* val, std::int64_t row0, int h, int w,
                           std::int64_t b, I* block_col, std::uint8_t* bitmaps, V* values) {
  constexpr I none = std::numeric_limits<I>::max();  // above every column (cols <= I max)
  const int rows = H > 0 ? H : h;
  std::array<I, 64> pos, end, head;
  for (int i = 0; i < rows; ++i) {
    pos[i] = row_ptr[row0 + i];
    end[i] = row_ptr[row0 + i + 1];
    head[i] = pos[i] < end[i] ? col[pos[i]] : none;
  }
  std::int64_t k = b - 1;
  I current = -1, v = row_ptr[row0];
  std::uint64_t map = 0;
  for (I n = row_ptr[row0 + rows] - row_ptr[row0]; n > 0; --n) {
    int best = 0;
    I j = head[0], e = pos[0], e_end = end[0];
    for (int i = 1; i < rows; ++i) {
      const bool lower = head[i] < j;
      j = lower ? head[i] : j;
      best = lower ? i : best;
      e = lower ? pos[i] : e;
      e_end = lower ? end[i] : e_end;
    }
    const I after = e + 1 < e_end ? col[e + 1] : none;
    for (int i = 0; i < rows; ++i) {
      pos[i] += i == best ? 1 : 0;
      head[i] = i == best ? after : head[i];
    }
    const bool opens = j != current;
    k += opens;
    current = j;
    map = (opens ? 0 : map) | std::uint64_t{1} << best;
    block_col[k] = j;
    for (int byte = 0; byte < w; ++byte)
      bitmaps[static_cast<std::size_t>(k) * w + byte] = static_cast<std::uint8_t>(map >> (8 * byte));
    values[v++] = val[e];
  }
  return k + 1;
}

// Writes the block rows of rows [row_lo, row_hi) (whole block rows) from block b on.
template <class V>
void fill_blocks(const csr<V, I>& a, mbr<V>& out, std::int64_t row_lo, std::int64_t row_hi, std::int64_t b) {
  constexpr I none = std::numeric_limits<I>::max();  // above every column (cols <= I max)
  const int r = out.params.block_rows, c = out.params.block_cols, w = out.params.bitmap_bytes;
  const divider div(c);
  const I* col = a.col_idx.data();
  const V* val = a.values.data();
  I* const block_col = out.block_col_idx.data();
  std::uint8_t* const bitmaps = out.bitmaps.data();
  V* const values = out.values.data();
  std::array<I, 64> pos, end, head;
  for (std::int64_t row0 = row_lo; row0 < row_hi; row0 += r) {
    const int rr = static_cast<int>(std::min<std::int64_t>(r, row_hi - row0));
    out.block_row_ptr[row0 / r] = static_cast<I>(b);
    out.value_ptr[row0 / r] = a.row_ptr[row0];
    if (c == 1) {
      with_known_height<2, 4, 8>(rr, [&](auto rows_known) {
        b = merge_columns<decltype(rows_known)::value>(a.row_ptr.data(), col, val, row0, rr, w, b, block_col,
                                                       bitmaps, values);
      });
      continue;
    }
    I v = a.row_ptr[row0];
    for (int i = 0; i < rr; ++i) {
      pos[i] = a.row_ptr[row0 + i];
      end[i] = a.row_ptr[row0 + i + 1];
      head[i] = pos[i] < end[i] ? col[pos[i]] : none;
    }
    for (;;) {
      I first = head[0];
      for (int i = 1; i < rr; ++i) first = std::min(first, head[i]);
      if (first == none) break;
      const I q = div(first);
      const std::int64_t base = std::int64_t{q} * c, limit = base + c;
      // Only the rows with an entry in the block are visited: on sparse matrices most of
      // a block's rows have none.
      std::uint64_t rows_in = 0;
      for (int i = 0; i < rr; ++i) rows_in |= static_cast<std::uint64_t>(head[i] < limit) << i;
      std::uint64_t map = 0;
      for (; rows_in != 0; rows_in &= rows_in - 1) {
        const int i = std::countr_zero(rows_in);
        I h = head[i], p = pos[i];
        for (; h < limit; h = p < end[i] ? col[p] : none) {
          map |= std::uint64_t{1} << (i * c + (h - base));
          values[v++] = val[p++];
        }
        head[i] = h;
        pos[i] = p;
      }
      block_col[b] = q;
      for (int byte = 0; byte < w; ++byte)
        bitmaps[static_cast<std::size_t>(b) * w + byte] = static_cast<std::uint8_t>(map >> (8 * byte));
      ++b;
    }
  }
}

}  // namespace

template <class V>
mbr_params resolve_mbr_params(const csr<V, I>& a, mbr_params requested) {
  return resolve(a, requested, nullptr);
}

template <class V>
mbr<V> csr_to_mbr(const csr<V, I>& a, const mbr_params& requested) {
  block_census bc;
  const mbr_params p = resolve(a, requested, &bc);
  // A size given in full was not counted: its census has the one candidate.
  if (bc.rs.empty()) bc = take_census(a, {p.block_rows}, {p.block_cols});
  const std::size_t ri = static_cast<std::size_t>(std::find(bc.rs.begin(), bc.rs.end(), p.block_rows) - bc.rs.begin());
  const std::size_t ci = static_cast<std::size_t>(std::find(bc.cs.begin(), bc.cs.end(), p.block_cols) - bc.cs.begin());
  mbr<V> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.params = p;
  const std::int64_t block_rows = ceil_div(a.rows, p.block_rows);
  // Block counts never exceed nnz, which fits I in the source CSR: no overflow here.
  const std::int64_t blocks = bc.total(ri, ci);
  out.block_row_ptr.resize(block_rows + 1);
  out.block_row_ptr[block_rows] = static_cast<I>(blocks);
  out.value_ptr.resize(block_rows + 1);
  out.value_ptr[block_rows] = a.row_ptr[a.rows];
  out.block_col_idx.resize(blocks);
  out.bitmaps.resize(static_cast<std::size_t>(blocks) * p.bitmap_bytes);
  out.values.resize(a.nnz());
  std::vector<std::int64_t> first_block(bc.part.workers + 1, 0);
  for (int w = 0; w < bc.part.workers; ++w) first_block[w + 1] = first_block[w] + bc.at(w, ri, ci);
  parallel_blocks(bc.part.units, bc.part.workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    fill_blocks(a, out, bc.part.first_row(lo, a.rows), bc.part.first_row(hi, a.rows), first_block[w]);
  });
  return out;
}

#define SPCONV_INST(V)                                                       \
  template mbr_params resolve_mbr_params<V>(const csr<V, I>&, mbr_params); \
  template mbr<V> csr_to_mbr<V>(const csr<V, I>&, const mbr_params&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
