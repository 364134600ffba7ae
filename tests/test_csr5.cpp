// CSR5: round trips, SpMV against the CSR reference, the tile size rule, refusals, each
// validate() invariant, and the worked example of specs/formats/csr5.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "convert/cpu/csr5.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/cpu/spmv_csr5.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
using test::expect_error;

namespace {

template <class A>
auto to_vector(const A& a) {
  return std::vector<typename A::value_type>(a.begin(), a.end());
}

csr<double, std::int32_t> from_rows(std::int64_t rows, std::int64_t cols,
                                     const std::vector<std::vector<std::pair<int, double>>>& entries) {
  csr<double, std::int32_t> a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.push_back(0);
  for (std::int64_t r = 0; r < rows; ++r) {
    if (r < static_cast<std::int64_t>(entries.size()))
      for (auto [c, v] : entries[r]) {
        a.col_idx.push_back(c);
        a.values.push_back(v);
      }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col_idx.size()));
  }
  return a;
}

// The 8 x 8 matrix of the thesis's Figure 6.1 (34 entries, row 2 empty): the worked
// example of specs/formats/csr5.md.
csr<double, std::int32_t> thesis_example() {
  const int dense[8][8] = {{1, 0, 2, 3, 0, 0, 4, 5}, {0, 1, 0, 2, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0},
                           {1, 2, 3, 4, 5, 0, 6, 7}, {0, 1, 0, 2, 0, 3, 0, 0}, {1, 2, 0, 0, 0, 0, 0, 0},
                           {0, 1, 2, 3, 4, 5, 6, 7}, {1, 2, 3, 4, 5, 6, 7, 8}};
  std::vector<std::vector<std::pair<int, double>>> e(8);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c)
      if (dense[r][c] != 0) e[r].push_back({c, dense[r][c]});
  return from_rows(8, 8, e);
}

// Matrices the generator set lacks: empty rows at both ends and in long runs crossing
// tiles, one tile spanning 10^5 rows (empty_offset far beyond a tile's size), and rows
// crossing many tiles mixed with short ones.
std::vector<test::generated> extra_matrices() {
  std::vector<test::generated> g;
  {
    std::mt19937_64 rng(21);
    std::vector<std::vector<std::pair<int, double>>> e(3000);
    std::uniform_int_distribution<int> col(0, 499), len(0, 40);
    for (std::size_t r = 50; r < 2900; ++r) {
      if (rng() % 3 != 0) continue;  // two rows in three empty
      std::vector<int> cs;
      for (int k = len(rng); k > 0; --k) cs.push_back(col(rng));
      std::sort(cs.begin(), cs.end());
      cs.erase(std::unique(cs.begin(), cs.end()), cs.end());
      for (int c : cs) e[r].push_back({c, 0.25 * static_cast<double>(c) - 3.0 + static_cast<double>(r % 7)});
    }
    g.push_back({"gaps_and_empty_ends_3000x500", from_rows(3000, 500, e)});
  }
  {
    std::vector<std::vector<std::pair<int, double>>> e(100000);
    for (int c = 0; c < 8; ++c) {
      e[0].push_back({c, 1.0 + c});
      e[99999].push_back({c + 8, -2.0 - c});
    }
    g.push_back({"two_rows_100000_apart", from_rows(100000, 16, e)});
  }
  {
    std::vector<std::vector<std::pair<int, double>>> e(40);
    for (int r = 0; r < 40; ++r) {
      const int n = r % 5 == 0 ? 900 : r % 3;
      for (int c = 0; c < n; ++c) e[r].push_back({c * 2 + r % 2, 1.0 / (1.0 + c) - 0.3 * (r % 4)});
    }
    g.push_back({"long_and_short_rows_40x1900", from_rows(40, 1900, e)});
  }
  return g;
}

// Over 10^5 entries: enough tiles for the converter and the SpMV to split the work into
// several thread blocks (run with SPCONV_THREADS >= 2, as ctest does), with rows crossing
// block boundaries, runs of empty rows and long rows.
csr<double, std::int32_t> large_matrix() {
  std::mt19937_64 rng(31);
  std::uniform_int_distribution<int> col(0, 29999);
  std::vector<std::vector<std::pair<int, double>>> e(30000);
  for (std::size_t r = 0; r < e.size(); ++r) {
    if ((r / 700) % 4 == 1 || rng() % 3 == 0) continue;  // runs of empty rows and scattered ones
    const int n = r % 1013 == 0 ? 3000 : static_cast<int>(rng() % 15);
    std::vector<int> cs;
    for (int k = 0; k < n; ++k) cs.push_back(col(rng));
    std::sort(cs.begin(), cs.end());
    cs.erase(std::unique(cs.begin(), cs.end()), cs.end());
    for (int c : cs) e[r].push_back({c, std::ldexp(static_cast<double>(rng() % 2001) - 1000.0, -7)});
  }
  return from_rows(30000, 30000, e);
}

std::vector<test::generated> all_matrices() {
  auto g = test::generator_set();
  for (auto& m : extra_matrices()) g.push_back(std::move(m));
  return g;
}

// Explicit tile sizes: every entry a tile (1 x 1), odd sizes, the thesis's CPU (4 x 16)
// and GPU-like sizes, one lane and one step, and descriptors of 1, 2 (32 x 32: 10 + 5 +
// 32 bits) and 3 words (64 x 64: 12 + 6 + 64 bits).
const std::vector<csr5_params> explicit_params = {{1, 1}, {3, 5}, {4, 16}, {32, 4}, {1, 64},
                                                  {64, 1}, {7, 9}, {32, 32}, {64, 64}};

template <class V>
void round_trip_all() {
  for (const auto& g : all_matrices()) {
    const auto a = test::cast_values<V>(g.a);
    auto check = [&](const csr5_params& p, csr5_target target) {
      SCOPED_TRACE(g.name + " omega " + std::to_string(p.omega) + " sigma " + std::to_string(p.sigma) +
                   (target == csr5_target::gpu ? " gpu" : " cpu"));
      const auto c = cpu::csr_to_csr5(a, p, target);
      EXPECT_NO_THROW(validate(c));
      EXPECT_EQ(c.nnz(), a.nnz());
      EXPECT_TRUE(equal(cpu::csr5_to_csr(c), a));
    };
    check({}, csr5_target::gpu);
    check({}, csr5_target::cpu);
    for (const auto& p : explicit_params) check(p, csr5_target::gpu);
  }
}

template <class V>
void spmv_all() {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (const auto& g : all_matrices()) {
    if (g.a.cols > (1 << 20)) continue;  // x would not fit a quick test
    const auto a = test::cast_values<V>(g.a);
    std::int64_t max_len = 0;
    for (std::int64_t r = 0; r < a.rows; ++r) max_len = std::max<std::int64_t>(max_len, a.row_ptr[r + 1] - a.row_ptr[r]);
    std::vector<V> x(a.cols), y0(a.rows);
    for (auto& v : x) v = static_cast<V>(unit(rng));
    for (auto& v : y0) v = static_cast<V>(unit(rng));
    std::vector<csr5_params> ps = explicit_params;
    ps.push_back(cpu::resolve_csr5_params(a, {}, csr5_target::gpu));
    ps.push_back(cpu::resolve_csr5_params(a, {}, csr5_target::cpu));
    for (const auto& p : ps) {
      const auto c = cpu::csr_to_csr5(a, p);
      for (auto [alpha, beta] : {std::pair<V, V>{1, 0}, std::pair<V, V>{-0.5, 2}}) {
        SCOPED_TRACE(g.name + " omega " + std::to_string(p.omega) + " sigma " + std::to_string(p.sigma) +
                     " alpha " + std::to_string(alpha) + " beta " + std::to_string(beta));
        std::vector<V> y = y0;
        if (beta == V(0)) std::fill(y.begin(), y.end(), std::numeric_limits<V>::quiet_NaN());  // must not be read
        cpu::spmv(c, alpha, x.data(), beta, y.data());
        EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data()),
                  cpu::spmv_tolerance<V>(max_len));
      }
    }
  }
}

// A valid CSR5 with every kind of array populated: the thesis example at omega = sigma = 4
// has a tile with an empty row (empty_offset entries), one without, and an incomplete tile.
csr5<double> good() { return cpu::csr_to_csr5(thesis_example(), {4, 4}); }

}  // namespace

// ---- round trips ----------------------------------------------------------------------

TEST(Csr5RoundTrip, GeneratedMatricesDouble) { round_trip_all<double>(); }
TEST(Csr5RoundTrip, GeneratedMatricesFloat) { round_trip_all<float>(); }

TEST(Csr5RoundTrip, KeepsStoredZerosNegativeZerosAndNaNBits) {
  auto a = test::random_csr(300, 200, 7.0, 3);
  ASSERT_GT(a.nnz(), 100);
  a.values[0] = 0.0;
  a.values[17] = -0.0;
  a.values[50] = std::numeric_limits<double>::infinity();
  std::uint64_t payload = 0x7ff8000000012345ull;
  std::memcpy(&a.values[77], &payload, sizeof payload);
  for (std::int64_t k = 90; k < a.nnz(); k += 11) a.values[k] = (k % 2) ? 0.0 : -0.0;
  for (const auto& p : explicit_params) {
    SCOPED_TRACE("omega " + std::to_string(p.omega) + " sigma " + std::to_string(p.sigma));
    const auto c = cpu::csr_to_csr5(a, p);
    validate(c);
    EXPECT_TRUE(equal(cpu::csr5_to_csr(c), a));
  }
}

TEST(Csr5RoundTrip, LargeMatrixAcrossThreadBlocks) {
  const auto a = large_matrix();
  ASSERT_GT(a.nnz(), 100000);
  for (const auto& p : {csr5_params{}, csr5_params{4, 16}, csr5_params{1, 1}, csr5_params{3, 5}, csr5_params{64, 64}}) {
    SCOPED_TRACE("omega " + std::to_string(p.omega) + " sigma " + std::to_string(p.sigma));
    const auto c = cpu::csr_to_csr5(a, p);
    EXPECT_NO_THROW(validate(c));
    EXPECT_TRUE(equal(cpu::csr5_to_csr(c), a));
  }
}

// ---- SpMV -------------------------------------------------------------------------------

TEST(Csr5Spmv, LargeMatrixAcrossThreadBlocks) {
  const auto a = large_matrix();
  std::int64_t max_len = 0;
  for (std::int64_t r = 0; r < a.rows; ++r) max_len = std::max<std::int64_t>(max_len, a.row_ptr[r + 1] - a.row_ptr[r]);
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<double> x(a.cols), y0(a.rows);
  for (auto& v : x) v = unit(rng);
  for (auto& v : y0) v = unit(rng);
  for (const auto& p : {csr5_params{}, csr5_params{4, 16}, csr5_params{1, 1}, csr5_params{64, 64}}) {
    const auto c = cpu::csr_to_csr5(a, p);
    for (auto [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{-0.5, 2.0}}) {
      SCOPED_TRACE("omega " + std::to_string(c.params.omega) + " sigma " + std::to_string(c.params.sigma) +
                   " beta " + std::to_string(beta));
      std::vector<double> y = y0;
      cpu::spmv(c, alpha, x.data(), beta, y.data());
      EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data()),
                cpu::spmv_tolerance<double>(max_len));
    }
  }
}

TEST(Csr5Spmv, MatchesCsrReferenceDouble) { spmv_all<double>(); }
TEST(Csr5Spmv, MatchesCsrReferenceFloat) { spmv_all<float>(); }

TEST(Csr5Spmv, ThesisExampleIsExact) {
  // Small integers: every summation order gives the exact result.
  const auto a = thesis_example();
  const auto c = good();
  std::vector<double> x = {1, -2, 3, -4, 5, -6, 7, -8}, y(8, 100.0), ref(8, 100.0);
  cpu::spmv(c, 2.0, x.data(), -1.0, y.data());
  cpu::spmv(a, 2.0, x.data(), -1.0, ref.data());
  EXPECT_EQ(y, ref);
}

// ---- the tile size rule -----------------------------------------------------------------

TEST(Csr5Params, GpuRuleFollowsNnzPerRow) {
  // sigma = 8 below 5 entries per row, 16 up to 16, then nnz/row up to 32, 32 up to 256, then 4.
  const std::pair<int, int> cases[] = {{0, 8},   {1, 8},   {4, 8},    {5, 16},   {16, 16}, {17, 17},
                                       {32, 32}, {33, 32}, {256, 32}, {257, 4}, {600, 4}};
  for (auto [per_row, sigma] : cases) {
    std::vector<std::vector<std::pair<int, double>>> e(10);
    for (auto& row : e)
      for (int c = 0; c < per_row; ++c) row.push_back({c, 1.0});
    const auto a = from_rows(10, 600, e);
    const auto p = cpu::resolve_csr5_params(a, {});
    EXPECT_EQ(p.omega, 32) << per_row;
    EXPECT_EQ(p.sigma, sigma) << per_row;
    const auto c = cpu::csr_to_csr5(a, {});  // stored files default to the GPU rule
    EXPECT_EQ(c.params.omega, 32);
    EXPECT_EQ(c.params.sigma, sigma);
  }
  // nnz / rows rounds down: 19 entries in 4 rows is 4 per row.
  std::vector<std::vector<std::pair<int, double>>> e = {{{0, 1.0}}, {{0, 1.0}, {1, 1.0}}, {}, {}};
  for (int c = 0; c < 16; ++c) e[3].push_back({c, 1.0});
  EXPECT_EQ(cpu::resolve_csr5_params(from_rows(4, 16, e), {}).sigma, 8);
  EXPECT_EQ(cpu::resolve_csr5_params(from_rows(0, 0, {}), {}).sigma, 8);
}

TEST(Csr5Params, CpuRuleIs256BitLanesBy16) {
  const auto a = test::random_csr(100, 100, 50.0, 4);
  const auto pd = cpu::resolve_csr5_params(a, {}, csr5_target::cpu);
  EXPECT_EQ(pd.omega, 4);
  EXPECT_EQ(pd.sigma, 16);
  const auto pf = cpu::resolve_csr5_params(test::cast_values<float>(a), {}, csr5_target::cpu);
  EXPECT_EQ(pf.omega, 8);
  EXPECT_EQ(pf.sigma, 16);
}

TEST(Csr5Params, KeepsGivenFieldsAndFillsOthers) {
  const auto a = test::random_csr(100, 100, 50.0, 4);  // 50 per row: GPU sigma 32
  auto p = cpu::resolve_csr5_params(a, {7, 0});
  EXPECT_EQ(p.omega, 7);
  EXPECT_EQ(p.sigma, 32);
  p = cpu::resolve_csr5_params(a, {0, 9}, csr5_target::cpu);
  EXPECT_EQ(p.omega, 4);
  EXPECT_EQ(p.sigma, 9);
  p = cpu::resolve_csr5_params(a, {64, 64});
  EXPECT_EQ(p.omega, 64);
  EXPECT_EQ(p.sigma, 64);
}

TEST(Csr5Params, RejectsOutOfRangeRequests) {
  const auto a = test::random_csr(10, 10, 2.0, 5);
  expect_error([&] { cpu::resolve_csr5_params(a, {-1, 0}); }, errc::usage, "omega = -1 is out of range [1, 64]");
  expect_error([&] { cpu::resolve_csr5_params(a, {65, 0}); }, errc::usage, "omega = 65");
  expect_error([&] { cpu::resolve_csr5_params(a, {0, -3}); }, errc::usage, "sigma = -3");
  expect_error([&] { cpu::csr_to_csr5(a, {4, 65}); }, errc::usage, "sigma = 65 is out of range [1, 64]");
}

// ---- refusals ---------------------------------------------------------------------------

TEST(Csr5Refuse, RowsBeyond31Bits) {
  // A lying shape (nothing that large is allocated): tile_ptr keeps 31 bits for a row.
  auto a = test::random_csr(10, 10, 2.0, 6);
  a.rows = std::int64_t{1} << 31;
  expect_error([&] { cpu::csr_to_csr5(a, {}); }, errc::unsupported, "exceeds 2^31 - 1 rows or columns");
}

TEST(Csr5Refuse, ColumnsBeyond32Bits) {
  auto a = test::random_csr(10, 10, 2.0, 6);
  a.cols = std::int64_t{1} << 32;
  expect_error([&] { cpu::csr_to_csr5(a, {}); }, errc::unsupported, "exceeds 2^31 - 1 rows or columns");
}

TEST(Csr5Refuse, InconsistentCsrInput) {
  auto a = test::random_csr(10, 10, 2.0, 6);
  a.row_ptr.pop_back();
  expect_error([&] { cpu::csr_to_csr5(a, {}); }, errc::bad_input, "lengths do not match");
}

// ---- validate(): one test per invariant ---------------------------------------------------

TEST(Csr5Validate, AcceptsConverterOutput) {
  EXPECT_NO_THROW(validate(good()));
  for (const auto& g : extra_matrices()) EXPECT_NO_THROW(validate(cpu::csr_to_csr5(g.a, {})));
}

TEST(Csr5Validate, Shape) {
  auto a = good();
  a.rows = -1;
  expect_error([&] { validate(a); }, errc::bad_input, "negative shape");
}

TEST(Csr5Validate, ParamsInRange) {
  auto a = good();
  a.params.omega = 0;
  expect_error([&] { validate(a); }, errc::bad_input, "params.omega = 0 is out of range");
  a = good();
  a.params.sigma = 65;
  expect_error([&] { validate(a); }, errc::bad_input, "params.sigma = 65 is out of range");
}

TEST(Csr5Validate, ValuesLength) {
  auto a = good();
  a.values.pop_back();
  expect_error([&] { validate(a); }, errc::bad_input, "values has 33 elements, expected 34");
}

TEST(Csr5Validate, RowPtrLength) {
  auto a = good();
  a.row_ptr.pop_back();
  expect_error([&] { validate(a); }, errc::bad_input, "row_ptr has");
}

TEST(Csr5Validate, RowPtrMonotone) {
  auto a = good();
  a.row_ptr[2] = 8;  // rows 1 and 2: 5, 8, 7
  expect_error([&] { validate(a); }, errc::bad_input, "row_ptr decreases at 3");
}

TEST(Csr5Validate, RowPtrEndsAtNnz) {
  auto a = good();
  a.row_ptr.back() = 33;
  expect_error([&] { validate(a); }, errc::bad_input, "row_ptr ends at 33, expected 34");
}

TEST(Csr5Validate, ColumnIndexRange) {
  auto a = good();
  a.col_idx[5] = 8;
  expect_error([&] { validate(a); }, errc::bad_input, "col_idx[5] = 8 is out of range");
}

TEST(Csr5Validate, ColumnsSortedWithinRows) {
  // CSR entries 0 and 1 (row 0, columns 0 and 2) are stored at 0 and 4 in tile 0.
  auto a = good();
  std::swap(a.col_idx[0], a.col_idx[4]);
  expect_error([&] { validate(a); }, errc::bad_input, "row 0 is not sorted or has a duplicate");
}

TEST(Csr5Validate, TilePtrLength) {
  auto a = good();
  a.tile_ptr.pop_back();
  expect_error([&] { validate(a); }, errc::bad_input, "tile_ptr has 3 elements, expected 4");
}

TEST(Csr5Validate, TilePtrRow) {
  auto a = good();
  a.tile_ptr[1] = 5;
  expect_error([&] { validate(a); }, errc::bad_input, "tile_ptr[1] = 0x5 (row 5, empty-rows bit 0), expected row 4");
}

TEST(Csr5Validate, TilePtrEmptyRowsBitMissing) {
  auto a = good();
  a.tile_ptr[0] = 0;  // tile 0 spans the empty row 2: the thesis's "-0"
  expect_error([&] { validate(a); }, errc::bad_input, "expected row 0, empty-rows bit 1");
}

TEST(Csr5Validate, TilePtrEmptyRowsBitSpurious) {
  auto a = good();
  a.tile_ptr[1] |= csr5_empty_rows_bit;
  expect_error([&] { validate(a); }, errc::bad_input, "expected row 4, empty-rows bit 0");
}

TEST(Csr5Validate, TilePtrEndIsRows) {
  auto a = good();
  a.tile_ptr[3] = 7;
  expect_error([&] { validate(a); }, errc::bad_input, "tile_ptr[3] = 0x7 (row 7, empty-rows bit 0), expected row 8");
}

TEST(Csr5Validate, TileDescLength) {
  auto a = good();
  a.tile_desc.push_back(0);
  expect_error([&] { validate(a); }, errc::bad_input, "tile_desc has 9 elements, expected 8");
}

TEST(Csr5Validate, BitFlag) {
  auto a = good();
  a.tile_desc[2] |= 1u << 6;  // tile 0 lane 2, entry 0: no row starts there
  expect_error([&] { validate(a); }, errc::bad_input, "tile 0 lane 2 bit_flag = 0x1, expected 0x0");
}

TEST(Csr5Validate, FirstEntryOfTileIsFlagged) {
  auto a = good();
  a.tile_desc[4] &= ~(1u << 6);  // tile 1 lane 0 entry 0: continues row 4 but seals the tile
  expect_error([&] { validate(a); }, errc::bad_input, "tile 1 lane 0 bit_flag = 0xa, expected 0xb");
}

TEST(Csr5Validate, YOffset) {
  auto a = good();
  a.tile_desc[7] = (a.tile_desc[7] & ~0xfu) | 5u;
  expect_error([&] { validate(a); }, errc::bad_input, "tile 1 lane 3 y_offset = 5, expected 4");
}

TEST(Csr5Validate, SegOffset) {
  auto a = good();
  a.tile_desc[1] &= ~(3u << 4);
  expect_error([&] { validate(a); }, errc::bad_input, "tile 0 lane 1 seg_offset = 0, expected 1");
}

TEST(Csr5Validate, UnusedDescriptorBitsZero) {
  auto a = good();
  a.tile_desc[3] |= 1u << 10;  // omega = sigma = 4 uses bits 0-9
  expect_error([&] { validate(a); }, errc::bad_input, "tile 0 lane 3 word 0 = 0x503 has unused bits set (0x400)");
  // Multi-word descriptors: omega = sigma = 64 uses 82 bits, so bits 18-31 of word 2 are free.
  auto b = cpu::csr_to_csr5(test::random_csr(100, 1000, 50.0, 8), {64, 64});
  ASSERT_GE(b.tile_desc.size(), 3u * 64);
  b.tile_desc[2 * 64 + 5] |= 1u << 20;
  expect_error([&] { validate(b); }, errc::bad_input, "lane 5 word 2");
}

TEST(Csr5Validate, TileDescOffsetPtrLength) {
  auto a = good();
  a.tile_desc_offset_ptr.push_back(4);
  expect_error([&] { validate(a); }, errc::bad_input, "tile_desc_offset_ptr has 4 elements, expected 3");
}

TEST(Csr5Validate, TileDescOffsetPtrPointers) {
  auto a = good();
  a.tile_desc_offset_ptr[2] = 5;
  expect_error([&] { validate(a); }, errc::bad_input, "tile_desc_offset_ptr ends at 5, expected 4");
}

TEST(Csr5Validate, EmptyOffsetOnlyForTilesWithEmptyRows) {
  auto a = good();
  a.tile_desc_offset.push_back(0);
  a.tile_desc_offset_ptr[2] = 5;  // tile 1 has no empty row
  expect_error([&] { validate(a); }, errc::bad_input, "tile 1 has 1 empty_offset entries, expected 0");
}

TEST(Csr5Validate, EmptyOffsetOnePerSegment) {
  auto a = good();
  a.tile_desc_offset.pop_back();
  a.tile_desc_offset_ptr[1] = 3;
  a.tile_desc_offset_ptr[2] = 3;
  expect_error([&] { validate(a); }, errc::bad_input, "tile 0 has 3 empty_offset entries, expected 4");
}

TEST(Csr5Validate, EmptyOffsetValues) {
  auto a = good();
  a.tile_desc_offset[2] = 2;  // segment 2 of tile 0 is row 3, not the empty row 2
  expect_error([&] { validate(a); }, errc::bad_input, "tile_desc_offset[2] = 2 (tile 0 segment 2), expected 3");
}

TEST(Csr5Validate, NeverReadsOutOfBoundsOnCorruptArrays) {
  // Random damage to every array (values, truncation, growth): validate either accepts or
  // reports bad input; it must not crash (run under the sanitizer build to see reads).
  const auto base = cpu::csr_to_csr5(extra_matrices()[0].a, {4, 8});
  std::mt19937_64 rng(99);
  int rejected = 0;
  for (int it = 0; it < 300; ++it) {
    auto a = base;
    const int which = static_cast<int>(rng() % 7), how = static_cast<int>(rng() % 3);
    int k = 0;
    csr5<double>::for_each_array(a, [&](std::string_view, auto& arr) {
      if (k++ != which) return;
      if (how == 0 && !arr.empty()) arr[rng() % arr.size()] += static_cast<std::decay_t<decltype(arr[0])>>(1 + rng() % 1000);
      else if (how == 1 && !arr.empty()) arr.resize(rng() % arr.size());
      else arr.resize(arr.size() + 1 + rng() % 5);
    });
    try {
      validate(a);
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::bad_input) << e.what();
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 250);
}

// ---- the worked example of specs/formats/csr5.md -----------------------------------------

TEST(Csr5Spec, ThesisExampleArrays) {
  const auto c = good();
  EXPECT_EQ(c.rows, 8);
  EXPECT_EQ(c.cols, 8);
  EXPECT_EQ(c.params.omega, 4);
  EXPECT_EQ(c.params.sigma, 4);
  EXPECT_EQ(to_vector(c.row_ptr), (std::vector<std::int32_t>{0, 5, 7, 7, 14, 17, 19, 26, 34}));
  EXPECT_EQ(to_vector(c.tile_ptr), (std::vector<std::uint32_t>{0x80000000u, 4, 7, 8}));
  EXPECT_EQ(to_vector(c.tile_desc), (std::vector<std::uint32_t>{64, 657, 3, 259, 720, 3, 275, 4}));
  EXPECT_EQ(to_vector(c.tile_desc_offset_ptr), (std::vector<std::uint32_t>{0, 4, 4}));
  EXPECT_EQ(to_vector(c.tile_desc_offset), (std::vector<std::uint32_t>{0, 1, 3, 4}));
  EXPECT_EQ(to_vector(c.col_idx), (std::vector<std::int32_t>{0, 7, 1, 6, 2, 1, 2, 7, 3, 3, 3, 1, 6, 0, 4, 3,  // tile 0
                                                             5, 2, 6, 2, 0, 3, 7, 3, 1, 4, 0, 4, 1, 5, 1, 5,  // tile 1
                                                             6, 7}));                                         // tail
  EXPECT_EQ(to_vector(c.values), (std::vector<double>{1, 5, 2, 6, 2, 1, 3, 7, 3, 2, 4, 1, 4, 1, 5, 2,  //
                                                      3, 2, 6, 3, 1, 3, 7, 4, 2, 4, 1, 5, 1, 5, 2, 6,  //
                                                      7, 8}));
}

TEST(Csr5Spec, ThesisExampleDescriptorFields) {
  // The same descriptors decoded: the figures quoted in the thesis's sec. 6.3.3-6.3.4.
  const auto c = good();
  const csr5_layout L(4, 4);
  EXPECT_EQ(L.y_offset_bits, 4);
  EXPECT_EQ(L.seg_offset_bits, 2);
  EXPECT_EQ(L.words, 1);
  auto field = [&](int tile, int lane, int pos, int width) {
    return csr5_get_bits(c.tile_desc.data() + tile * 4 + lane, 4, pos, width);
  };
  const std::uint64_t y[2][4] = {{0, 1, 3, 3}, {0, 3, 3, 4}}, seg[2][4] = {{0, 1, 0, 0}, {1, 0, 1, 0}};
  const std::uint64_t flag[2][4] = {{0x1, 0xa, 0x0, 0x4}, {0xb, 0x0, 0x4, 0x0}};
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(field(t, i, 0, 4), y[t][i]) << t << " " << i;
      EXPECT_EQ(field(t, i, 4, 2), seg[t][i]) << t << " " << i;
      EXPECT_EQ(field(t, i, 6, 4), flag[t][i]) << t << " " << i;
    }
}
