// The synthetic matrix generators (io/generate.hpp) and `spconv gen`: shapes and entry
// counts from closed forms, canonical CSR, the symmetry each kind promises, determinism for a
// seed and for any thread count, and errors for bad parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>

#include "io/generate.hpp"
#include "io/matrix_file.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"
#include "tests/support/process.hpp"

using namespace spconv;
using test::expect_error;
namespace fs = std::filesystem;

namespace {

using csr64 = csr<double, std::int32_t>;

// a_ij, or nothing when (i, j) is not stored.
std::optional<double> entry(const csr64& a, std::int64_t i, std::int64_t j) {
  const auto* first = a.col_idx.data() + a.row_ptr[i];
  const auto* last = a.col_idx.data() + a.row_ptr[i + 1];
  const auto* p = std::lower_bound(first, last, static_cast<std::int32_t>(j));
  if (p == last || *p != j) return std::nullopt;
  return a.values[static_cast<std::size_t>(p - a.col_idx.data())];
}

// Every stored (i, j) has a stored (j, i); with `values`, bit-identical values too.
bool symmetric(const csr64& a, bool values) {
  if (a.rows != a.cols) return false;
  for (std::int64_t i = 0; i < a.rows; ++i)
    for (auto k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
      const auto t = entry(a, a.col_idx[k], i);
      if (!t || (values && std::memcmp(&*t, &a.values[k], sizeof(double)) != 0)) return false;
    }
  return true;
}

std::int64_t row_length(const csr64& a, std::int64_t r) { return a.row_ptr[r + 1] - a.row_ptr[r]; }

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST(Generate, StencilShapesCountsAndSymmetry) {
  struct cs {
    int dims, points;
    std::int64_t n, rows, nnz;
  };
  // Entries: box stencils (3n - 2)^d, star stencils n^d + 2d (n - 1) n^(d-1).
  for (const cs c : {cs{2, 5, 7, 49, 49 + 4 * 6 * 7}, cs{2, 9, 7, 49, 19 * 19}, cs{3, 7, 5, 125, 125 + 6 * 4 * 25},
                     cs{3, 27, 5, 125, 13 * 13 * 13}, cs{3, 27, 1, 1, 1}, cs{2, 5, 1, 1, 1}}) {
    SCOPED_TRACE(std::to_string(c.points) + " points, n = " + std::to_string(c.n));
    const csr64 a = gen::stencil<double>(c.dims, c.points, c.n, 3);
    validate(a);
    EXPECT_EQ(a.rows, c.rows);
    EXPECT_EQ(a.cols, c.rows);
    EXPECT_EQ(a.nnz(), c.nnz);
    EXPECT_TRUE(symmetric(a, true));
    // Diagonal in [points - 1, points), off-diagonal in (-1, -0.5]: strictly dominant.
    for (std::int64_t i = 0; i < a.rows; ++i) {
      double off = 0;
      for (auto k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
        if (a.col_idx[k] == i) {
          EXPECT_GE(a.values[k], c.points - 1);
          EXPECT_LT(a.values[k], c.points);
        } else {
          EXPECT_GT(a.values[k], -1.0);
          EXPECT_LE(a.values[k], -0.5);
          off -= a.values[k];
        }
      }
      EXPECT_LT(off, *entry(a, i, i));
    }
  }
  // The interior point of a 3^3 grid couples with all 27 points of its box, the corner with 8.
  const csr64 box = gen::stencil<double>(3, 27, 3, 1);
  EXPECT_EQ(row_length(box, 13), 27);
  EXPECT_EQ(row_length(box, 0), 8);
  const csr64 star = gen::stencil<double>(3, 7, 3, 1);
  EXPECT_EQ(row_length(star, 13), 7);
  EXPECT_EQ(row_length(star, 0), 4);
  EXPECT_TRUE(entry(star, 13, 13 - 9) && entry(star, 13, 13 + 1) && !entry(star, 13, 13 + 4));
}

TEST(Generate, RmatIsAPowerLawGraphWithSummedDuplicates) {
  const csr64 a = gen::rmat<double>(12, 16, 5);
  validate(a);
  EXPECT_EQ(a.rows, 4096);
  EXPECT_EQ(a.cols, 4096);
  // 65536 edges, some repeated: fewer entries, every value a sum of weights in (0.5, 1].
  EXPECT_LT(a.nnz(), 16 * 4096);
  EXPECT_GT(a.nnz(), 8 * 4096);
  double total = 0;
  for (double v : a.values) {
    EXPECT_GT(v, 0.5);
    total += v;
  }
  EXPECT_GT(total, 0.5 * 16 * 4096);
  EXPECT_LE(total, 16.0 * 4096);
  // Heavy-tailed degrees: the longest row is far above the mean of 16, and many vertices have
  // no out-edge at all.
  std::int64_t longest = 0, empty = 0;
  for (std::int64_t r = 0; r < a.rows; ++r) {
    longest = std::max(longest, row_length(a, r));
    empty += row_length(a, r) == 0;
  }
  EXPECT_GT(longest, 10 * 16);
  EXPECT_GT(empty, a.rows / 10);
  // The scramble spreads the heavy rows: the longest is not row 0, where unscrambled R-MAT
  // with a > d puts it.
  EXPECT_LT(row_length(a, 0), longest);
}

TEST(Generate, UniformBandedAndBlocks) {
  const csr64 u = gen::uniform<double>(300, 50, 7, 2);
  validate(u);
  EXPECT_EQ(u.rows, 300);
  EXPECT_EQ(u.cols, 50);
  for (std::int64_t r = 0; r < u.rows; ++r) EXPECT_EQ(row_length(u, r), 7);
  for (double v : u.values) EXPECT_TRUE(v != 0 && v > -1 && v < 1) << v;
  // More than half of the columns (selection sampling) and all of them.
  const csr64 most = gen::uniform<double>(20, 10, 8, 2), all = gen::uniform<double>(4, 10, 10, 2);
  validate(most);
  validate(all);
  EXPECT_EQ(most.nnz(), 160);
  EXPECT_EQ(all.nnz(), 40);

  const csr64 b = gen::banded<double>(100, 3, 2);
  validate(b);
  EXPECT_EQ(b.nnz(), 100 * 7 - 2 * (1 + 2 + 3));
  EXPECT_TRUE(symmetric(b, false));
  EXPECT_FALSE(symmetric(b, true));  // values are general
  for (std::int64_t i = 0; i < 100; ++i)
    for (std::int64_t j = std::max<std::int64_t>(0, i - 3); j <= std::min<std::int64_t>(99, i + 3); ++j)
      EXPECT_TRUE(entry(b, i, j));
  EXPECT_EQ(gen::banded<double>(5, 100, 2).nnz(), 25);  // a band wider than the matrix is dense

  // 50 x 45 in 4 x 7 blocks: 13 block rows (the last of 2 rows), 7 block columns (the last 3
  // wide), 3 blocks per block row.
  const csr64 k = gen::blocks<double>(50, 45, 4, 7, 3, 2);
  validate(k);
  for (std::int64_t i = 0; i < k.rows; ++i) {
    std::set<std::int64_t> block_cols;
    for (auto e = k.row_ptr[i]; e < k.row_ptr[i + 1]; ++e) block_cols.insert(k.col_idx[e] / 7);
    EXPECT_EQ(block_cols.size(), 3u);
    std::int64_t width = 0;
    for (auto bc : block_cols) width += std::min<std::int64_t>(7, 45 - bc * 7);
    EXPECT_EQ(row_length(k, i), width);  // every touched block is complete
    // The rows of a block row share its blocks.
    if (i % 4) {
      EXPECT_TRUE(std::equal(k.col_idx.begin() + k.row_ptr[i], k.col_idx.begin() + k.row_ptr[i + 1],
                             k.col_idx.begin() + k.row_ptr[i - 1], k.col_idx.begin() + k.row_ptr[i]));
    }
  }
}

TEST(Generate, DeterministicForASeedAndFloatIsRoundedDouble) {
  for (const auto& kind : gen::kinds()) {
    SCOPED_TRACE(std::string(kind.name));
    std::vector<std::int64_t> p;
    if (kind.name.starts_with("stencil")) p = {6};
    else if (kind.name == "rmat") p = {8, 4};
    else if (kind.name == "random") p = {40, 30, 5};
    else if (kind.name == "banded") p = {40, 2};
    else p = {40, 30, 2, 3, 4};
    const any_matrix a = gen::generate(kind.name, p, value_type::f64, 11);
    validate(a);
    EXPECT_TRUE(equal(a, gen::generate(kind.name, p, value_type::f64, 11)));
    // Another seed: other values (and, but for the stencils and bands, other positions).
    EXPECT_FALSE(equal(a, gen::generate(kind.name, p, value_type::f64, 12)));
    EXPECT_EQ(kind.symmetric, symmetric(std::get<csr64>(a), true));
    const auto& d = std::get<csr64>(a);
    const any_matrix single = gen::generate(kind.name, p, value_type::f32, 11);
    const auto& f = std::get<csr<float, std::int32_t>>(single);
    ASSERT_EQ(f.nnz(), d.nnz());
    EXPECT_TRUE(std::equal(f.col_idx.begin(), f.col_idx.end(), d.col_idx.begin()));
    for (std::size_t k = 0; k < d.values.size(); ++k) EXPECT_EQ(f.values[k], static_cast<float>(d.values[k]));
  }
  // The optional EDGE_FACTOR defaults to 16.
  EXPECT_TRUE(equal(gen::generate("rmat", {7}, value_type::f64, 1), gen::generate("rmat", {7, 16}, value_type::f64, 1)));
}

TEST(Generate, BadParametersAreUsageErrors) {
  expect_error([] { gen::stencil<double>(2, 7, 4, 1); }, errc::usage, "2D stencil of 7 points");
  expect_error([] { gen::stencil<double>(3, 27, 0, 1); }, errc::usage, "N must be at least 1");
  expect_error([] { gen::rmat<double>(0, 16, 1); }, errc::usage, "SCALE");
  expect_error([] { gen::rmat<double>(10, 0, 1); }, errc::usage, "EDGE_FACTOR");
  expect_error([] { gen::uniform<double>(10, 5, 6, 1); }, errc::usage, "ROW_LENGTH");
  expect_error([] { gen::uniform<double>(0, 5, 1, 1); }, errc::usage, "ROWS and COLS");
  expect_error([] { gen::banded<double>(10, -1, 1); }, errc::usage, "BANDWIDTH");
  expect_error([] { gen::blocks<double>(10, 10, 0, 2, 1, 1); }, errc::usage, "R and C");
  expect_error([] { gen::blocks<double>(10, 10, 2, 3, 5, 1); }, errc::usage, "BLOCKS must be in [0, 4]");
  expect_error([] { gen::generate("lattice", {3}, value_type::f64, 1); }, errc::usage, "unknown kind 'lattice'");
  expect_error([] { gen::generate("banded", {3}, value_type::f64, 1); }, errc::usage, "takes N BANDWIDTH, got 1");
  expect_error([] { gen::generate("rmat", {40}, value_type::f64, 1); }, errc::usage, "SCALE must be in [1, 30]");
  // Beyond 32-bit indices: unsupported, refused before anything is allocated.
  expect_error([] { gen::stencil<double>(3, 27, 2000, 1); }, errc::unsupported, "exceeds the 32-bit indices");
  expect_error([] { gen::rmat<double>(27, 16, 1); }, errc::unsupported, "exceeds the 32-bit indices");
}

TEST(Generate, ReplicateDiagonal) {
  const csr64 a = test::random_csr(5, 7, 3, 4);
  const csr64 r = replicate_diagonal(a, 3);
  validate(r);
  EXPECT_EQ(r.rows, 15);
  EXPECT_EQ(r.cols, 21);
  EXPECT_EQ(r.nnz(), 3 * a.nnz());
  for (std::int64_t b = 0; b < 3; ++b)
    for (std::int64_t i = 0; i < 5; ++i)
      for (auto k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
        EXPECT_EQ(entry(r, b * 5 + i, b * 7 + a.col_idx[k]), a.values[k]);
  EXPECT_TRUE(equal(replicate_diagonal(a, 1), a));
  expect_error([&] { replicate_diagonal(a, 0); }, errc::usage, "0 copies");
  expect_error([&] { replicate_diagonal(a, std::int64_t{1} << 29); }, errc::unsupported, "exceed the int32 indices");
}

// parallel_for reads SPCONV_THREADS once per process: the thread counts are compared through
// `spconv gen` run with 1 and with 2 threads, on matrices large enough to be split.
TEST(GenCli, SameFileForAnyThreadCount) {
  test::temp_dir d;
  const std::string spconv = (test::binary_dir() / "spconv").string();
  for (const std::vector<std::string>& args : {std::vector<std::string>{"stencil27", "14"}, {"stencil5", "60"},
                                              {"rmat", "12"}, {"random", "3000", "200", "6"}, {"banded", "3000", "2"},
                                              {"blocks", "3000", "2000", "2", "3", "4"}}) {
    SCOPED_TRACE(args[0]);
    std::vector<std::string> files;
    for (const char* threads : {"1", "2"}) {
      files.push_back((d / (args[0] + "_" + threads + ".mtx")).string());
      // Through env(1): an inherited SPCONV_THREADS (ctest sets one) must be replaced, not
      // shadowed by a later duplicate that getenv would never see.
      std::vector<std::string> argv = {"/usr/bin/env", std::string("SPCONV_THREADS=") + threads, spconv, "gen"};
      argv.insert(argv.end(), args.begin(), args.end());
      argv.push_back(files.back());
      const auto r = test::run_process(argv);
      ASSERT_EQ(r.code, 0) << r.err;
    }
    EXPECT_EQ(read_bytes(files[0]), read_bytes(files[1]));
  }
}

TEST(GenCli, WritesAFileThatReadsBack) {
  test::temp_dir d;
  const auto r = test::run_spconv({"gen", "blocks", "30", "40", "3", "4", "2", (d / "b.h5").string(), "--seed", "9"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("30 x 40"), std::string::npos) << r.out;
  const matrix_file f = read_matrix_file(d / "b.h5");
  EXPECT_TRUE(equal(f.matrix, gen::generate("blocks", {30, 40, 3, 4, 2}, value_type::f64, 9)));
  EXPECT_EQ(f.meta.source_name, "spconv gen blocks 30 40 3 4 2 --seed 9");

  const auto m = test::run_spconv({"gen", "stencil9", "5", (d / "s.mtx").string(), "--type", "float"});
  ASSERT_EQ(m.code, 0) << m.err;
  read_options ro;
  ro.values = value_type::f32;
  EXPECT_TRUE(equal(read_matrix_file(d / "s.mtx", ro).matrix, gen::generate("stencil9", {5}, value_type::f32, 1)));

  // Refusals: an existing OUT without --force, a bad kind, a parameter that is no integer.
  EXPECT_EQ(test::run_spconv({"gen", "stencil9", "5", (d / "s.mtx").string()}).code, 2);
  EXPECT_EQ(test::run_spconv({"gen", "stencil9", "5", (d / "s.mtx").string(), "--force"}).code, 0);
  const auto bad = test::run_spconv({"gen", "hexagons", "5", (d / "h.mtx").string()});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("unknown kind"), std::string::npos) << bad.err;
  EXPECT_EQ(test::run_spconv({"gen", "stencil9", "five", (d / "h.mtx").string()}).code, 2);
  EXPECT_EQ(test::run_spconv({"gen", "stencil9", "5", (d / "h.txt").string()}).code, 2);
  EXPECT_FALSE(fs::exists(d / "h.mtx"));
  const auto help = test::run_spconv({"gen", "--help"});
  for (const auto& k : gen::kinds()) EXPECT_NE(help.out.find(std::string(k.name)), std::string::npos) << k.name;
}

// Bad kinds and parameters on the command line: a usage error naming the problem, no file.
TEST(GenCli, BadKindOrParameterIsAUsageErrorAndWritesNothing) {
  test::temp_dir d;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"gen", "stencil27", "0"}, std::vector<std::string>{"gen", "nosuch", "3"},
        std::vector<std::string>{"gen", "banded", "10"}}) {
    const std::string out = (d / "bad.h5").string();
    std::vector<std::string> full = args;
    full.push_back(out);
    const auto r = test::run_spconv(full);
    EXPECT_EQ(r.code, 2) << args[1] << ": " << r.err;
    EXPECT_NE(r.err.find("gen"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << args[1];
  }
}
