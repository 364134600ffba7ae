// CSR -> BCSR on the CPU, and the block size rule (specs/formats/bcsr.md).
//
// Counting blocks: visit the rows in order and keep, per candidate width c, last[q] = the
// last row so far with an entry in block column q. The entry (i, j) is the first entry of
// its r x c block exactly when last[j / c] lies before the block row's first row (the
// entries seen earlier in the block are in earlier rows of the block row, or earlier in row
// i, which sets last[j / c] = i). One array per c gives the counts of every r in the same
// pass, one load and one store per entry and c. Widths are counted from cheap to dear, and
// only while a lower bound on their block counts leaves some size able to win (take_census),
// so the choice is the one made with every candidate counted. The arrays cost a word per
// block column, so a matrix with far more columns than entries (up to 2^31) is counted
// instead by merging the r sorted rows of each block row in column order, with O(r) memory.
//
// Work is split over ranges of whole block rows (a multiple of every candidate r rows), the
// same ranges for counting and filling: the exact per-range counts of the chosen size are
// each range's first block, so the fill is one pass and the output does not depend on the
// thread count.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "convert/cpu/blocking.hpp"
#include "convert/cpu/bcsr.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {
namespace {

using I = std::int32_t;

// Block sides the automatic rule tries (specs/formats/bcsr.md, "Automatic block size").
constexpr std::array<I, 6> candidate_sides = {1, 2, 3, 4, 6, 8};
constexpr std::size_t max_candidates = candidate_sides.size();

using blocking::ceil_div;
using blocking::divider;
using blocking::partition;
using blocking::with_known_height;

// Exact block counts of the candidates rs x cs, per worker range; -1 where not counted
// (a candidate the rule proved worse than a counted one).
struct block_census {
  std::vector<I> rs, cs;
  partition part;
  bool use_markers = true;
  std::vector<std::int64_t> n;      // [(w * rs.size() + ri) * cs.size() + ci]
  std::vector<std::int64_t> row_n;  // [ci]: 1 x cs[ci] blocks (a bound), -1 where not counted

  std::int64_t& at(int w, std::size_t ri, std::size_t ci) { return n[(w * rs.size() + ri) * cs.size() + ci]; }
  std::int64_t at(int w, std::size_t ri, std::size_t ci) const { return n[(w * rs.size() + ri) * cs.size() + ci]; }
  bool counted(std::size_t ri, std::size_t ci) const { return at(0, ri, ci) >= 0; }
  std::int64_t total(std::size_t ri, std::size_t ci) const {
    if (at(0, ri, ci) < 0) return -1;
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
  bc.n.assign(static_cast<std::size_t>(workers) * bc.rs.size() * bc.cs.size(), -1);
  bc.row_n.assign(bc.cs.size(), -1);
  return bc;
}

// The counting loop of count_with_markers over rows [row_lo, row_hi): the entry of row i
// with d = last[f][q] is the first of its block for r exactly when the gap g = i - d
// exceeds i's place in its block row, (i - row_lo) mod r.
// So each entry only adds 1 to hist[f][(i - row_lo) mod unit][min(g, gmax)] (gmax = the
// largest r: larger gaps count for every r), and the counts per r come from the
// histograms at the end. Two histograms, by entry parity, so that a run of entries with
// the same gap does not wait on its own increments. A function of its own so that the
// compiler knows stores to `last` leave its locals alone (which keeps them in registers).
template <bool width_one>
void count_rows(const I* row_ptr, const I* col, std::int64_t row_lo, std::int64_t row_hi, std::int64_t unit,
                const std::vector<I>& rs, const std::vector<divider>& div, I* const* last, std::int64_t* counts) {
  const std::size_t nr = rs.size(), nf = width_one ? 1 : div.size();
  const I gmax = *std::max_element(rs.begin(), rs.end());
  const std::size_t bins = static_cast<std::size_t>(gmax) + 1, per_f = static_cast<std::size_t>(unit) * bins;
  // Local copies: stores to last[] (ints) could otherwise alias the dividers' fields.
  std::array<divider, max_candidates> dv;
  std::array<I*, max_candidates> lf;
  for (std::size_t f = 0; f < nf; ++f) {
    dv[f] = width_one ? divider(1) : div[f];
    lf[f] = last[f];
  }
  std::vector<I> hist(2 * nf * per_f, 0);
  I* const h0 = hist.data();
  I* const h1 = h0 + nf * per_f;
  std::size_t place = 0;
  for (std::int64_t i = row_lo; i < row_hi; ++i) {
    const I row = static_cast<I>(i), k_begin = row_ptr[i], k_end = row_ptr[i + 1];
    for (std::size_t f = 0; f < nf; ++f) {
      I* const lp = lf[f];
      const divider d = dv[f];
      I* const a0 = h0 + f * per_f + place * bins;
      I* const a1 = h1 + f * per_f + place * bins;
      I k = k_begin;
      auto one = [&](I* hk) {
        const I j = col[k];
        const I q = width_one ? j : d(j);
        const I g = std::min(row - lp[q], gmax);
        lp[q] = row;
        ++hk[g];
        ++k;
      };
      for (; k + 1 < k_end;) {
        one(a0);
        one(a1);
      }
      if (k < k_end) one(a0);
    }
    place = place + 1 == static_cast<std::size_t>(unit) ? 0 : place + 1;
  }
  for (std::size_t f = 0; f < nf; ++f)
    for (std::size_t t = 0; t < nr; ++t) {
      std::int64_t n = 0;
      for (std::size_t p = 0; p < static_cast<std::size_t>(unit); ++p)
        for (std::size_t g = p % static_cast<std::size_t>(rs[t]) + 1; g < bins; ++g)
          n += h0[f * per_f + p * bins + g] + h1[f * per_f + p * bins + g];
      counts[f * nr + t] = n;
    }
}

// Counts, in one pass, the r x c blocks of every r and every c in `full` (one `last`
// array per c).
template <class V>
void count_with_markers(const csr<V, I>& a, block_census& bc, const std::vector<std::size_t>& full) {
  const std::size_t nr = bc.rs.size(), nf = full.size();
  std::vector<divider> div;
  for (const std::size_t ci : full) div.emplace_back(bc.cs[ci]);
  const bool width_one = nf == 1 && bc.cs[full[0]] == 1;
  parallel_blocks(bc.part.units, bc.part.workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    const std::int64_t row_lo = bc.part.first_row(lo, a.rows), row_hi = bc.part.first_row(hi, a.rows);
    std::vector<array<I>> last(nf);
    std::array<I*, max_candidates> lp{};
    for (std::size_t f = 0; f < nf; ++f) {
      last[f].resize(static_cast<std::size_t>(ceil_div(a.cols, bc.cs[full[f]])));
      std::fill(last[f].begin(), last[f].end(), I{-1});
      lp[f] = last[f].data();
    }
    std::vector<std::int64_t> counts(nf * nr);
    (width_one ? count_rows<true> : count_rows<false>)(a.row_ptr.data(), a.col_idx.data(), row_lo, row_hi,
                                                       bc.part.unit, bc.rs, div, lp.data(), counts.data());
    for (std::size_t f = 0; f < nf; ++f)
      for (std::size_t t = 0; t < nr; ++t) bc.at(w, t, full[f]) = counts[f * nr + t];
  });
}

// Counts the 1 x c blocks of every c in `widths`: per row, its first entry and every entry
// whose block column differs from the previous entry's. One flat loop per width over the
// entries (which compilers vectorise), corrected at the first entry of each row, where the
// flat loop compared with the previous row's last entry (only when their columns are
// closer than the widest c can the block columns agree).
template <class V>
void count_row_blocks(const csr<V, I>& a, block_census& bc, const std::vector<std::size_t>& widths) {
  const auto one = std::find(bc.rs.begin(), bc.rs.end(), 1);
  const std::size_t nw = widths.size();
  I widest = 1;
  for (const std::size_t ci : widths) widest = std::max(widest, bc.cs[ci]);
  std::vector<std::vector<std::int64_t>> part(nw, std::vector<std::int64_t>(bc.part.workers));
  parallel_blocks(bc.part.units, bc.part.workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    const std::int64_t row_lo = bc.part.first_row(lo, a.rows), row_hi = bc.part.first_row(hi, a.rows);
    const I k0 = a.row_ptr[row_lo], k1 = a.row_ptr[row_hi];
    const I* col = a.col_idx.data();
    std::vector<I> n(nw, k1 > k0 ? 1 : 0);
    auto flat = [&](auto block_col) {
      I m = 0;
      for (I k = k0 + 1; k < k1; ++k) m += block_col(col[k]) != block_col(col[k - 1]);
      return m;
    };
    std::vector<divider> div;
    for (std::size_t x = 0; x < nw; ++x) {
      const I c = bc.cs[widths[x]];
      div.emplace_back(c);
      if (std::has_single_bit(static_cast<std::uint32_t>(c))) {
        const int shift = std::countr_zero(static_cast<std::uint32_t>(c));
        n[x] += flat([shift](I j) { return j >> shift; });
      } else {
        n[x] += flat(div[x]);
      }
    }
    for (std::int64_t i = row_lo + 1; i < row_hi; ++i) {
      const I k = a.row_ptr[i];
      if (k == k0 || k == a.row_ptr[i + 1] || std::abs(col[k] - col[k - 1]) >= widest) continue;
      for (std::size_t x = 0; x < nw; ++x) n[x] += div[x](col[k]) == div[x](col[k - 1]);
    }
    for (std::size_t x = 0; x < nw; ++x) {
      part[x][w] = n[x];
      if (one != bc.rs.end()) bc.at(w, static_cast<std::size_t>(one - bc.rs.begin()), widths[x]) = n[x];
    }
  });
  for (std::size_t x = 0; x < nw; ++x)
    bc.row_n[widths[x]] = std::accumulate(part[x].begin(), part[x].end(), std::int64_t{0});
}

// The same counts for every candidate by merging, per block row, its r sorted rows in
// column order: a new r x c block starts whenever an entry reaches the end of the current
// one. O(r) memory, for matrices with too many columns for count_with_markers.
template <class V>
void count_by_merging(const csr<V, I>& a, block_census& bc) {
  const std::size_t nc = bc.cs.size();
  std::vector<divider> div;
  for (const I c : bc.cs) div.emplace_back(c);
  parallel_blocks(bc.part.units, bc.part.workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    const std::int64_t row_lo = bc.part.first_row(lo, a.rows), row_hi = bc.part.first_row(hi, a.rows);
    for (std::size_t ri = 0; ri < bc.rs.size(); ++ri) {
      const std::int64_t r = bc.rs[ri];
      std::array<std::int64_t, max_candidates> count{};
      for (std::int64_t row0 = row_lo; row0 < row_hi; row0 += r) {
        const std::int64_t h = std::min(r, row_hi - row0);
        std::array<I, bcsr_max_block> head, end;
        for (std::int64_t i = 0; i < h; ++i) {
          head[i] = a.row_ptr[row0 + i];
          end[i] = a.row_ptr[row0 + i + 1];
        }
        std::array<std::int64_t, max_candidates> block_end{};  // 0: no block yet
        for (;;) {
          int best = -1;
          I best_col = 0;
          for (int i = 0; i < h; ++i)
            if (head[i] < end[i] && (best < 0 || a.col_idx[head[i]] < best_col)) {
              best = i;
              best_col = a.col_idx[head[i]];
            }
          if (best < 0) break;
          ++head[best];
          for (std::size_t ci = 0; ci < nc; ++ci)
            if (best_col >= block_end[ci]) {
              ++count[ci];
              block_end[ci] = (std::int64_t{div[ci](best_col)} + 1) * bc.cs[ci];
            }
        }
      }
      for (std::size_t ci = 0; ci < nc; ++ci) bc.at(w, ri, ci) = count[ci];
    }
  });
}

void check_side(std::string_view field, I v) {
  if (v < 0 || v > bcsr_max_block)
    fail(errc::usage, "bcsr: " + std::string(field) + " = " + std::to_string(v) + " is out of range [0, " +
                          std::to_string(bcsr_max_block) + "] (0 chooses automatically)");
}

// The rule's order (weighted bytes, r * c, r), compared lexicographically: the tie rules.
using size_key = std::tuple<std::int64_t, std::int64_t, std::int64_t>;

// Blocks larger than 1 x 1 count their bytes times blocked_weight_num / blocked_weight_den:
// they must save a fifth of the bytes to be chosen. The block-row kernel streams its bytes
// more slowly than CSR's kernels stream 1 x 1 blocks (which are CSR's arrays): on the H100
// (double, real matrices replicated to 100M entries) 2 x 1 blocks that saved 4-5% of the bytes
// (bcsstk33, fidapex6) ran at 55-58% of the copy bandwidth and 0.69-0.73x cuSPARSE, where
// HOLA on the same matrices in CSR ran at 92-94% and 1.08-1.16x; 8 x 1 blocks that saved 44%
// (memplus_rhs1) ran 1.89x, faster than any CSR kernel.
constexpr std::int64_t blocked_weight_num = 5, blocked_weight_den = 4;

template <class V>
size_key key_of(const csr<V, I>& a, std::int64_t r, std::int64_t c, std::int64_t nblocks) {
  constexpr std::int64_t index_bytes = sizeof(I);
  const std::int64_t bytes = nblocks * r * c * static_cast<std::int64_t>(sizeof(V)) + nblocks * index_bytes +
                             (ceil_div(a.rows, r) + 1) * index_bytes;
  const std::int64_t weighted =
      r * c == 1 ? bytes * blocked_weight_den : bytes * blocked_weight_num;
  return {weighted, r * c, r};
}

struct choice {
  std::size_t ri = 0, ci = 0;
  bool found = false;
  size_key key{};
};

// The best counted candidate within the value limit.
template <class V>
choice best_counted(const csr<V, I>& a, const block_census& bc) {
  const std::int64_t limit = bcsr_max_values(a.nnz(), a.rows);
  choice best;
  for (std::size_t ri = 0; ri < bc.rs.size(); ++ri)
    for (std::size_t ci = 0; ci < bc.cs.size(); ++ci) {
      const std::int64_t nb = bc.total(ri, ci), r = bc.rs[ri], c = bc.cs[ci];
      if (nb < 0 || nb * r * c > limit) continue;
      const size_key key = key_of(a, r, c, nb);
      if (!best.found || key < best.key) best = {ri, ci, true, key};
    }
  return best;
}

// Whether some block count of r x c could still make it beat `best`: the count is at least
// ceil(nnz / (r * c)), and at least N * r' * c' / (r * c) for every counted r' x c' with r'
// dividing r and c' dividing c (an r x c block is a grid of r/r' x c/c' aligned r' x c'
// blocks, so it holds at most that many of them).
template <class V>
bool may_win(const csr<V, I>& a, const block_census& bc, std::size_t ri, std::size_t ci, const choice& best) {
  const std::int64_t r = bc.rs[ri], c = bc.cs[ci], rc = r * c;
  std::int64_t bound = ceil_div(a.nnz(), rc);
  for (std::size_t cj = 0; cj < bc.cs.size(); ++cj) {
    const std::int64_t c2 = bc.cs[cj];
    if (c % c2 != 0) continue;
    if (bc.row_n[cj] >= 0) bound = std::max(bound, ceil_div(bc.row_n[cj] * c2, rc));
    for (std::size_t rj = 0; rj < bc.rs.size(); ++rj)
      if (r % bc.rs[rj] == 0 && bc.counted(rj, cj))
        bound = std::max(bound, ceil_div(bc.total(rj, cj) * bc.rs[rj] * c2, rc));
  }
  if (bound * rc > bcsr_max_values(a.nnz(), a.rows)) return false;
  return !best.found || key_of(a, r, c, bound) < best.key;
}

// The widths c != 1 for which some uncounted r x c (or, with `rows_only`, 1 x c) may win.
template <class V>
std::vector<std::size_t> open_widths(const csr<V, I>& a, const block_census& bc, bool rows_only) {
  const choice best = best_counted(a, bc);
  std::vector<std::size_t> out;
  for (std::size_t ci = 0; ci < bc.cs.size(); ++ci) {
    if (bc.cs[ci] == 1 || (rows_only && bc.row_n[ci] >= 0)) continue;
    for (std::size_t ri = 0; ri < bc.rs.size(); ++ri)
      if (!bc.counted(ri, ci) && may_win(a, bc, ri, ci, best)) {
        out.push_back(ci);
        break;
      }
  }
  return out;
}

// Counts what the rule needs to pick among rs x cs: every candidate whose block count is
// not already known to make it lose (may_win). With c = 1 among several widths, passes
// from cheap to dear: (1) the r x 1 blocks of every r, and the 1 x c blocks of the
// smallest widths (those no other width > 1 divides: 2 and 3); (2) the 1 x c blocks of
// the widths still open; (3) all r x c blocks of the widths still open. Counts are exact,
// so the choice is the one the rule makes with every candidate counted.
template <class V>
block_census take_census(const csr<V, I>& a, std::vector<I> rs, std::vector<I> cs) {
  block_census bc = make_census(a, std::move(rs), std::move(cs));
  if (!bc.use_markers) {
    count_by_merging(a, bc);
    return bc;
  }
  const auto one = std::find(bc.cs.begin(), bc.cs.end(), 1);
  if (one == bc.cs.end() || bc.cs.size() == 1) {
    std::vector<std::size_t> all(bc.cs.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    count_with_markers(a, bc, all);
    return bc;
  }
  count_with_markers(a, bc, {static_cast<std::size_t>(one - bc.cs.begin())});
  std::vector<std::size_t> smallest;
  for (std::size_t ci = 0; ci < bc.cs.size(); ++ci)
    if (bc.cs[ci] != 1 && std::none_of(bc.cs.begin(), bc.cs.end(),
                                       [&](I c2) { return c2 != 1 && c2 < bc.cs[ci] && bc.cs[ci] % c2 == 0; }))
      smallest.push_back(ci);
  count_row_blocks(a, bc, smallest);
  if (const auto widths = open_widths(a, bc, true); !widths.empty()) count_row_blocks(a, bc, widths);
  if (const auto widths = open_widths(a, bc, false); !widths.empty()) count_with_markers(a, bc, widths);
  return bc;
}

std::vector<I> sides(I requested) {
  return requested != 0 ? std::vector<I>{requested} : std::vector<I>(candidate_sides.begin(), candidate_sides.end());
}

// The rule on counted blocks (resolve_bcsr_params); errc::unsupported when no candidate fits.
template <class V>
choice choose(const csr<V, I>& a, const block_census& bc, bcsr_params requested) {
  const choice best = best_counted(a, bc);
  if (!best.found)
    fail(errc::unsupported,
         "bcsr: every candidate block size with block_rows = " + std::to_string(requested.block_rows) +
             ", block_cols = " + std::to_string(requested.block_cols) + " needs more than " +
             std::to_string(bcsr_max_values(a.nnz(), a.rows)) +
             " values (the limit min(2^31 - 1, 64 * (nnz + rows + 1) + 2^20))");
  return best;
}

// The blocks of the block row of rows [row0, row0 + h) (r x c blocks, rc = r * c values),
// from block k + 1 on; returns the last block written. The rows are merged in column order
// (the smallest next column first, the upper row on ties), and an entry opens a block when
// its block column differs from the previous entry's. Written without data-dependent
// branches, as a merge of scattered entries would otherwise mispredict at nearly every
// entry: the merge picks its row by comparisons and blocks advance by adding a comparison
// (`values` is zeroed beforehand). With the row count known at compile time (H > 0) the
// rows' cursors are updated by selection, never through a run-time index, and stay in
// registers.
template <int H, class V>
std::int64_t merge_block_row(const I* row_ptr, const I* col, const V* val, std::int64_t row0, int h, std::int64_t c,
                             std::int64_t rc, const divider& div, std::int64_t k, I* block_col, V* values,
                             std::vector<I>& zeros) {
  constexpr I none = std::numeric_limits<I>::max();  // above every column (cols <= 2^31 - 1)
  const int rows = H > 0 ? H : h;
  std::array<I, bcsr_max_block> pos, end, head;
  for (int i = 0; i < rows; ++i) {
    pos[i] = row_ptr[row0 + i];
    end[i] = row_ptr[row0 + i + 1];
    head[i] = pos[i] < end[i] ? col[pos[i]] : none;
  }
  I current = -1;
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
    const I q = div(j);
    k += q != current;
    current = q;
    block_col[k] = q;
    const std::int64_t at = k * rc + best * c + (j - std::int64_t{q} * c);
    values[at] = val[e];
    if (bcsr_detail::is_fill(val[e])) zeros.push_back(static_cast<I>(at));
  }
  return k;
}

// Writes the blocks of rows [row_lo, row_hi) (whole block rows), blocks [k_lo, k_hi),
// and their +0.0 positions, increasing, to `zeros`.
template <class V>
void fill_blocks(const csr<V, I>& a, bcsr<V>& out, std::int64_t row_lo, std::int64_t row_hi, std::int64_t k_lo,
                 std::int64_t k_hi, std::vector<I>& zeros) {
  const std::int64_t r = out.params.block_rows, c = out.params.block_cols, rc = r * c;
  const I* col = a.col_idx.data();
  const V* val = a.values.data();
  if (rc == 1) {
    // 1 x 1 blocks are the CSR arrays themselves.
    const I k0 = a.row_ptr[row_lo], k1 = a.row_ptr[row_hi];
    std::copy(a.row_ptr.begin() + row_lo, a.row_ptr.begin() + row_hi, out.block_ptr.begin() + row_lo);
    std::copy(col + k0, col + k1, out.block_col.begin() + k0);
    std::copy(val + k0, val + k1, out.values.begin() + k0);
    for (I e = k0; e < k1; ++e)
      if (bcsr_detail::is_fill(val[e])) zeros.push_back(e);
    return;
  }
  std::fill(out.values.begin() + k_lo * rc, out.values.begin() + k_hi * rc, V(0));
  const divider div(c);
  I* const block_col = out.block_col.data();
  V* const values = out.values.data();
  std::int64_t k = k_lo - 1;
  for (std::int64_t row0 = row_lo; row0 < row_hi; row0 += r) {
    out.block_ptr[row0 / r] = static_cast<I>(k + 1);
    const int h = static_cast<int>(std::min(r, row_hi - row0));
    const std::size_t zeros_before = zeros.size();
    with_known_height<1, 2, 3, 4, 6, 8>(h, [&](auto rows_known) {
      k = merge_block_row<decltype(rows_known)::value>(a.row_ptr.data(), col, val, row0, h, c, rc, div, k, block_col,
                                                       values, zeros);
    });
    // Inside a block the merge goes column by column, the positions row by row.
    std::sort(zeros.begin() + static_cast<std::ptrdiff_t>(zeros_before), zeros.end());
  }
}

}  // namespace

template <class V>
bcsr_params resolve_bcsr_params(const csr<V, I>& a, bcsr_params requested) {
  check_side("block_rows", requested.block_rows);
  check_side("block_cols", requested.block_cols);
  if (requested.block_rows != 0 && requested.block_cols != 0) return requested;
  const block_census bc = take_census(a, sides(requested.block_rows), sides(requested.block_cols));
  const choice best = choose(a, bc, requested);
  return {bc.rs[best.ri], bc.cs[best.ci]};
}

template <class V>
bcsr<V> csr_to_bcsr(const csr<V, I>& a, const bcsr_params& requested) {
  check_side("block_rows", requested.block_rows);
  check_side("block_cols", requested.block_cols);
  const block_census bc = take_census(a, sides(requested.block_rows), sides(requested.block_cols));
  // A size given in full is the only candidate; the limit below refuses it by name.
  const bool given = requested.block_rows != 0 && requested.block_cols != 0;
  const choice best = given ? choice{0, 0, true, {}} : choose(a, bc, requested);
  const bcsr_params p{bc.rs[best.ri], bc.cs[best.ci]};
  const std::int64_t r = p.block_rows, c = p.block_cols, rc = r * c;
  bcsr<V> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.params = p;
  const std::int64_t mb = ceil_div(a.rows, r);

  // A block holds at least one entry, so nblocks <= nnz fits the 32-bit offsets.
  const std::int64_t nblocks = bc.total(best.ri, best.ci), nvalues = nblocks * rc;
  const std::int64_t limit = bcsr_max_values(a.nnz(), a.rows);
  if (nvalues > limit)
    fail(errc::unsupported,
         "bcsr: " + std::to_string(r) + " x " + std::to_string(c) + " blocks need " + std::to_string(nvalues) +
             " values for " + std::to_string(a.nnz()) + " entries, beyond the limit of " + std::to_string(limit) +
             " values (min(2^31 - 1, 64 * (nnz + rows + 1) + 2^20)); use a smaller block size or 0 (automatic)");

  out.block_ptr.resize(mb + 1);
  out.block_ptr[mb] = static_cast<I>(nblocks);
  out.block_col.resize(nblocks);
  out.values.resize(nvalues);
  // Each worker range starts at the blocks of the ranges before it; its +0.0 positions are
  // increasing and joined in range order.
  std::vector<std::int64_t> first_block(bc.part.workers + 1, 0);
  for (int w = 0; w < bc.part.workers; ++w) first_block[w + 1] = first_block[w] + bc.at(w, best.ri, best.ci);
  std::vector<std::vector<I>> zeros(bc.part.workers);
  parallel_blocks(bc.part.units, bc.part.workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    fill_blocks(a, out, bc.part.first_row(lo, a.rows), bc.part.first_row(hi, a.rows), first_block[w],
                first_block[w + 1], zeros[w]);
  });
  for (const auto& zw : zeros) out.stored_zeros.insert(out.stored_zeros.end(), zw.begin(), zw.end());
  return out;
}

#define SPCONV_INST(V)                                                                   \
  template bcsr_params resolve_bcsr_params<V>(const csr<V, std::int32_t>&, bcsr_params); \
  template bcsr<V> csr_to_bcsr<V>(const csr<V, std::int32_t>&, const bcsr_params&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
