// CCOO (balanced and compressed COO): exact CSR round trips, SpMV against the CSR
// reference, the automatic parameters, refusals, validate() (one test per invariant)
// and the worked example of specs/formats/ccoo.md.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "convert/cpu/ccoo.hpp"
#include "kernels/cpu/spmv_ccoo.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
using test::expect_error;

namespace {

using row_list = std::vector<std::vector<std::pair<int, double>>>;

csr<double, std::int32_t> from_rows(std::int64_t cols, const row_list& rows) {
  csr<double, std::int32_t> a;
  a.rows = static_cast<std::int64_t>(rows.size());
  a.cols = cols;
  a.row_ptr.push_back(0);
  for (const auto& row : rows) {
    for (auto [c, v] : row) {
      a.col_idx.push_back(c);
      a.values.push_back(v);
    }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col_idx.size()));
  }
  return a;
}

// The 6 x 6 example of specs/formats/ccoo.md: an empty row (2), a stored zero alone in its
// row (4), a row longer than one group (0).
csr<double, std::int32_t> example_csr() {
  return from_rows(
      6, {{{0, 1.0}, {1, 2.0}, {4, 3.0}}, {{1, 4.0}}, {}, {{2, 1.0}, {3, 5.0}}, {{3, 0.0}}, {{0, 2.0}, {5, 1.0}}});
}
ccoo<double> example() { return cpu::csr_to_ccoo(example_csr(), {2, 2}); }

// Parameters of the round trip and SpMV tests: automatic, the paper's 256 x 4, and small
// or odd chunks so that rows span many chunks and the last chunk is partial.
const std::vector<ccoo_params> param_sets = {{0, 0}, {256, 4}, {256, 1}, {1, 1}, {2, 3}, {5, 8}, {3, 2}};

template <class V>
void round_trip_generated() {
  for (const auto& g : test::generator_set()) {
    const auto a = test::cast_values<V>(g.a);
    for (const auto& p : param_sets) {
      SCOPED_TRACE(g.name + " chunk " + std::to_string(p.chunk_b) + "x" + std::to_string(p.chunk_k));
      const auto m = cpu::csr_to_ccoo(a, p);
      ASSERT_NO_THROW(validate(m));
      EXPECT_GE(m.params.chunk_b, 1);
      EXPECT_GE(m.params.chunk_k, 1);
      EXPECT_EQ(m.nnz(), a.nnz());
      EXPECT_TRUE(equal(cpu::ccoo_to_csr(m), a));
    }
  }
}

template <class V>
void spmv_generated() {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (const auto& g : test::generator_set()) {
    // x would need 2^28 entries; 32-bit offsets are multiplied in ColumnOffsetWidths.
    if (g.a.cols > (std::int64_t{1} << 22)) continue;
    const auto a = test::cast_values<V>(g.a);
    std::int64_t max_row = 0;
    for (std::int64_t r = 0; r < a.rows; ++r)
      max_row = std::max<std::int64_t>(max_row, a.row_ptr[r + 1] - a.row_ptr[r]);
    std::vector<V> x(static_cast<std::size_t>(a.cols)), y0(static_cast<std::size_t>(a.rows));
    for (auto& v : x) v = static_cast<V>(dist(rng));
    for (auto& v : y0) v = static_cast<V>(dist(rng));
    for (const auto& p : param_sets) {
      const auto m = cpu::csr_to_ccoo(a, p);
      for (auto [alpha, beta] : {std::pair<V, V>{1, 0}, std::pair<V, V>{-0.5, 2}}) {
        SCOPED_TRACE(g.name + " chunk " + std::to_string(p.chunk_b) + "x" + std::to_string(p.chunk_k) + " alpha " +
                     std::to_string(alpha) + " beta " + std::to_string(beta));
        // beta == 0 must not read y: start from NaN there.
        std::vector<V> y = beta == V(0) ? std::vector<V>(y0.size(), std::numeric_limits<V>::quiet_NaN()) : y0;
        cpu::spmv(m, alpha, x.data(), beta, y.data());
        EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data()),
                  cpu::spmv_tolerance<V>(max_row));
      }
    }
  }
}

std::uint8_t code(const ccoo<double>& m, std::size_t c) { return m.chunk_format[c]; }

}  // namespace

// ---- round trips ---------------------------------------------------------------------

TEST(CcooRoundTrip, GeneratedMatricesFloat) { round_trip_generated<float>(); }
TEST(CcooRoundTrip, GeneratedMatricesDouble) { round_trip_generated<double>(); }

TEST(CcooRoundTrip, StoredZerosSignedZerosNaNsAndInfinities) {
  const double nan_payload = std::bit_cast<double>(std::uint64_t{0x7ff8000000000123});
  const double inf = std::numeric_limits<double>::infinity();
  auto a = from_rows(5, {{{3, 0.0}},
                         {},
                         {{0, -0.0}, {4, nan_payload}},
                         {{1, inf}, {2, -inf}, {3, 0.0}},
                         {{2, std::numeric_limits<double>::denorm_min()}}});
  for (const auto& p : param_sets) {
    SCOPED_TRACE(std::to_string(p.chunk_b) + "x" + std::to_string(p.chunk_k));
    auto m = cpu::csr_to_ccoo(a, p);
    validate(m);
    EXPECT_TRUE(equal(cpu::ccoo_to_csr(m), a));
    auto f = test::cast_values<float>(a);
    auto mf = cpu::csr_to_ccoo(f, p);
    validate(mf);
    EXPECT_TRUE(equal(cpu::ccoo_to_csr(mf), f));
  }
}

TEST(CcooRoundTrip, MixesTableAndDirectChunks) {
  // Rows 0-19 use three values (table chunks), rows 20-39 unique ones (more than 256
  // distinct values overall, so those chunks store values directly).
  row_list rows(40);
  for (int r = 0; r < 40; ++r)
    for (int c = 0; c < 40; c += 3) rows[r].push_back({c, r < 20 ? 1.0 + (r + c) % 3 : 1.0 + r * 1000 + c});
  auto a = from_rows(40, rows);
  auto m = cpu::csr_to_ccoo(a, {4, 4});
  validate(m);
  EXPECT_TRUE(equal(cpu::ccoo_to_csr(m), a));
  EXPECT_TRUE(code(m, 0) & ccoo_code::lut);
  EXPECT_FALSE(code(m, m.chunk_format.size() - 1) & ccoo_code::lut);
  EXPECT_EQ(m.table.size(), ccoo_table_capacity);
}

// Chunks of 1024 value fields (rows of 4 entries, chunk 256 x 4): chunk c cycles through 257
// patterns 1000 (c + 1) + 0, 1, ...; chunk 0 through `first` patterns 1, 2, ... (the smallest,
// 4 of each). A table covers a chunk only if the chunk holds at most 256 patterns: with 257
// in every chunk no table is stored (and none is counted, ccoo_chunk_patterns); with 256 in
// chunk 0, as frequent as any and the smallest, the table is those 256 and chunk 0 uses it.
TEST(CcooRoundTrip, ChunksOf256And257DistinctValues) {
  for (const int first : {257, 256}) {
    SCOPED_TRACE(first);
    row_list rows(4 * 256);
    for (int e = 0; e < 4 * 1024; ++e) {
      const int c = e / 1024, i = e % 1024;
      rows[e / 4].push_back({e % 4, c == 0 ? 1.0 + i % first : 1000.0 * (c + 1) + i % 257});
    }
    const auto a = from_rows(4, rows);
    const auto m = cpu::csr_to_ccoo(a, {256, 4});
    validate(m);
    EXPECT_TRUE(equal(cpu::ccoo_to_csr(m), a));
    EXPECT_EQ(m.table.size(), first == 256 ? ccoo_table_capacity : 0u);
    EXPECT_EQ((code(m, 0) & ccoo_code::lut) != 0, first == 256);
    for (std::size_t c = 1; c < m.chunk_format.size(); ++c) EXPECT_FALSE(code(m, c) & ccoo_code::lut) << c;
  }
}

// The last chunk, 64 rows (256 value fields) after 4 chunks of 257 patterns each, could be
// covered whatever its values: its values 1..256, the most frequent with chunk 0's, are the
// table, and only it uses the table.
TEST(CcooRoundTrip, SmallLastChunkUsesTheTable) {
  row_list rows(4 * 256 + 64);
  for (int e = 0; e < 4 * 1024; ++e)
    rows[e / 4].push_back({e % 4, e < 1024 ? 1.0 + e % 257 : 1000.0 * (e / 1024 + 1) + e % 257});
  for (int e = 0; e < 256; ++e) rows[1024 + e / 4].push_back({e % 4, 1.0 + e});
  const auto a = from_rows(4, rows);
  const auto m = cpu::csr_to_ccoo(a, {256, 4});
  validate(m);
  EXPECT_TRUE(equal(cpu::ccoo_to_csr(m), a));
  ASSERT_EQ(m.chunk_format.size(), 5u);
  EXPECT_EQ(m.table.size(), ccoo_table_capacity);
  for (std::size_t c = 0; c < 5; ++c) EXPECT_EQ((code(m, c) & ccoo_code::lut) != 0, c == 4) << c;
}

TEST(CcooRoundTrip, ColumnOffsetWidths) {
  // One chunk per row: offsets up to 200 (8 bits), 60000 (16 bits), 199999 (32 bits).
  auto a = from_rows(200000, {{{7, 1.0}, {207, 2.0}}, {{0, 3.0}, {60000, 4.0}}, {{0, 5.0}, {199999, 6.0}}});
  auto m = cpu::csr_to_ccoo(a, {1, 2});
  validate(m);
  EXPECT_TRUE(equal(cpu::ccoo_to_csr(m), a));
  ASSERT_EQ(m.chunk_format.size(), 3u);
  EXPECT_EQ(ccoo_code::width_code(code(m, 0)), 0);
  EXPECT_EQ(ccoo_code::width_code(code(m, 1)), 1);
  EXPECT_EQ(ccoo_code::width_code(code(m, 2)), 2);
  EXPECT_EQ(m.chunk_col[0], 7);
  std::vector<double> x(200000), y(3, 1.0), y0 = y;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 13);
  cpu::spmv(m, 2.0, x.data(), -1.0, y.data());
  EXPECT_LE(cpu::spmv_max_rel_error(a, 2.0, x.data(), -1.0, y0.data(), y.data()), cpu::spmv_tolerance<double>(2));
}

TEST(CcooRoundTrip, ChunkOfEmptyRowsReachesRowOffset255) {
  // 300 empty rows, one padding group each: the first chunk of 256 groups spans rows
  // 0..255, the largest offset one byte holds.
  auto a = from_rows(3, row_list(300));
  auto m = cpu::csr_to_ccoo(a, {256, 1});
  validate(m);
  EXPECT_TRUE(equal(cpu::ccoo_to_csr(m), a));
  ASSERT_EQ(m.chunk_format.size(), 2u);
  EXPECT_EQ(m.blob[m.chunk_ptr[0] + 255], 255);
  EXPECT_EQ(m.chunk_row[1], 256);
  EXPECT_EQ(m.counts[0], 300);
  EXPECT_EQ(m.counts[1], 0);
  EXPECT_EQ(m.table.size(), 1u);  // only +0.0, the padding value
}

TEST(CcooRoundTrip, ValidOutputIsReproducedFromItsCsr) {
  // validate() checks the canonical choices, so decoding and re-encoding is the identity.
  for (const auto& g : test::generator_set()) {
    SCOPED_TRACE(g.name);
    auto m = cpu::csr_to_ccoo(g.a, {3, 2});
    EXPECT_TRUE(equal(cpu::csr_to_ccoo(cpu::ccoo_to_csr(m), m.params), m));
  }
}

// ---- SpMV ------------------------------------------------------------------------------

TEST(CcooSpmv, MatchesCsrReferenceFloat) { spmv_generated<float>(); }
TEST(CcooSpmv, MatchesCsrReferenceDouble) { spmv_generated<double>(); }

TEST(CcooSpmv, PaddingDoesNotTouchInfinitiesInX) {
  // Row 1 is empty: its padding entry has column 0 (the baseline), where x is Inf.
  // A multiplied pad would give 0 * Inf = NaN; the CSR product gives 0.
  auto a = from_rows(2, {{{0, 1.0}}, {}});
  auto m = cpu::csr_to_ccoo(a, {256, 1});
  ASSERT_EQ(m.chunk_format.size(), 1u);
  EXPECT_TRUE(code(m, 0) & ccoo_code::pads);
  std::vector<double> x = {std::numeric_limits<double>::infinity(), 1.0}, y(2, 5.0);
  cpu::spmv(m, 1.0, x.data(), 0.0, y.data());
  EXPECT_EQ(y[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(y[1], 0.0);
}

TEST(CcooSpmv, RowAcrossManyChunksSumsInChunkOrder) {
  // One row of 1000 entries in chunks of 2 x 2, between short rows: the boundary sums
  // must add up exactly as a left-to-right sum of group sums does.
  row_list rows(3);
  rows[0] = {{5, 3.0}};
  for (int c = 0; c < 1000; ++c) rows[1].push_back({c, 1.0 / (1 + c % 7)});
  rows[2] = {{999, -2.0}};
  auto a = from_rows(1000, rows);
  auto m = cpu::csr_to_ccoo(a, {2, 2});
  std::vector<double> x(1000, 1.0), y(3, 0.0);
  cpu::spmv(m, 1.0, x.data(), 0.0, y.data());
  // Row 1's group g >= 1 sums entries 2(g-1) and 2(g-1)+1 (starting from 0). Chunk 0 ends
  // with group 1; chunks 1..249 hold groups 2j, 2j+1 of row 1 (their sum is the chunk's);
  // chunk 250 starts with group 500. The chunk sums are added in chunk order.
  auto v = [](int i) { return 1.0 / (1 + i % 7); };
  auto s = [&](int g) { return (0.0 + v(2 * (g - 1))) + v(2 * (g - 1) + 1); };
  double want = s(1);
  for (int j = 1; j < 250; ++j) want += s(2 * j) + s(2 * j + 1);
  want += s(500);
  EXPECT_EQ(y[0], 3.0);
  EXPECT_EQ(y[1], want);
  EXPECT_EQ(y[2], -2.0);
}

// ---- parameters and refusals ------------------------------------------------------------

TEST(CcooParams, AutomaticRule) {
  // Example: padded entries 10 (K=1), 14 (K=2), 24 (K=4): both exceed 5/4 of 10, so K = 1.
  auto p = cpu::resolve_ccoo_params(example_csr(), {});
  EXPECT_EQ(p.chunk_b, 256);
  EXPECT_EQ(p.chunk_k, 1);
  // Rows of 8 entries: no padding at K = 4.
  row_list eight(10);
  for (auto& r : eight)
    for (int c = 0; c < 8; ++c) r.push_back({c, 1.0});
  EXPECT_EQ(cpu::resolve_ccoo_params(from_rows(8, eight), {}).chunk_k, 4);
  // Rows of 2 entries: K = 4 doubles the entries, K = 2 adds none.
  row_list two(10);
  for (auto& r : two) r = {{0, 1.0}, {1, 1.0}};
  EXPECT_EQ(cpu::resolve_ccoo_params(from_rows(2, two), {}).chunk_k, 2);
  // Explicit values are kept.
  p = cpu::resolve_ccoo_params(example_csr(), {7, 3});
  EXPECT_EQ(p.chunk_b, 7);
  EXPECT_EQ(p.chunk_k, 3);
  EXPECT_EQ(cpu::csr_to_ccoo(example_csr(), {0, 0}).params.chunk_k, 1);
}

TEST(CcooParams, RejectsOutOfRange) {
  auto a = example_csr();
  expect_error([&] { cpu::csr_to_ccoo(a, {257, 4}); }, errc::usage, "chunk_b = 257 is out of range [1, 256]");
  expect_error([&] { cpu::csr_to_ccoo(a, {-1, 4}); }, errc::usage, "chunk_b = -1");
  expect_error([&] { cpu::csr_to_ccoo(a, {256, 1025}); }, errc::usage, "chunk_k = 1025 is out of range [1, 1024]");
  expect_error([&] { cpu::resolve_ccoo_params(a, {256, -3}); }, errc::usage, "chunk_k = -3");
}

TEST(CcooRefuses, ColumnsBeyond32Bits) {
  csr<double, std::int32_t> a;
  a.rows = 1;
  a.cols = std::int64_t{1} << 33;
  a.row_ptr.assign(2, 0);
  expect_error([&] { cpu::csr_to_ccoo(a, {}); }, errc::unsupported, "exceeds the 32-bit");
}

TEST(CcooRefuses, PaddedEntriesBeyondInt32) {
  // 2^21 + 1 empty rows padded to groups of 1024: 2^31 + 1024 entries, refused before
  // anything of that size is allocated.
  csr<double, std::int32_t> a;
  a.rows = (std::int64_t{1} << 21) + 1;
  a.cols = 1;
  a.row_ptr.assign(static_cast<std::size_t>(a.rows + 1), 0);
  expect_error([&] { cpu::csr_to_ccoo(a, {256, 1024}); }, errc::unsupported, "exceed the 32-bit entry count");
}

// ---- the worked example of the spec ----------------------------------------------------

TEST(CcooExample, ArraysMatchTheSpec) {
  auto m = example();
  validate(m);
  EXPECT_EQ(m.params.chunk_b, 2);
  EXPECT_EQ(m.params.chunk_k, 2);
  EXPECT_EQ(std::vector<int>(m.chunk_format.begin(), m.chunk_format.end()), (std::vector<int>{0x19, 0x18, 0x18, 0x09}));
  EXPECT_EQ(std::vector<int>(m.chunk_row.begin(), m.chunk_row.end()), (std::vector<int>{0, 1, 3, 5}));
  EXPECT_EQ(std::vector<int>(m.chunk_col.begin(), m.chunk_col.end()), (std::vector<int>{0, 1, 2, 0}));
  EXPECT_EQ(std::vector<std::uint64_t>(m.chunk_ptr.begin(), m.chunk_ptr.end()),
            (std::vector<std::uint64_t>{0, 16, 32, 48, 56}));
  const std::vector<int> blob = {// chunk 0 (0x19): bitmap | column offsets | table indices | filler
                                 0x08, 0, 1, 4, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0,
                                 // chunk 1 (0x18): row offsets | bitmap | column offsets | table indices | filler
                                 0, 1, 0x0E, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0,
                                 // chunk 2 (0x18)
                                 0, 1, 0x08, 0, 1, 1, 0, 1, 5, 0, 0, 0, 0, 0, 0, 0,
                                 // chunk 3 (0x09): column offsets | table indices | filler
                                 0, 5, 2, 1, 0, 0, 0, 0};
  EXPECT_EQ(std::vector<int>(m.blob.begin(), m.blob.end()), blob);
  EXPECT_EQ(std::vector<double>(m.table.begin(), m.table.end()), (std::vector<double>{0.0, 1.0, 2.0, 3.0, 4.0, 5.0}));
  EXPECT_EQ(std::vector<std::int64_t>(m.counts.begin(), m.counts.end()), (std::vector<std::int64_t>{14, 9}));
  EXPECT_EQ(m.nnz(), 9);
  EXPECT_TRUE(equal(cpu::ccoo_to_csr(m), example_csr()));
}

// ---- validate(): one test per invariant ------------------------------------------------
// Byte positions below refer to the example's blob as listed in ArraysMatchTheSpec.

TEST(CcooValidate, NegativeShape) {
  auto m = example();
  m.rows = -1;
  expect_error([&] { validate(m); }, errc::bad_input, "negative shape");
}

TEST(CcooValidate, ChunkBOutOfRange) {
  auto m = example();
  m.params.chunk_b = 257;
  expect_error([&] { validate(m); }, errc::bad_input, "chunk_b = 257 is out of range");
}

TEST(CcooValidate, ChunkKOutOfRange) {
  auto m = example();
  m.params.chunk_k = 0;
  expect_error([&] { validate(m); }, errc::bad_input, "chunk_k = 0 is out of range");
}

TEST(CcooValidate, CountsLength) {
  auto m = example();
  m.counts.pop_back();
  expect_error([&] { validate(m); }, errc::bad_input, "counts has 1 elements, expected 2");
}

TEST(CcooValidate, EntriesOutOfRange) {
  auto m = example();
  m.counts[0] = -2;
  expect_error([&] { validate(m); }, errc::bad_input, "counts[0] = -2 entries is out of range");
}

TEST(CcooValidate, EntriesNotWholeGroups) {
  auto m = example();
  m.counts[0] = 13;
  expect_error([&] { validate(m); }, errc::bad_input, "not a multiple of chunk_k = 2");
}

TEST(CcooValidate, EntriesWithoutColumns) {
  auto m = cpu::csr_to_ccoo(from_rows(0, row_list(5)), {2, 2});
  validate(m);
  m.counts[0] = 2;
  expect_error([&] { validate(m); }, errc::bad_input, "a 5 x 0 matrix has none");
}

TEST(CcooValidate, EntriesTooFewForTheRows) {
  auto m = example();
  m.counts[0] = 10;
  expect_error([&] { validate(m); }, errc::bad_input, "cannot give each of the 6 rows");
}

TEST(CcooValidate, ChunkArrayLength) {
  auto m = example();
  m.chunk_row.pop_back();
  expect_error([&] { validate(m); }, errc::bad_input, "chunk_row has 3 elements, expected 4");
}

TEST(CcooValidate, ChunkPtrEnd) {
  auto m = example();
  m.chunk_ptr.back() = 64;
  expect_error([&] { validate(m); }, errc::bad_input, "chunk_ptr ends at 64, expected 56");
}

TEST(CcooValidate, TableTooLong) {
  auto m = example();
  m.table.resize(257, 9.0);
  expect_error([&] { validate(m); }, errc::bad_input, "table has 257 values, more than the 256");
}

TEST(CcooValidate, ReservedFormatBits) {
  auto m = example();
  m.chunk_format[1] |= 0x20;
  expect_error([&] { validate(m); }, errc::bad_input, "chunk_format[1] = 0x38 sets reserved bits");
}

TEST(CcooValidate, ColumnWidthCode3) {
  auto m = example();
  m.chunk_format[1] |= ccoo_code::width_mask;
  expect_error([&] { validate(m); }, errc::bad_input, "column width code 3");
}

TEST(CcooValidate, ChunkSizeMatchesItsCode) {
  auto m = example();
  m.chunk_format[0] &= static_cast<std::uint8_t>(~ccoo_code::lut);  // direct doubles need 40 bytes
  expect_error([&] { validate(m); }, errc::bad_input,
               "chunk 0: occupies 16 bytes of blob, its format code 0x11 and 4 entries need 40");
}

TEST(CcooValidate, FillerBytesAreZero) {
  auto m = example();
  m.blob[15] = 1;
  expect_error([&] { validate(m); }, errc::bad_input, "chunk 0: filler byte 15 of its blob is 0x01");
}

TEST(CcooValidate, BitmapBitsBeyondTheEntries) {
  auto m = example();
  m.blob[0] |= 0x10;  // entry 4 of a 4-entry chunk
  expect_error([&] { validate(m); }, errc::bad_input, "pad bitmap marks entries beyond its 4 entries");
}

TEST(CcooValidate, ChunksCoverRowsInOrder) {
  auto m = example();
  m.chunk_row[2] = 4;  // chunk 1 ends in row 2
  expect_error([&] { validate(m); }, errc::bad_input, "chunk_row[2] = 4, expected 2 or 3");
}

TEST(CcooValidate, BaselineRowInRange) {
  // Two one-entry chunks in rows 0 and 1, shape cut to one row.
  auto m = cpu::csr_to_ccoo(from_rows(2, {{{0, 1.0}}, {{1, 2.0}}}), {1, 1});
  validate(m);
  m.rows = 1;
  expect_error([&] { validate(m); }, errc::bad_input, "chunk_row[1] = 1 is out of range [0, 1)");
}

TEST(CcooValidate, BaselineColumnInRange) {
  auto m = example();
  m.chunk_col[3] = 6;
  expect_error([&] { validate(m); }, errc::bad_input, "chunk_col[3] = 6 is out of range [0, 6)");
}

TEST(CcooValidate, FirstRowOffsetIsZero) {
  auto m = example();
  m.blob[16] = 1;  // chunk 1, group 0
  expect_error([&] { validate(m); }, errc::bad_input, "chunk 1: row offset of group 0 is 1, expected 0");
}

TEST(CcooValidate, RowOffsetsStepByAtMostOne) {
  auto m = example();
  m.blob[17] = 2;  // chunk 1, group 1
  expect_error([&] { validate(m); }, errc::bad_input, "chunk 1: row offsets jump from 0 to 2 at group 1");
}

TEST(CcooValidate, SingleRowFlagWhenOneRow) {
  auto m = example();
  m.blob[17] = 0;  // chunk 1's two groups in one row, with row offsets stored
  expect_error([&] { validate(m); }, errc::bad_input,
               "chunk 1: all groups lie in one row but the single-row flag is not set");
}

TEST(CcooValidate, RowOffsetsWithinTheRows) {
  auto m = example();
  m.rows = 4;  // chunk 2 reaches row 4
  expect_error([&] { validate(m); }, errc::bad_input, "chunk 2: its last group is in row 4, beyond the 4 rows");
}

TEST(CcooValidate, PadFlagNeedsPadding) {
  // K = 1: the empty row's padding entry, unmarked, reads as a stored entry (0, +0.0).
  auto m = cpu::csr_to_ccoo(from_rows(2, {{{1, 1.0}}, {}}), {256, 1});
  validate(m);
  const ccoo_layout l = ccoo_chunk_layout(2, 1, m.chunk_format[0], sizeof(double));
  m.blob[l.pads] = 0;
  expect_error([&] { validate(m); }, errc::bad_input, "chunk 0: pad flag set but no entry is marked as padding");
}

TEST(CcooValidate, PaddingColumnOffsetIsZero) {
  auto m = example();
  m.blob[4] = 1;  // chunk 0, entry 3 (padding)
  expect_error([&] { validate(m); }, errc::bad_input, "chunk 0: padding entry 3 has column offset 1, expected 0");
}

TEST(CcooValidate, PaddingValueIsPositiveZero) {
  auto m = example();
  m.blob[8] = 1;  // chunk 0, entry 3 (padding) -> table[1] = 1.0
  expect_error([&] { validate(m); }, errc::bad_input, "chunk 0: padding entry 3 has a value other than +0.0");
}

TEST(CcooValidate, PaddingEndsItsRow) {
  auto m = example();
  // Chunk 0: make entry 2 padding and entry 3 a stored entry of row 0.
  m.blob[0] = 0x04;
  m.blob[3] = 0;
  m.blob[7] = 0;
  expect_error([&] { validate(m); }, errc::bad_input, "chunk 0: stored entry 3 of row 0 follows a padding entry");
}

TEST(CcooValidate, RowHoldsWholeGroupsOfPadding) {
  // K = 1, rows {1}, {}, {0}: move the empty row's padding group into row 0.
  auto m = cpu::csr_to_ccoo(from_rows(2, {{{1, 1.0}}, {}, {{0, 2.0}}}), {256, 1});
  validate(m);
  m.blob[1] = 0;
  m.blob[2] = 1;
  expect_error([&] { validate(m); }, errc::bad_input, "row 0 occupies 2 entries, expected 1");
}

TEST(CcooValidate, ColumnInRange) {
  auto m = example();
  m.blob[49] = 6;  // chunk 3, entry 1: column 0 + 6
  expect_error([&] { validate(m); }, errc::bad_input, "chunk 3: entry 1 has column 6, out of range [0, 6)");
}

TEST(CcooValidate, ColumnsStrictlyIncreasingInRow) {
  auto m = example();
  m.blob[2] = 0;  // chunk 0, entry 1: column 1 -> 0, a duplicate of entry 0
  expect_error([&] { validate(m); }, errc::bad_input, "row 0 is not strictly increasing");
}

TEST(CcooValidate, ColumnsIncreaseAcrossChunks) {
  // Row 0 spans chunks 0 and 1 (K = 1, B = 2): its third entry's column 2 -> 1.
  auto m = cpu::csr_to_ccoo(from_rows(4, {{{0, 1.0}, {1, 2.0}, {2, 3.0}}}), {2, 1});
  validate(m);
  ASSERT_EQ(m.chunk_format.size(), 2u);
  m.chunk_col[1] = 1;
  expect_error([&] { validate(m); }, errc::bad_input, "chunk 1: entry 0 has column 1 after column 1");
}

TEST(CcooValidate, TableIndexInRange) {
  auto m = example();
  m.blob[5] = 6;  // chunk 0, entry 0
  expect_error([&] { validate(m); }, errc::bad_input,
               "chunk 0: entry 0 has table index 6, beyond the table's 6 values");
}

TEST(CcooValidate, BaselineColumnIsTheSmallest) {
  auto m = example();
  m.blob[48] = 1;  // chunk 3 now holds columns 1 and 5 with baseline 0
  expect_error([&] { validate(m); }, errc::bad_input,
               "chunk_col[3] = 0, expected the chunk's smallest stored column 1");
}

TEST(CcooValidate, ColumnWidthIsTheSmallest) {
  auto m = example();
  // Chunk 3 rewritten with 16-bit offsets {0, 5}: the same 8 bytes, a wider code.
  m.chunk_format[3] = 0x0B;
  const std::vector<std::uint8_t> bytes = {0, 0, 5, 0, 2, 1, 0, 0};
  std::copy(bytes.begin(), bytes.end(), m.blob.begin() + 48);
  expect_error([&] { validate(m); }, errc::bad_input,
               "chunk 3: column offsets use 16 bits, its largest offset 5 needs 8");
}

TEST(CcooValidate, RowsCoveredToTheEnd) {
  auto m = example();
  m.rows = 7;
  expect_error([&] { validate(m); }, errc::bad_input, "the chunks cover rows 0..5, the matrix has 7 rows");
}

TEST(CcooValidate, StoredCount) {
  auto m = example();
  m.counts[1] = 8;
  expect_error([&] { validate(m); }, errc::bad_input, "counts[1] = 8, but the chunks hold 9 stored entries");
}

TEST(CcooValidate, TableUsedWhenItCoversAChunk) {
  auto m = example();
  // Chunk 3 rewritten with direct values: offsets {0, 5}, doubles {2.0, 1.0} at byte 8.
  m.chunk_format[3] = ccoo_code::single_row;
  std::vector<std::uint8_t> bytes(24, 0);
  bytes[1] = 5;
  const double v[2] = {2.0, 1.0};
  std::memcpy(bytes.data() + 8, v, sizeof v);
  m.blob.resize(48);
  m.blob.insert(m.blob.end(), bytes.begin(), bytes.end());
  m.chunk_ptr[4] = 72;
  expect_error([&] { validate(m); }, errc::bad_input,
               "chunk 3: stores its values directly although the value table holds all of them");
}

TEST(CcooValidate, TableInCanonicalOrder) {
  auto m = example();
  std::swap(m.table[3], m.table[4]);  // 3.0 and 4.0 each occur once: 3.0 comes first
  expect_error([&] { validate(m); }, errc::bad_input, "table[3] differs from the canonical table");
}

TEST(CcooValidate, TableHoldsTheMostFrequentValues) {
  auto m = example();
  m.table.push_back(7.0);
  expect_error([&] { validate(m); }, errc::bad_input, "table has 7 values, the canonical table has 6");
}

TEST(CcooValidate, TableEmptyWhenUnused) {
  // 300 distinct values in one chunk: not covered by 256 table values, so stored directly.
  row_list rows(1);
  for (int c = 0; c < 300; ++c) rows[0].push_back({c, 0.5 + c});
  auto m = cpu::csr_to_ccoo(from_rows(300, rows), {256, 2});
  validate(m);
  EXPECT_TRUE(m.table.empty());
  m.table.push_back(1.0);
  expect_error([&] { validate(m); }, errc::bad_input,
               "table has 1 values, the canonical table has 0 (no chunk uses it)");
}

TEST(CcooValidate, CorruptedArraysAreRejectedOrCanonical) {
  // Random single-byte changes anywhere in the arrays: validate() either throws bad_input
  // or accepts a ccoo that is exactly the canonical encoding of the matrix it decodes to.
  auto good = cpu::csr_to_ccoo(from_rows(9, {{{0, 1.0}, {3, 2.0}, {8, 1.0}},
                                             {},
                                             {{2, 0.0}},
                                             {{1, 1.0}, {2, 1.0}, {4, -0.0}, {5, 3.0}, {7, 1.0}},
                                             {},
                                             {{8, 2.0}}}),
                               {3, 2});
  std::mt19937_64 rng(99);
  int accepted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    auto m = good;
    std::vector<std::pair<std::uint8_t*, std::size_t>> bufs;
    ccoo<double>::for_each_array(m, [&](std::string_view, auto& arr) {
      if (!arr.empty()) bufs.emplace_back(reinterpret_cast<std::uint8_t*>(arr.data()), arr.size() * sizeof(arr[0]));
    });
    auto& [ptr, len] = bufs[rng() % bufs.size()];
    ptr[rng() % len] = static_cast<std::uint8_t>(rng());
    try {
      validate(m);
    } catch (const error& e) {
      ASSERT_EQ(e.code(), errc::bad_input) << e.what();
      continue;
    }
    ++accepted;
    auto back = cpu::ccoo_to_csr(m);
    ASSERT_NO_THROW(validate(back));
    ASSERT_TRUE(equal(cpu::csr_to_ccoo(back, m.params), m)) << "trial " << trial;
  }
  EXPECT_GT(accepted, 0);  // e.g. a changed stored value or column that stays canonical
}
