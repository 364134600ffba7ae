// CMRS: CSR <-> CMRS round trips, SpMV against the CSR reference, validate() invariants,
// refusals, the automatic parameters and the worked example of specs/formats/cmrs.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <utility>

#include "convert/cpu/cmrs.hpp"
#include "kernels/cpu/spmv_cmrs.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
using test::expect_error;

namespace {

cmrs_params P(int height, int modulo, bool sort_columns = false) {
  cmrs_params p;
  p.height = height;
  p.modulo = modulo;
  p.sort_columns = sort_columns;
  return p;
}

// Automatic, the edges of height, column order, and the sec. 6.7 layout with every modulo
// (including height * modulo == 32 exactly, and a height that divides nothing).
const std::vector<cmrs_params> param_sets = {P(0, 0),  P(1, 32), P(16, 32), P(3, 32, true), P(16, 0, true), P(0, 8),
                                             P(16, 2), P(2, 16), P(4, 8),   P(5, 8),        P(16, 4),       P(7, 16)};

std::string describe(const cmrs_params& p) {
  return "height " + std::to_string(p.height) + " modulo " + std::to_string(p.modulo) +
         (p.sort_columns ? " sorted" : "");
}

// The 6x6 matrix of the spec's worked example: row 2 is empty, (3, 2) is a stored zero.
csr<double, std::int32_t> example() {
  csr<double, std::int32_t> a;
  a.rows = a.cols = 6;
  a.row_ptr = {0, 2, 5, 5, 8, 10, 13};
  a.col_idx = {0, 2, 1, 3, 5, 0, 2, 4, 1, 5, 0, 1, 2};
  a.values = {1, 2, 3, 4, 5, 6, 0, 7, 8, 9, 10, 11, 12};
  return a;
}

template <class A>
std::vector<std::int64_t> ints(const A& arr) {
  return std::vector<std::int64_t>(arr.begin(), arr.end());
}
template <class A>
std::vector<double> reals(const A& arr) {
  return std::vector<double>(arr.begin(), arr.end());
}

std::int64_t max_row_len(const csr<double, std::int32_t>& a) {
  std::int64_t m = 0;
  for (std::int64_t r = 0; r < a.rows; ++r) m = std::max<std::int64_t>(m, a.row_ptr[r + 1] - a.row_ptr[r]);
  return m;
}

// Random canonical CSR whose values include +0.0 and -0.0 (like add32's stored zeros),
// which must survive next to the +0.0 padding of the sec. 6.7 layout.
csr<double, std::int32_t> with_zeros(std::int64_t rows, std::int64_t cols, double per_row, std::uint64_t seed) {
  auto a = test::random_csr(rows, cols, per_row, seed);
  for (std::size_t k = 0; k < a.values.size(); k += 3) a.values[k] = (k % 2) ? -0.0 : 0.0;
  return a;
}

template <class V>
void check_round_trip(const csr<double, std::int32_t>& a64, const cmrs_params& p) {
  const auto a = test::cast_values<V>(a64);
  const auto m = cpu::csr_to_cmrs(a, p);
  ASSERT_NO_THROW(validate(m));
  EXPECT_EQ(m.nnz(), a.nnz());
  EXPECT_TRUE(equal(cpu::cmrs_to_csr(m), a));
}

template <class V>
void check_spmv(const csr<double, std::int32_t>& a64, const cmrs_params& p, std::uint64_t seed) {
  const auto a = test::cast_values<V>(a64);
  const auto m = cpu::csr_to_cmrs(a, p);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<V> x(a.cols), y0(a.rows);
  for (auto& v : x) v = static_cast<V>(u(rng));
  for (auto& v : y0) v = static_cast<V>(u(rng));
  const double tol = cpu::spmv_tolerance<V>(max_row_len(a64));
  for (auto [alpha, beta] : {std::pair<V, V>{1, 0}, std::pair<V, V>{-0.5, 2}}) {
    // With beta == 0, y must not be read: start from NaN.
    std::vector<V> y = beta == V(0) ? std::vector<V>(a.rows, std::numeric_limits<V>::quiet_NaN()) : y0;
    cpu::spmv(m, alpha, x.data(), beta, y.data());
    EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data()), tol)
        << "alpha " << alpha << " beta " << beta;
  }
}

}  // namespace

// ---- round trips -----------------------------------------------------------------

TEST(CmrsRoundTrip, GeneratedMatricesEveryParameterSet) {
  for (const auto& g : test::generator_set())
    for (const auto& p : param_sets) {
      SCOPED_TRACE(g.name + ", " + describe(p));
      check_round_trip<float>(g.a, p);
      check_round_trip<double>(g.a, p);
    }
}

TEST(CmrsRoundTrip, StoredZerosAndNegativeZerosStayDistinctFromPadding) {
  const auto a = with_zeros(300, 200, 5.0, 21);
  for (const auto& p : param_sets) {
    SCOPED_TRACE(describe(p));
    check_round_trip<float>(a, p);
    check_round_trip<double>(a, p);
  }
}

TEST(CmrsRoundTrip, ReorderedLayoutIsValidAndAvoidsCollisions) {
  // validate() checks the chunk rule; here the layout really is the sec. 6.7 one.
  const auto a = test::random_csr(100, 100, 12.0, 3);
  const auto m = cpu::csr_to_cmrs(a, P(16, 8));
  validate(m);
  EXPECT_EQ(m.col_row.size() % 32, 0u);
  EXPECT_GT(m.col_row.size(), m.entry_slot.size());  // the last chunk of each strip is padded
}

// ---- layout sizes of the sec. 6.7 planner ------------------------------------------

TEST(CmrsReorder, ReachesTheChunkLowerBound) {
  // Seven rows of 9 entries, modulo 8: two chunks suffice (e.g. 5+5+5+4+4+4+4 then the
  // rest) although taking 8 from the longest rows first would leave three rows needing a
  // third chunk.
  csr<double, std::int32_t> a;
  a.rows = 16;
  a.cols = 9;
  a.row_ptr = {0};
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < (r < 7 ? 9 : 0); ++c) {
      a.col_idx.push_back(c);
      a.values.push_back(r + 0.5 * c);
    }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col_idx.size()));
  }
  auto m = cpu::csr_to_cmrs(a, P(16, 8));
  validate(m);
  EXPECT_EQ(ints(m.strip_ptr), (std::vector<std::int64_t>{0, 64}));
  EXPECT_TRUE(equal(cpu::cmrs_to_csr(m), a));

  // One dense row of 1000 entries: at most 8 per chunk, so 125 chunks, and the short rows
  // of its strip fit into those chunks' free lanes.
  csr<double, std::int32_t> d;
  d.rows = 4;
  d.cols = 1000;
  d.row_ptr = {0, 3, 1003, 1004, 1006};
  for (int c : {0, 1, 2}) d.col_idx.push_back(c);
  for (int c = 0; c < 1000; ++c) d.col_idx.push_back(c);
  for (int c : {7}) d.col_idx.push_back(c);
  for (int c : {8, 9}) d.col_idx.push_back(c);
  for (std::size_t k = 0; k < d.col_idx.size(); ++k) d.values.push_back(1.0 + k);
  m = cpu::csr_to_cmrs(d, P(4, 8));
  validate(m);
  EXPECT_EQ(ints(m.strip_ptr), (std::vector<std::int64_t>{0, 125 * 32}));
  EXPECT_TRUE(equal(cpu::cmrs_to_csr(m), d));
}

// ---- SpMV ------------------------------------------------------------------------

TEST(CmrsSpmv, MatchesCsrReferenceOnGeneratedMatrices) {
  std::uint64_t seed = 100;
  for (const auto& g : test::generator_set()) {
    if (g.a.cols > (1 << 20)) continue;  // x would take gigabytes (cols_near_2pow28)
    for (const auto& p : param_sets) {
      SCOPED_TRACE(g.name + ", " + describe(p));
      check_spmv<float>(g.a, p, ++seed);
      check_spmv<double>(g.a, p, ++seed);
    }
  }
}

TEST(CmrsSpmv, MatchesCsrReferenceWithZerosAndManyStrips) {
  const auto a = with_zeros(5000, 3000, 7.0, 22);  // several blocks of strips per thread
  for (const auto& p : {P(0, 0), P(16, 8), P(6, 32, true)}) {
    SCOPED_TRACE(describe(p));
    check_spmv<float>(a, p, 7);
    check_spmv<double>(a, p, 8);
  }
}

TEST(CmrsSpmv, WorkedExampleExactValues) {
  // Small integers: every order of summation is exact, so all layouts give these values.
  const auto a = example();
  const std::vector<double> x = {1, 2, 3, 4, 5, 6};
  const std::vector<double> want = {7, 52, 0, 41, 70, 68};
  for (const auto& p : {P(2, 32), P(2, 32, true), P(16, 2), P(4, 8)}) {
    std::vector<double> y(6, std::numeric_limits<double>::quiet_NaN());
    cpu::spmv(cpu::csr_to_cmrs(a, p), 1.0, x.data(), 0.0, y.data());
    EXPECT_EQ(y, want) << describe(p);
  }
}

// ---- parameters and refusals ---------------------------------------------------------

// Rows of 32 entries: long enough for the paper's heights.
csr<double, std::int32_t> rows_of_32() {
  csr<double, std::int32_t> a;
  a.rows = a.cols = 32;
  for (int r = 0; r < 32; ++r) {
    a.row_ptr.push_back(32 * r);
    for (int c = 0; c < 32; ++c) {
      a.col_idx.push_back(c);
      a.values.push_back(r + c + 1.0);
    }
  }
  a.row_ptr.push_back(32 * 32);
  return a;
}

TEST(CmrsParams, AutomaticHeightFollowsTheMeanRowLength) {
  EXPECT_EQ(cpu::cmrs_automatic_height(100, 100, 8), 16);   // mean 1
  EXPECT_EQ(cpu::cmrs_automatic_height(100, 399, 8), 16);   // mean 3.99
  EXPECT_EQ(cpu::cmrs_automatic_height(100, 400, 8), 8);    // mean 4
  EXPECT_EQ(cpu::cmrs_automatic_height(100, 3199, 8), 8);   // mean 31.99
  EXPECT_EQ(cpu::cmrs_automatic_height(100, 3200, 8), 4);   // mean 32: the paper's double height
  EXPECT_EQ(cpu::cmrs_automatic_height(100, 3200, 4), 6);   // the paper's float height
  EXPECT_EQ(cpu::cmrs_automatic_height(100, 1000, 4), 8);   // float, mean 10
  EXPECT_EQ(cpu::cmrs_automatic_height(100, 10, 8), 16);    // mostly empty rows
  EXPECT_EQ(cpu::cmrs_automatic_height(0, 0, 8), 4);        // empty matrices
  EXPECT_EQ(cpu::cmrs_automatic_height(100, 0, 4), 6);
  // 2^31 - 1 rows: the thresholds times rows stay within 64 bits.
  EXPECT_EQ(cpu::cmrs_automatic_height(2147483647, 2147483647, 8), 16);
  EXPECT_EQ(cpu::cmrs_automatic_height(2147483647, std::int64_t{40} * 2147483647, 8), 4);
}

TEST(CmrsParams, AutomaticChoicesFollowThePaper) {
  const auto a = rows_of_32();
  const auto f = test::cast_values<float>(a);
  auto p = cpu::resolve_cmrs_params(f, P(0, 0));
  EXPECT_EQ(p.height, 6);  // sec. 6.3, K20M float
  EXPECT_EQ(p.modulo, 32);
  EXPECT_FALSE(p.sort_columns);
  p = cpu::resolve_cmrs_params(a, P(0, 0));
  EXPECT_EQ(p.height, 4);  // sec. 6.3, K20M double
  // Short rows (13 entries in 6 rows, mean 2.2): 16 rows per strip.
  EXPECT_EQ(cpu::resolve_cmrs_params(example(), P(0, 0)).height, 16);
  EXPECT_EQ(cpu::resolve_cmrs_params(test::cast_values<float>(example()), P(0, 0)).height, 16);
  p = cpu::resolve_cmrs_params(a, P(0, 8));
  EXPECT_EQ(p.height, 16);  // sec. 6.7 / appendix 10: HEIGHT = 16
  EXPECT_EQ(p.modulo, 8);
  p = cpu::resolve_cmrs_params(a, P(9, 0, true));
  EXPECT_EQ(p.height, 9);
  EXPECT_EQ(p.modulo, 32);
  EXPECT_TRUE(p.sort_columns);
  // The stored parameters are the resolved ones.
  EXPECT_TRUE(params_equal(cpu::csr_to_cmrs(a, P(0, 0)).params, P(4, 32)));
  EXPECT_TRUE(params_equal(cpu::csr_to_cmrs(example(), P(0, 0)).params, P(16, 32)));
}

TEST(CmrsParams, BadRequestsAreUsageErrors) {
  const auto a = example();
  expect_error([&] { cpu::csr_to_cmrs(a, P(17, 0)); }, errc::usage, "height = 17");
  expect_error([&] { cpu::csr_to_cmrs(a, P(-1, 0)); }, errc::usage, "height = -1");
  expect_error([&] { cpu::csr_to_cmrs(a, P(4, 3)); }, errc::usage, "modulo = 3");
  expect_error([&] { cpu::csr_to_cmrs(a, P(4, 1)); }, errc::usage, "modulo = 1");
  expect_error([&] { cpu::csr_to_cmrs(a, P(4, 64)); }, errc::usage, "modulo = 64");
  expect_error([&] { cpu::csr_to_cmrs(a, P(2, 8)); }, errc::usage, "height * modulo = 2 * 8");
  expect_error([&] { cpu::csr_to_cmrs(a, P(16, 8, true)); }, errc::usage, "sort_columns");
}

TEST(CmrsRefuses, MoreThan2Pow28Columns) {
  csr<double, std::int32_t> a;
  a.rows = 2;
  a.cols = std::int64_t{1} << 28;
  a.row_ptr = {0, 0, 0};
  expect_error([&] { cpu::csr_to_cmrs(a, P(0, 0)); }, errc::unsupported, "28-bit column field");
  a.cols = (std::int64_t{1} << 28) - 1;  // the paper's limit: fewer than 2^28 columns
  EXPECT_NO_THROW(validate(cpu::csr_to_cmrs(a, P(0, 0))));
}

// ---- validate(): one test per invariant ------------------------------------------------

namespace {
cmrs<double> basic() { return cpu::csr_to_cmrs(example(), P(2, 32)); }
cmrs<double> reordered() { return cpu::csr_to_cmrs(example(), P(16, 2)); }
// Two strips in the sec. 6.7 layout, with free (row, lane % 4) pairs in each chunk.
cmrs<double> reordered_two_strips() { return cpu::csr_to_cmrs(test::random_csr(20, 9, 3.0, 5), P(10, 4)); }
}  // namespace

TEST(CmrsValidate, AcceptsConverterOutput) {
  EXPECT_NO_THROW(validate(basic()));
  EXPECT_NO_THROW(validate(reordered()));
  EXPECT_NO_THROW(validate(reordered_two_strips()));
}

TEST(CmrsValidate, NegativeShape) {
  auto m = basic();
  m.rows = -1;
  expect_error([&] { validate(m); }, errc::bad_input, "negative shape");
}

TEST(CmrsValidate, ColumnsBeyond28Bits) {
  auto m = basic();
  m.cols = std::int64_t{1} << 28;
  expect_error([&] { validate(m); }, errc::bad_input, "28-bit column field");
}

TEST(CmrsValidate, HeightOutOfRange) {
  auto m = basic();
  m.params.height = 0;
  expect_error([&] { validate(m); }, errc::bad_input, "height = 0");
  m.params.height = 17;
  expect_error([&] { validate(m); }, errc::bad_input, "height = 17");
}

TEST(CmrsValidate, ModuloNotAllowed) {
  auto m = basic();
  m.params.modulo = 12;
  expect_error([&] { validate(m); }, errc::bad_input, "modulo = 12");
}

TEST(CmrsValidate, HeightTimesModuloBelow32) {
  auto m = basic();
  m.params.modulo = 8;
  expect_error([&] { validate(m); }, errc::bad_input, "height * modulo = 16");
}

TEST(CmrsValidate, SortColumnsWithReorderedLayout) {
  auto m = reordered();
  m.params.sort_columns = true;
  expect_error([&] { validate(m); }, errc::bad_input, "sort_columns is set");
}

TEST(CmrsValidate, StripPtrLength) {
  auto m = basic();
  m.strip_ptr.pop_back();
  expect_error([&] { validate(m); }, errc::bad_input, "strip_ptr has 3 elements, expected 4");
}

TEST(CmrsValidate, StripPtrStart) {
  auto m = basic();
  m.strip_ptr[0] = 1;
  expect_error([&] { validate(m); }, errc::bad_input, "strip_ptr[0] = 1");
}

TEST(CmrsValidate, StripPtrDecreases) {
  auto m = basic();
  m.strip_ptr[1] = 9;  // 0, 9, 8, 13
  expect_error([&] { validate(m); }, errc::bad_input, "strip_ptr decreases at 2");
}

TEST(CmrsValidate, StripPtrEnd) {
  auto m = basic();
  m.strip_ptr[3] = 12;
  expect_error([&] { validate(m); }, errc::bad_input, "strip_ptr ends at 12, expected 13");
}

TEST(CmrsValidate, ValuesLength) {
  auto m = basic();
  m.values.pop_back();
  expect_error([&] { validate(m); }, errc::bad_input, "values has 12 elements, expected 13");
}

TEST(CmrsValidate, ColumnOutOfRange) {
  auto m = basic();
  m.col_row[4] = cmrs_pack(6, 1);
  expect_error([&] { validate(m); }, errc::bad_input, "col_row[4] has column 6, out of range [0, 6)");
}

TEST(CmrsValidate, RowInStripNotBelowHeight) {
  auto m = basic();
  m.col_row[4] = cmrs_pack(5, 2);
  expect_error([&] { validate(m); }, errc::bad_input, "col_row[4] has row in strip 2, not below height 2");
}

TEST(CmrsValidate, EntryRowBeyondMatrix) {
  // 5 rows, height 2: the last strip has one row; an entry in its second row is invalid.
  auto a = example();
  a.rows = 5;
  a.row_ptr.pop_back();
  a.col_idx.resize(10);
  a.values.resize(10);
  auto m = cpu::csr_to_cmrs(a, P(2, 32));
  m.col_row[9] = cmrs_pack(5, 1);
  expect_error([&] { validate(m); }, errc::bad_input, "is an entry of row 5 of strip 2, but the matrix has 5 rows");
}

TEST(CmrsValidate, RowColumnOrderInStrip) {
  auto m = basic();
  std::swap(m.col_row[2], m.col_row[3]);  // row 1: columns 3, 1
  expect_error([&] { validate(m); }, errc::bad_input, "strip 0 is not in (row, column) order");
  m = basic();
  std::swap(m.col_row[1], m.col_row[2]);  // row 1 before row 0
  expect_error([&] { validate(m); }, errc::bad_input, "strip 0 is not in (row, column) order");
}

TEST(CmrsValidate, ColumnRowOrderInSortedStrip) {
  auto m = cpu::csr_to_cmrs(example(), P(2, 32, true));
  validate(m);
  std::swap(m.col_row[1], m.col_row[2]);
  expect_error([&] { validate(m); }, errc::bad_input, "strip 0 is not in (column, row) order");
}

TEST(CmrsValidate, PositionStoredTwice) {
  auto m = basic();
  m.col_row[1] = m.col_row[0];
  expect_error([&] { validate(m); }, errc::bad_input, "stores a position twice");
}

TEST(CmrsValidate, EntrySlotInBasicLayout) {
  auto m = basic();
  m.entry_slot = {0};
  expect_error([&] { validate(m); }, errc::bad_input, "entry_slot has 1 elements, expected 0");
}

TEST(CmrsValidate, StripNotWholeChunks) {
  auto m = reordered();
  m.col_row.pop_back();
  m.values.pop_back();
  m.strip_ptr.back() -= 1;
  expect_error([&] { validate(m); }, errc::bad_input, "strip 0 holds 63 slots, not a multiple of 32");
}

TEST(CmrsValidate, LaneCollisionInChunk) {
  auto m = reordered();
  // Slot 0 is (row 0, lane 0); slot 2 (lane 2, also lane % 2 == 0) is moved to row 0.
  ASSERT_EQ(cmrs_row(m.col_row[0]), 0);
  m.col_row[2] = cmrs_pack(cmrs_col(m.col_row[2]), 0);
  expect_error([&] { validate(m); }, errc::bad_input, "col_row[2] (lane 2, row in strip 0) collides");
}

TEST(CmrsValidate, EntrySlotOutOfRange) {
  auto m = reordered();
  m.entry_slot[0] = 64;
  expect_error([&] { validate(m); }, errc::bad_input, "entry_slot[0] = 64 is out of range [0, 64)");
}

TEST(CmrsValidate, EntrySlotNamesASlotTwice) {
  auto m = reordered();
  m.entry_slot[1] = m.entry_slot[0];
  expect_error([&] { validate(m); }, errc::bad_input, "entry_slot[1] = 0 names a slot twice");
}

TEST(CmrsValidate, EntrySlotLeavesStripOrder) {
  auto m = reordered_two_strips();
  validate(m);
  // The last entry of strip 0 and the first of strip 1 trade slots.
  std::size_t k = 0;
  while (m.entry_slot[k + 1] < m.strip_ptr[1]) ++k;
  std::swap(m.entry_slot[k], m.entry_slot[k + 1]);
  expect_error([&] { validate(m); }, errc::bad_input, "goes back to an earlier strip");
}

TEST(CmrsValidate, EntrySlotOrderWithinStrip) {
  auto m = reordered();
  std::swap(m.entry_slot[0], m.entry_slot[1]);  // row 0: column 2 before column 0
  expect_error([&] { validate(m); }, errc::bad_input,
               "entry_slot[0] and entry_slot[1] are not in (row, column) order within strip 0");
}

TEST(CmrsValidate, EntryOfReorderedLayoutBeyondMatrix) {
  // 15 rows, height 10: strip 1 holds rows 10-14 as rows in strip 0-4; rows in strip 5-9
  // lie past the matrix end (padding may use them, entries may not).
  auto m = cpu::csr_to_cmrs(test::random_csr(15, 9, 3.0, 5), P(10, 4));
  const std::int64_t s = m.entry_slot.back(), lane = (s - m.strip_ptr[1]) % 32, chunk = s - lane;
  ASSERT_GE(s, m.strip_ptr[1]);
  // Move that entry to a row past the end whose (row, lane % 4) is free in its chunk, so
  // that only the row check can object.
  int free_row = -1;
  for (int r = 5; r < 10 && free_row < 0; ++r) {
    bool used = false;
    for (std::int64_t t = chunk; t < chunk + 32; ++t)
      used = used || (cmrs_row(m.col_row[t]) == r && (t - chunk) % 4 == lane % 4);
    if (!used) free_row = r;
  }
  ASSERT_GE(free_row, 5);
  m.col_row[s] = cmrs_pack(cmrs_col(m.col_row[s]), free_row);
  expect_error([&] { validate(m); }, errc::bad_input, "but the matrix has 15 rows");
}

TEST(CmrsValidate, PaddingHoldsPositiveZero) {
  auto m = reordered();
  ASSERT_EQ(m.values[63], 0.0);  // slot 63 is padding (entries use slots 0-9, 32-34)
  m.values[63] = 1.5;
  expect_error([&] { validate(m); }, errc::bad_input, "padding slot 63");
  m.values[63] = -0.0;
  expect_error([&] { validate(m); }, errc::bad_input, "padding slot 63");
}

// ---- the worked example of specs/formats/cmrs.md ------------------------------------------

TEST(CmrsSpecExample, BasicLayoutHeight2) {
  const auto m = cpu::csr_to_cmrs(example(), P(2, 32));
  EXPECT_EQ(ints(m.strip_ptr), (std::vector<std::int64_t>{0, 5, 8, 13}));
  EXPECT_EQ(ints(m.col_row), (std::vector<std::int64_t>{0, 32, 17, 49, 81, 1, 33, 65, 16, 80, 1, 17, 33}));
  EXPECT_EQ(reals(m.values), (std::vector<double>{1, 2, 3, 4, 5, 6, 0, 7, 8, 9, 10, 11, 12}));
  EXPECT_TRUE(m.entry_slot.empty());
}

TEST(CmrsSpecExample, ColumnSortedHeight2) {
  const auto m = cpu::csr_to_cmrs(example(), P(2, 32, true));
  EXPECT_EQ(ints(m.strip_ptr), (std::vector<std::int64_t>{0, 5, 8, 13}));
  EXPECT_EQ(ints(m.col_row), (std::vector<std::int64_t>{0, 17, 32, 49, 81, 1, 33, 65, 1, 16, 17, 33, 80}));
  EXPECT_EQ(reals(m.values), (std::vector<double>{1, 3, 2, 4, 5, 6, 0, 7, 10, 8, 11, 12, 9}));
  EXPECT_TRUE(m.entry_slot.empty());
}

TEST(CmrsSpecExample, ReorderedHeight16Modulo2) {
  const auto m = cpu::csr_to_cmrs(example(), P(16, 2));
  EXPECT_EQ(ints(m.strip_ptr), (std::vector<std::int64_t>{0, 64}));
  std::vector<std::int64_t> words = {0,  32, 17, 49, 3,  35, 20, 84, 5,  21,              // chunk 0: entries
                                     18, 18, 22, 22, 23, 23, 24, 24, 25, 25, 26,          // padding, column 1
                                     26, 27, 27, 28, 28, 29, 29, 30, 30, 31, 31,          //
                                     81, 67, 37,                                          // chunk 1: entries
                                     32, 32, 33, 34, 34, 35, 36, 36, 37, 38, 38, 39, 39,  // padding, column 2
                                     40, 40, 41, 41, 42, 42, 43, 43, 44, 44, 45, 45, 46, 46, 47, 47};
  EXPECT_EQ(ints(m.col_row), words);
  std::vector<double> values(64, 0.0);
  const std::vector<double> head = {1, 2, 3, 4, 6, 0, 8, 9, 10, 11};
  std::copy(head.begin(), head.end(), values.begin());
  values[32] = 5;
  values[33] = 7;
  values[34] = 12;
  EXPECT_EQ(reals(m.values), values);
  EXPECT_EQ(ints(m.entry_slot), (std::vector<std::int64_t>{0, 1, 2, 3, 32, 4, 5, 33, 6, 7, 8, 9, 34}));
}

TEST(CmrsValidate, SurvivesRandomCorruption) {
  // validate() guards loading untrusted files: on any corruption it either throws
  // bad_input or accepts a matrix that converts to a valid CSR and multiplies safely
  // (run under SPCONV_SANITIZE to catch out-of-bounds reads).
  const std::vector<cmrs<double>> good = {basic(), reordered(), reordered_two_strips(),
                                          cpu::csr_to_cmrs(example(), P(2, 32, true))};
  std::mt19937_64 rng(77);
  auto pick = [&](std::int64_t n) { return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n)); };
  int accepted = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    auto m = good[iter % good.size()];
    for (int edits = 1 + static_cast<int>(pick(2)); edits > 0; --edits) {
      auto poke = [&](auto& arr, auto value) {
        if (pick(10) == 0) {
          if (arr.empty() || pick(2))
            arr.push_back(value);
          else
            arr.pop_back();
        } else if (!arr.empty()) {
          arr[pick(static_cast<std::int64_t>(arr.size()))] = value;
        }
      };
      const std::int64_t small = pick(80) - 2;
      switch (pick(9)) {
        case 0:
          poke(m.strip_ptr, static_cast<std::int32_t>(small));
          break;
        case 1:
          poke(m.col_row, static_cast<std::uint32_t>(rng()));
          break;
        case 2:
          poke(m.col_row, cmrs_pack(pick(8), pick(16)));
          break;
        case 3:
          poke(m.values, pick(3) == 0 ? -0.0 : static_cast<double>(small));
          break;
        case 4:
          poke(m.entry_slot, static_cast<std::int32_t>(small));
          break;
        case 5:
          m.params.height = static_cast<std::int32_t>(pick(19)) - 1;
          break;
        case 6:
          m.params.modulo = std::vector<std::int32_t>{0, 1, 2, 3, 4, 8, 16, 32, 64}[pick(9)];
          break;
        case 7:
          m.params.sort_columns = !m.params.sort_columns;
          break;
        default:
          (pick(2) ? m.rows : m.cols) = small;
          break;
      }
    }
    try {
      validate(m);
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::bad_input) << e.what();
      continue;
    }
    ++accepted;
    const auto c = cpu::cmrs_to_csr(m);
    ASSERT_NO_THROW(validate(c));
    EXPECT_EQ(c.nnz(), m.nnz());
    std::vector<double> x(m.cols, 1.0), y(m.rows, 0.0);
    cpu::spmv(m, 1.0, x.data(), 0.0, y.data());
  }
  EXPECT_GT(accepted, 0);  // some edits are harmless (e.g. a value), so both paths ran
}
