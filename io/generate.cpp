#include "io/generate.hpp"
#include "io/generate_hash.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::gen {
namespace {

constexpr std::int64_t max_index = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t row_grain = 1 << 10;

using namespace detail;  // mix, hash, stream_seed, unit, stencil_value (io/generate_hash.hpp)

// A splitmix64 sequence started at hash(seed, position): the draws of one row or one edge.
struct sequence {
  std::uint64_t state;
  std::uint64_t next() {
    state += golden;
    return mix(state);
  }
};

// (-1, 1) without 0: magnitude in (0, 1) from the top 53 bits, sign from the lowest bit.
double signed_unit(std::uint64_t h) {
  const double m = (static_cast<double>(h >> 11) + 0.5) * 0x1p-53;
  return (h & 1) ? -m : m;
}
// [0, n): the remainder's bias is below n / 2^64, far below anything a benchmark sees.
std::int64_t below(std::uint64_t h, std::int64_t n) { return static_cast<std::int64_t>(h % static_cast<std::uint64_t>(n)); }

[[noreturn]] void bad_param(std::string_view kind, const std::string& what) {
  fail(errc::usage, "gen " + std::string(kind) + ": " + what);
}

std::int64_t checked_mul(std::string_view kind, std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p) || p > max_index)
    fail(errc::unsupported, "gen " + std::string(kind) + ": " + std::string(what) + " (" + std::to_string(a) + " x " +
                                std::to_string(b) + ") exceeds the 32-bit indices");
  return p;
}

// Canonical CSR built row by row in two parallel passes: length(r) gives row r's entry count,
// fill(r, cols, values) writes its sorted columns and values where they belong. Every row is
// written by one call at an offset fixed by the lengths alone, so the arrays do not depend on
// how the rows are split between threads.
template <class V, class Length, class Fill>
csr<V, std::int32_t> build_rows(std::string_view kind, std::int64_t rows, std::int64_t cols, Length&& length,
                                Fill&& fill) {
  if (rows > max_index || cols > max_index)
    fail(errc::unsupported, "gen " + std::string(kind) + ": shape " + std::to_string(rows) + " x " +
                                std::to_string(cols) + " exceeds the 32-bit indices");
  csr<V, std::int32_t> out;
  out.rows = rows;
  out.cols = cols;
  out.row_ptr.resize(static_cast<std::size_t>(rows) + 1);
  out.row_ptr[0] = 0;
  parallel_for(rows, row_grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) out.row_ptr[static_cast<std::size_t>(r) + 1] = static_cast<std::int32_t>(length(r));
  });
  std::int64_t total = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    total += out.row_ptr[static_cast<std::size_t>(r) + 1];
    if (total > max_index)
      fail(errc::unsupported, "gen " + std::string(kind) + ": more than " + std::to_string(max_index) +
                                  " entries exceed the 32-bit indices");
    out.row_ptr[static_cast<std::size_t>(r) + 1] = static_cast<std::int32_t>(total);
  }
  out.col_idx.resize(static_cast<std::size_t>(total));
  out.values.resize(static_cast<std::size_t>(total));
  parallel_for(rows, row_grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      const auto k = static_cast<std::size_t>(out.row_ptr[static_cast<std::size_t>(r)]);
      fill(r, out.col_idx.data() + k, out.values.data() + k);
    }
  });
  return out;
}

// k distinct values of [0, pool), sorted, into out[0..k), drawn uniformly from `seq`.
// Few of many: Floyd's algorithm (Bentley & Floyd, "A sample of brilliance", CACM 1987),
// kept sorted by insertion; most of the pool: selection sampling (Knuth, TAOCP vol. 2,
// 3.4.2, Algorithm S), one pass over the pool.
void sample_distinct(std::int64_t pool, std::int64_t k, sequence& seq, std::int32_t* out) {
  if (2 * k > pool) {
    std::int64_t needed = k, m = 0;
    for (std::int64_t j = 0; j < pool && needed > 0; ++j)
      if (below(seq.next(), pool - j) < needed) {
        out[m++] = static_cast<std::int32_t>(j);
        --needed;
      }
    return;
  }
  std::int64_t m = 0;
  for (std::int64_t j = pool - k; j < pool; ++j) {
    const auto t = static_cast<std::int32_t>(below(seq.next(), j + 1));
    std::int32_t* pos = std::lower_bound(out, out + m, t);
    if (pos != out + m && *pos == t) {
      out[m] = static_cast<std::int32_t>(j);  // every value drawn so far is below j
    } else {
      std::memmove(pos + 1, pos, static_cast<std::size_t>(out + m - pos) * sizeof(std::int32_t));
      *pos = t;
    }
    ++m;
  }
}

}  // namespace

template <class V>
csr<V, std::int32_t> stencil(int dims, int points, std::int64_t n, std::uint64_t seed) {
  const std::string kind = "stencil" + std::to_string(points);
  const bool box = points == 9 || points == 27;
  if (!(dims == 2 && (points == 5 || points == 9)) && !(dims == 3 && (points == 7 || points == 27)))
    fail(errc::usage, "gen stencil: a " + std::to_string(dims) + "D stencil of " + std::to_string(points) +
                          " points is not offered (2D: 5 or 9 points, 3D: 7 or 27)");
  if (n < 1) bad_param(kind, "N must be at least 1, got " + std::to_string(n));
  const std::int64_t plane = checked_mul(kind, n, n, "the grid");
  const std::int64_t rows = dims == 3 ? checked_mul(kind, plane, n, "the grid") : plane;
  const std::int64_t zs = dims == 3 ? 1 : 0;  // the z offsets run over [-zs, zs]
  const std::uint64_t vs = stream_seed(seed, purpose::values);
  const auto in_grid = [n](std::int64_t c, int d) { return c + d >= 0 && c + d < n; };
  return build_rows<V>(
      kind, rows, rows,
      [&](std::int64_t i) {
        const std::int64_t x = i % n, y = i / n % n, z = i / plane;
        // Neighbours per axis inside the grid, the point included.
        const std::int64_t ax = 1 + (x > 0) + (x < n - 1), ay = 1 + (y > 0) + (y < n - 1),
                           az = dims == 3 ? 1 + (z > 0) + (z < n - 1) : 1;
        return box ? ax * ay * az : 1 + (ax - 1) + (ay - 1) + (az - 1);
      },
      [&](std::int64_t i, std::int32_t* col, V* val) {
        const std::int64_t x = i % n, y = i / n % n, z = i / plane;
        // (dz, dy, dx) in lexicographic order is increasing column order: a step in y
        // (n columns) outweighs any dx, a step in z (n*n) any dy and dx.
        std::size_t k = 0;
        for (int dz = -static_cast<int>(zs); dz <= zs; ++dz)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              if (!box && std::abs(dx) + std::abs(dy) + std::abs(dz) > 1) continue;
              if (!in_grid(x, dx) || !in_grid(y, dy) || !in_grid(z, dz)) continue;
              const std::int64_t j = i + dx + n * dy + plane * dz;
              // The pair (min, max) keys the value, so a_ij == a_ji bit for bit.
              const double v = stencil_value(vs, points, i, j);
              col[k] = static_cast<std::int32_t>(j);
              val[k] = static_cast<V>(v);
              ++k;
            }
      });
}

template <class V>
csr<V, std::int32_t> rmat(int scale, std::int64_t edge_factor, std::uint64_t seed) {
  constexpr std::string_view kind = "rmat";
  if (scale < 1 || scale > 30) bad_param(kind, "SCALE must be in [1, 30], got " + std::to_string(scale));
  if (edge_factor < 1) bad_param(kind, "EDGE_FACTOR must be at least 1, got " + std::to_string(edge_factor));
  const std::int64_t n = std::int64_t{1} << scale;
  const std::int64_t edges = checked_mul(kind, edge_factor, n, "EDGE_FACTOR * 2^SCALE edges");
  constexpr double a = 0.57, b = 0.19, c = 0.19;  // d = 0.05, the rest

  // The vertex scramble: a bijection of [0, 2^scale) made of steps that are each invertible
  // modulo 2^scale (multiplying by an odd number, adding, x ^ (x >> s) with s >= 1).
  const std::uint64_t mask = static_cast<std::uint64_t>(n) - 1;
  const std::uint64_t ss = stream_seed(seed, purpose::scramble);
  const std::uint64_t m1 = hash(ss, 1) | 1, m2 = hash(ss, 2) | 1, add = hash(ss, 3);
  const int shift = scale / 2 + 1;
  const auto scramble = [=](std::uint64_t v) {
    v = (v * m1) & mask;
    v ^= v >> shift;
    v = (v + add) & mask;
    v = (v * m2) & mask;
    v ^= v >> shift;
    return static_cast<std::int32_t>(v);
  };

  // Each edge draws from its own sequence, so edge e lands in the same place for any split.
  const std::uint64_t es = stream_seed(seed, purpose::structure), vs = stream_seed(seed, purpose::values);
  array<std::int32_t> src(static_cast<std::size_t>(edges)), dst(static_cast<std::size_t>(edges));
  array<std::int32_t> start(static_cast<std::size_t>(n) + 1, 0);
  parallel_for(edges, 1 << 14, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t e = lo; e < hi; ++e) {
      sequence seq{hash(es, static_cast<std::uint64_t>(e))};
      std::uint64_t r = 0, q = 0;
      for (int level = 0; level < scale; ++level) {
        const double u = unit(seq.next());
        r <<= 1;
        q <<= 1;
        if (u >= a + b + c) r |= 1, q |= 1;
        else if (u >= a + b) r |= 1;
        else if (u >= a) q |= 1;
      }
      const auto s = static_cast<std::size_t>(e);
      src[s] = scramble(r);
      dst[s] = scramble(q);
      std::atomic_ref<std::int32_t>(start[static_cast<std::size_t>(src[s]) + 1]).fetch_add(1, std::memory_order_relaxed);
    }
  });
  for (std::int64_t r = 0; r < n; ++r) start[static_cast<std::size_t>(r) + 1] += start[static_cast<std::size_t>(r)];

  // Bucket the edge numbers by row (the order inside a bucket depends on the threads; the
  // sort below by (column, edge number) removes that), then sum the duplicates of each row
  // in edge order into place: tmp_col reuses src, whose contents are no longer needed.
  array<std::int32_t> cursor(start.begin(), start.end() - 1), ids(static_cast<std::size_t>(edges));
  parallel_for(edges, 1 << 14, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t e = lo; e < hi; ++e) {
      const std::int32_t slot = std::atomic_ref<std::int32_t>(cursor[static_cast<std::size_t>(src[static_cast<std::size_t>(e)])])
                                    .fetch_add(1, std::memory_order_relaxed);
      ids[static_cast<std::size_t>(slot)] = static_cast<std::int32_t>(e);
    }
  });
  array<std::int32_t>& tmp_col = src;
  array<double> tmp_val(static_cast<std::size_t>(edges));
  array<std::int32_t> unique(static_cast<std::size_t>(n));
  parallel_for(n, row_grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      std::int32_t* first = ids.data() + start[static_cast<std::size_t>(r)];
      std::int32_t* last = ids.data() + start[static_cast<std::size_t>(r) + 1];
      std::sort(first, last, [&](std::int32_t x, std::int32_t y) {
        const std::int32_t cx = dst[static_cast<std::size_t>(x)], cy = dst[static_cast<std::size_t>(y)];
        return cx != cy ? cx < cy : x < y;
      });
      std::size_t out = static_cast<std::size_t>(start[static_cast<std::size_t>(r)]);
      const std::size_t row0 = out;
      for (const std::int32_t* p = first; p != last; ++p) {
        const std::int32_t col = dst[static_cast<std::size_t>(*p)];
        const double w = 1.0 - 0.5 * unit(hash(vs, static_cast<std::uint64_t>(*p)));  // (0.5, 1]
        if (out > row0 && tmp_col[out - 1] == col) {
          tmp_val[out - 1] += w;
        } else {
          tmp_col[out] = col;
          tmp_val[out] = w;
          ++out;
        }
      }
      unique[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(out - row0);
    }
  });
  return build_rows<V>(
      kind, n, n, [&](std::int64_t r) { return unique[static_cast<std::size_t>(r)]; },
      [&](std::int64_t r, std::int32_t* col, V* val) {
        const auto from = static_cast<std::size_t>(start[static_cast<std::size_t>(r)]);
        for (std::size_t k = 0; k < static_cast<std::size_t>(unique[static_cast<std::size_t>(r)]); ++k) {
          col[k] = tmp_col[from + k];
          val[k] = static_cast<V>(tmp_val[from + k]);
        }
      });
}

template <class V>
csr<V, std::int32_t> uniform(std::int64_t rows, std::int64_t cols, std::int64_t row_length, std::uint64_t seed) {
  constexpr std::string_view kind = "random";
  if (rows < 1 || cols < 1)
    bad_param(kind, "ROWS and COLS must be at least 1, got " + std::to_string(rows) + " x " + std::to_string(cols));
  if (row_length < 0 || row_length > cols)
    bad_param(kind, "ROW_LENGTH must be in [0, COLS = " + std::to_string(cols) + "], got " + std::to_string(row_length));
  const std::uint64_t cs = stream_seed(seed, purpose::structure), vs = stream_seed(seed, purpose::values);
  return build_rows<V>(
      kind, rows, cols, [&](std::int64_t) { return row_length; },
      [&](std::int64_t r, std::int32_t* col, V* val) {
        sequence seq{hash(cs, static_cast<std::uint64_t>(r))};
        sample_distinct(cols, row_length, seq, col);
        for (std::int64_t k = 0; k < row_length; ++k)
          val[k] = static_cast<V>(signed_unit(hash(vs, static_cast<std::uint64_t>(r), static_cast<std::uint64_t>(col[k]))));
      });
}

template <class V>
csr<V, std::int32_t> banded(std::int64_t n, std::int64_t bandwidth, std::uint64_t seed) {
  constexpr std::string_view kind = "banded";
  if (n < 1) bad_param(kind, "N must be at least 1, got " + std::to_string(n));
  if (bandwidth < 0) bad_param(kind, "BANDWIDTH must be at least 0, got " + std::to_string(bandwidth));
  const std::int64_t w = std::min(bandwidth, n - 1);
  const std::uint64_t vs = stream_seed(seed, purpose::values);
  return build_rows<V>(
      kind, n, n, [&](std::int64_t i) { return std::min(n - 1, i + w) - std::max<std::int64_t>(0, i - w) + 1; },
      [&](std::int64_t i, std::int32_t* col, V* val) {
        std::size_t k = 0;
        for (std::int64_t j = std::max<std::int64_t>(0, i - w); j <= std::min(n - 1, i + w); ++j, ++k) {
          col[k] = static_cast<std::int32_t>(j);
          val[k] = static_cast<V>(signed_unit(hash(vs, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j))));
        }
      });
}

template <class V>
csr<V, std::int32_t> blocks(std::int64_t rows, std::int64_t cols, std::int64_t r, std::int64_t c,
                            std::int64_t per_block_row, std::uint64_t seed) {
  constexpr std::string_view kind = "blocks";
  if (rows < 1 || cols < 1)
    bad_param(kind, "ROWS and COLS must be at least 1, got " + std::to_string(rows) + " x " + std::to_string(cols));
  if (rows > max_index || cols > max_index)
    fail(errc::unsupported, "gen blocks: shape " + std::to_string(rows) + " x " + std::to_string(cols) +
                                " exceeds the 32-bit indices");
  if (r < 1 || c < 1) bad_param(kind, "R and C must be at least 1, got " + std::to_string(r) + " x " + std::to_string(c));
  const std::int64_t block_rows = (rows + r - 1) / r, block_cols = (cols + c - 1) / c;
  if (per_block_row < 0 || per_block_row > block_cols)
    bad_param(kind, "BLOCKS must be in [0, " + std::to_string(block_cols) + "] (the block columns of " +
                        std::to_string(cols) + " columns in blocks of " + std::to_string(c) + "), got " +
                        std::to_string(per_block_row));
  // Every chosen block holds at least one entry per row of its block row: more blocks than
  // 32-bit indices can count means more entries too, refused before the choice is stored.
  checked_mul(kind, block_rows, per_block_row, "the blocks");
  const std::uint64_t cs = stream_seed(seed, purpose::structure), vs = stream_seed(seed, purpose::values);
  const auto k = static_cast<std::size_t>(per_block_row);
  array<std::int32_t> chosen(static_cast<std::size_t>(block_rows) * k);
  parallel_for(block_rows, row_grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t br = lo; br < hi; ++br) {
      sequence seq{hash(cs, static_cast<std::uint64_t>(br))};
      sample_distinct(block_cols, per_block_row, seq, chosen.data() + static_cast<std::size_t>(br) * k);
    }
  });
  const auto of_row = [&](std::int64_t i) { return chosen.data() + static_cast<std::size_t>(i / r) * k; };
  return build_rows<V>(
      kind, rows, cols,
      [&](std::int64_t i) {
        std::int64_t len = 0;
        for (std::size_t b = 0; b < k; ++b) len += std::min(c, cols - of_row(i)[b] * c);
        return len;
      },
      [&](std::int64_t i, std::int32_t* col, V* val) {
        std::size_t e = 0;
        for (std::size_t b = 0; b < k; ++b) {
          const std::int64_t j0 = of_row(i)[b] * c;
          for (std::int64_t j = j0; j < std::min(cols, j0 + c); ++j, ++e) {
            col[e] = static_cast<std::int32_t>(j);
            val[e] = static_cast<V>(signed_unit(hash(vs, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j))));
          }
        }
      });
}

const std::vector<kind_info>& kinds() {
  static const std::vector<kind_info> list = {
      {"stencil5", "5-point 2D stencil (axis neighbours) on an N x N grid, symmetric positive definite",
       {{"N", "grid points per side (N^2 rows)", std::nullopt}}, true},
      {"stencil9", "9-point 2D stencil (3 x 3 box) on an N x N grid, symmetric positive definite",
       {{"N", "grid points per side (N^2 rows)", std::nullopt}}, true},
      {"stencil7", "7-point 3D stencil (axis neighbours) on an N x N x N grid, symmetric positive definite",
       {{"N", "grid points per side (N^3 rows)", std::nullopt}}, true},
      {"stencil27", "27-point 3D stencil (3 x 3 x 3 box) on an N x N x N grid, symmetric positive definite",
       {{"N", "grid points per side (N^3 rows)", std::nullopt}}, true},
      {"rmat", "R-MAT power-law graph, Graph500 parameters a=0.57 b=0.19 c=0.19 d=0.05, scrambled vertices, duplicates summed",
       {{"SCALE", "2^SCALE vertices (rows and columns), 1 to 30", std::nullopt},
        {"EDGE_FACTOR", "edges per vertex before duplicates are summed", 16}},
       false},
      {"random", "uniform random columns, the same number in every row",
       {{"ROWS", "rows", std::nullopt}, {"COLS", "columns", std::nullopt}, {"ROW_LENGTH", "entries per row", std::nullopt}},
       false},
      {"banded", "dense band |i - j| <= BANDWIDTH of an N x N matrix",
       {{"N", "rows and columns", std::nullopt}, {"BANDWIDTH", "entries each side of the diagonal", std::nullopt}},
       false},
      {"blocks", "dense R x C blocks, BLOCKS of them per block row at random block columns",
       {{"ROWS", "rows", std::nullopt},
        {"COLS", "columns", std::nullopt},
        {"R", "block rows", std::nullopt},
        {"C", "block columns", std::nullopt},
        {"BLOCKS", "blocks per block row", std::nullopt}},
       false},
  };
  return list;
}

namespace {

template <class V>
csr<V, std::int32_t> generate_typed(std::string_view kind, const std::vector<std::int64_t>& p, std::uint64_t seed) {
  if (kind == "stencil5") return stencil<V>(2, 5, p[0], seed);
  if (kind == "stencil9") return stencil<V>(2, 9, p[0], seed);
  if (kind == "stencil7") return stencil<V>(3, 7, p[0], seed);
  if (kind == "stencil27") return stencil<V>(3, 27, p[0], seed);
  if (kind == "rmat") {
    if (p[0] < 1 || p[0] > 30) bad_param(kind, "SCALE must be in [1, 30], got " + std::to_string(p[0]));
    return rmat<V>(static_cast<int>(p[0]), p[1], seed);
  }
  if (kind == "random") return uniform<V>(p[0], p[1], p[2], seed);
  if (kind == "banded") return banded<V>(p[0], p[1], seed);
  return blocks<V>(p[0], p[1], p[2], p[3], p[4], seed);
}

const kind_info& find_kind(std::string_view kind) {
  std::string known;
  for (const auto& k : kinds()) {
    if (k.name == kind) return k;
    known += known.empty() ? "" : ", ";
    known += k.name;
  }
  fail(errc::usage, "gen: unknown kind '" + std::string(kind) + "' (known: " + known + ")");
}

}  // namespace

any_matrix generate(std::string_view kind, const std::vector<std::int64_t>& params, value_type values,
                    std::uint64_t seed) {
  const kind_info& k = find_kind(kind);
  std::size_t required = 0;
  for (const auto& p : k.params) required += p.fallback ? 0 : 1;
  if (params.size() < required || params.size() > k.params.size()) {
    std::string names;
    for (const auto& p : k.params) {
      names += p.fallback ? " [" : " ";
      names += p.name;
      names += p.fallback ? "]" : "";
    }
    fail(errc::usage, "gen " + std::string(kind) + " takes" + names + ", got " + std::to_string(params.size()) +
                          " parameter" + (params.size() == 1 ? "" : "s"));
  }
  std::vector<std::int64_t> full = params;
  for (std::size_t i = full.size(); i < k.params.size(); ++i) full.push_back(*k.params[i].fallback);
  if (values == value_type::f32) return generate_typed<float>(kind, full, seed);
  return generate_typed<double>(kind, full, seed);
}

std::string describe(std::string_view kind, const std::vector<std::int64_t>& params, std::uint64_t seed) {
  std::string s(kind);
  for (auto p : params) {
    s += ' ';
    s += std::to_string(p);
  }
  s += " --seed ";
  s += std::to_string(seed);
  return s;
}

#define SPCONV_INST(V)                                                                                          \
  template csr<V, std::int32_t> stencil<V>(int, int, std::int64_t, std::uint64_t);                              \
  template csr<V, std::int32_t> rmat<V>(int, std::int64_t, std::uint64_t);                                      \
  template csr<V, std::int32_t> uniform<V>(std::int64_t, std::int64_t, std::int64_t, std::uint64_t);            \
  template csr<V, std::int32_t> banded<V>(std::int64_t, std::int64_t, std::uint64_t);                           \
  template csr<V, std::int32_t> blocks<V>(std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, \
                                          std::uint64_t);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gen

namespace spconv {

template <class V, class I>
csr<V, I> replicate_diagonal(const csr<V, I>& a, std::int64_t copies) {
  if (copies < 1) fail(errc::usage, "replicate_diagonal: " + std::to_string(copies) + " copies (at least 1)");
  const std::int64_t limit = std::numeric_limits<I>::max(), nnz = a.nnz();
  std::int64_t rows = 0, cols = 0, entries = 0;
  if (__builtin_mul_overflow(a.rows, copies, &rows) || __builtin_mul_overflow(a.cols, copies, &cols) ||
      __builtin_mul_overflow(nnz, copies, &entries) || rows > limit || cols > limit || entries > limit)
    fail(errc::unsupported, std::to_string(copies) + " diagonal copies of a " + std::to_string(a.rows) + " x " +
                                std::to_string(a.cols) + " matrix with " + std::to_string(nnz) + " entries exceed the " +
                                std::string(type_name<I>()) + " indices");
  csr<V, I> out;
  out.rows = rows;
  out.cols = cols;
  out.row_ptr.resize(static_cast<std::size_t>(rows) + 1);
  out.col_idx.resize(static_cast<std::size_t>(entries));
  out.values.resize(static_cast<std::size_t>(entries));
  parallel_for(copies, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t b = lo; b < hi; ++b) {
      const auto row0 = static_cast<std::size_t>(b * a.rows), entry0 = static_cast<std::size_t>(b * nnz);
      const auto col0 = static_cast<I>(b * a.cols);
      for (std::size_t r = 0; r < static_cast<std::size_t>(a.rows); ++r)
        out.row_ptr[row0 + r] = static_cast<I>(entry0) + a.row_ptr[r];
      for (std::size_t e = 0; e < static_cast<std::size_t>(nnz); ++e) {
        out.col_idx[entry0 + e] = col0 + a.col_idx[e];
        out.values[entry0 + e] = a.values[e];
      }
    }
  });
  out.row_ptr[static_cast<std::size_t>(rows)] = static_cast<I>(entries);
  return out;
}

#define SPCONV_INST(V, I) template csr<V, I> replicate_diagonal<V, I>(const csr<V, I>&, std::int64_t);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv
