// MBR (Mapped Blocked Row): conversion round trips, the auto block-size rule, SpMV and
// SMMV against the CSR reference, validate() invariants, refusals, and the worked
// examples of specs/formats/mbr.md and of the paper (mbr-kannan.txt sec. III).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <tuple>

#include "convert/cpu/mbr.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/cpu/spmv_mbr.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
using test::expect_error;

namespace {

// Canonical CSR from (row, col, value) triplets listed in row-major order.
csr<double, std::int32_t> from_triplets(std::int64_t rows, std::int64_t cols,
                                        const std::vector<std::tuple<int, int, double>>& t) {
  csr<double, std::int32_t> a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.assign(rows + 1, 0);
  for (auto [r, c, v] : t) {
    ++a.row_ptr[r + 1];
    a.col_idx.push_back(c);
    a.values.push_back(v);
  }
  for (std::int64_t r = 0; r < rows; ++r) a.row_ptr[r + 1] += a.row_ptr[r];
  return a;
}

template <class T, class A>
std::vector<T> vec(const A& arr) {
  return std::vector<T>(arr.begin(), arr.end());
}

mbr_params block(int r, int c) { return mbr_params{r, c, 0}; }

// Automatic, every bitmap width (1x1, 3x5, 4x8, 8x8, 7x9 = 63 of 64 bits), extreme shapes
// (1x64, 64x1), sizes that divide no test matrix (3x5, 5x3, 7x9), and a tall block.
const std::vector<mbr_params> block_sizes = {block(0, 0), block(1, 1), block(2, 2), block(3, 5), block(5, 3),
                                             block(4, 8), block(8, 8), block(7, 9), block(1, 64), block(64, 1),
                                             block(16, 4)};

std::string describe(const mbr_params& p) {
  return std::to_string(p.block_rows) + "x" + std::to_string(p.block_cols);
}

std::int64_t max_row_len(const csr<double, std::int32_t>& a) {
  std::int64_t m = 0;
  for (std::int64_t r = 0; r < a.rows; ++r) m = std::max<std::int64_t>(m, a.row_ptr[r + 1] - a.row_ptr[r]);
  return m;
}

template <class V>
std::vector<V> random_vector(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<V> v(n);
  for (auto& e : v) e = static_cast<V>(d(rng));
  return v;
}

template <class V>
void round_trip_generator_set() {
  for (const auto& g : test::generator_set()) {
    const auto a = test::cast_values<V>(g.a);
    for (const auto& p : block_sizes) {
      SCOPED_TRACE(g.name + " " + describe(p));
      const auto m = cpu::csr_to_mbr(a, p);
      validate(m);
      EXPECT_GE(m.params.block_rows, 1);
      EXPECT_GE(m.params.block_cols, 1);
      if (p.block_rows) {
        EXPECT_EQ(m.params.block_rows, p.block_rows);
      }
      if (p.block_cols) {
        EXPECT_EQ(m.params.block_cols, p.block_cols);
      }
      EXPECT_EQ(m.nnz(), a.nnz());
      EXPECT_TRUE(equal(cpu::mbr_to_csr(m), a));
    }
  }
}

// y = alpha*A*x + beta*y0 through mbr spmv, checked against the CSR reference; for
// beta == 0, y starts as NaN so that reading it would show.
template <class V>
void check_spmv(const csr<double, std::int32_t>& a64, const mbr_params& p, std::uint64_t seed) {
  const auto a = test::cast_values<V>(a64);
  const auto m = cpu::csr_to_mbr(a, p);
  const auto x = random_vector<V>(a.cols, seed);
  const auto y0 = random_vector<V>(a.rows, seed + 1);
  for (auto [alpha, beta] : {std::pair<V, V>{1, 0}, std::pair<V, V>{-0.5, 2}}) {
    SCOPED_TRACE("alpha " + std::to_string(alpha) + " beta " + std::to_string(beta));
    std::vector<V> y = beta == V(0) ? std::vector<V>(a.rows, std::numeric_limits<V>::quiet_NaN()) : y0;
    cpu::spmv(m, alpha, x.data(), beta, y.data());
    EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data()),
              cpu::spmv_tolerance<V>(max_row_len(a64)));
  }
}

// The same for k vectors at once: every column of Y against its own CSR product.
template <class V>
void check_spmm(const csr<double, std::int32_t>& a64, const mbr_params& p, int k, std::uint64_t seed) {
  const auto a = test::cast_values<V>(a64);
  const auto m = cpu::csr_to_mbr(a, p);
  const auto x = random_vector<V>(a.cols * k, seed);
  const auto y0 = random_vector<V>(a.rows * k, seed + 1);
  for (auto [alpha, beta] : {std::pair<V, V>{1, 0}, std::pair<V, V>{-0.5, 2}}) {
    std::vector<V> y = beta == V(0) ? std::vector<V>(a.rows * k, std::numeric_limits<V>::quiet_NaN()) : y0;
    cpu::spmm(m, k, alpha, x.data(), beta, y.data());
    std::vector<V> xl(a.cols), y0l(a.rows), yl(a.rows);
    for (int l = 0; l < k; ++l) {
      SCOPED_TRACE("k " + std::to_string(k) + " column " + std::to_string(l) + " alpha " + std::to_string(alpha) +
                   " beta " + std::to_string(beta));
      for (std::int64_t j = 0; j < a.cols; ++j) xl[j] = x[j * k + l];
      for (std::int64_t i = 0; i < a.rows; ++i) {
        y0l[i] = y0[i * k + l];
        yl[i] = y[i * k + l];
      }
      EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, xl.data(), beta, y0l.data(), yl.data()),
                cpu::spmv_tolerance<V>(max_row_len(a64)));
    }
  }
}

// A 37 x 29 matrix in 4 x 3 blocks: the last block row holds 1 row and the last block
// column 2 columns, and 12 positions leave 4 unused bits in each 2-byte bitmap, so every
// edge invariant has something to break.
mbr<double> good() {
  auto m = cpu::csr_to_mbr(test::random_csr(37, 29, 4.0, 3), block(4, 3));
  validate(m);
  return m;
}

void set_bit(mbr<double>& m, std::int32_t b, int bit) {
  auto& byte = m.bitmaps[static_cast<std::size_t>(b) * m.params.bitmap_bytes + bit / 8];
  byte = static_cast<std::uint8_t>(byte | (1u << (bit % 8)));
}

}  // namespace

// ---- round trips -----------------------------------------------------------------

TEST(MbrRoundTrip, GeneratorSetFloat) { round_trip_generator_set<float>(); }
TEST(MbrRoundTrip, GeneratorSetDouble) { round_trip_generator_set<double>(); }

TEST(MbrRoundTrip, KeepsStoredZerosSignedZerosAndNaNPayloads) {
  auto a = test::random_csr(200, 150, 5.0, 21);
  for (std::size_t k = 0; k < a.values.size(); ++k) {
    if (k % 5 == 0) a.values[k] = 0.0;
    if (k % 5 == 1) a.values[k] = -0.0;
    if (k % 7 == 3) a.values[k] = std::bit_cast<double>(std::uint64_t{0x7ff8000000000123});
  }
  auto f = test::cast_values<float>(a);
  for (std::size_t k = 0; k < f.values.size(); k += 7) f.values[k] = std::bit_cast<float>(std::uint32_t{0xffc00321});
  for (const auto& p : {block(0, 0), block(3, 5), block(8, 8)}) {
    SCOPED_TRACE(describe(p));
    const auto m = cpu::csr_to_mbr(a, p);
    EXPECT_EQ(m.nnz(), a.nnz());
    EXPECT_TRUE(equal(cpu::mbr_to_csr(m), a));
    EXPECT_TRUE(equal(cpu::mbr_to_csr(cpu::csr_to_mbr(f, p)), f));
  }
}

TEST(MbrRoundTrip, DenseMatrixFillsEveryBit) {
  std::vector<std::tuple<int, int, double>> t;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) t.emplace_back(r, c, r * 16 + c + 1.0);
  const auto a = from_triplets(16, 16, t);
  const auto m = cpu::csr_to_mbr(a, block(0, 0));
  EXPECT_EQ(m.params.block_rows, 8);
  EXPECT_EQ(m.params.block_cols, 8);
  EXPECT_EQ(m.params.bitmap_bytes, 8);
  EXPECT_EQ(vec<int>(m.block_row_ptr), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(vec<int>(m.bitmaps), std::vector<int>(4 * 8, 0xff));
  EXPECT_TRUE(equal(cpu::mbr_to_csr(m), a));
}

// ---- the automatic block size ----------------------------------------------------

TEST(MbrAutoRule, PicksFewestBytesAmongCandidatesLargerBlockOnTies) {
  const std::vector<int> sizes = {1, 2, 4, 8};
  for (const auto& g : test::generator_set()) {
    SCOPED_TRACE(g.name);
    const auto chosen = cpu::resolve_mbr_params(g.a, block(0, 0));
    const std::size_t chosen_bytes = bytes(cpu::csr_to_mbr(g.a, chosen));
    for (int r : sizes)
      for (int c : sizes) {
        SCOPED_TRACE(std::to_string(r) + "x" + std::to_string(c));
        const std::size_t b = bytes(cpu::csr_to_mbr(g.a, block(r, c)));
        EXPECT_LE(chosen_bytes, b);
        if (b == chosen_bytes) {
          EXPECT_GE(std::make_pair(chosen.block_rows * chosen.block_cols, chosen.block_rows), std::make_pair(r * c, r));
        }
      }
  }
}

TEST(MbrAutoRule, KeepsARequestedFieldAndChoosesTheOther) {
  const auto a = test::random_csr(300, 280, 7.0, 8);
  const auto rows_fixed = cpu::resolve_mbr_params(a, block(3, 0));
  EXPECT_EQ(rows_fixed.block_rows, 3);
  for (int c : {1, 2, 4, 8})
    EXPECT_LE(bytes(cpu::csr_to_mbr(a, rows_fixed)), bytes(cpu::csr_to_mbr(a, block(3, c))));
  // 16 rows leave only c in {1, 2, 4}; 64 columns leave only r = 1.
  EXPECT_LE(cpu::resolve_mbr_params(a, block(16, 0)).block_cols, 4);
  const auto cols_fixed = cpu::resolve_mbr_params(a, block(0, 64));
  EXPECT_EQ(cols_fixed.block_rows, 1);
  EXPECT_EQ(cols_fixed.bitmap_bytes, 8);
}

TEST(MbrAutoRule, DerivesBitmapBytesFromTheBlockSize) {
  const auto a = test::random_csr(10, 10, 2.0, 4);
  EXPECT_EQ(cpu::resolve_mbr_params(a, block(1, 8)).bitmap_bytes, 1);
  EXPECT_EQ(cpu::resolve_mbr_params(a, block(3, 3)).bitmap_bytes, 2);
  EXPECT_EQ(cpu::resolve_mbr_params(a, block(4, 4)).bitmap_bytes, 2);
  EXPECT_EQ(cpu::resolve_mbr_params(a, block(3, 6)).bitmap_bytes, 4);
  EXPECT_EQ(cpu::resolve_mbr_params(a, block(5, 7)).bitmap_bytes, 8);
  EXPECT_EQ(cpu::resolve_mbr_params(a, mbr_params{4, 4, 2}).bitmap_bytes, 2);
}

// ---- SpMV and SMMV -----------------------------------------------------------------

TEST(MbrSpmv, MatchesCsrReferenceOnGeneratorSet) {
  std::uint64_t seed = 100;
  for (const auto& g : test::generator_set()) {
    if (g.a.cols > 100000) continue;  // x would hold 2^28 entries (the round trips cover that matrix)
    for (const auto& p : {block(0, 0), block(1, 1), block(3, 5), block(8, 8), block(1, 64), block(64, 1)}) {
      SCOPED_TRACE(g.name + " " + describe(p));
      check_spmv<float>(g.a, p, seed);
      check_spmv<double>(g.a, p, seed);
      seed += 2;
    }
  }
}

TEST(MbrSpmm, MatchesKSeparateCsrProducts) {
  std::uint64_t seed = 500;
  for (const auto& g : test::generator_set()) {
    if (g.a.cols > 100000) continue;  // X would hold k * 2^28 entries
    for (const auto& p : {block(0, 0), block(3, 5), block(8, 8), block(64, 1)}) {
      for (int k : {1, 2, 3, 5, 8, 9, 17}) {
        SCOPED_TRACE(g.name + " " + describe(p));
        check_spmm<double>(g.a, p, k, seed);
        seed += 2;
      }
    }
  }
  check_spmm<float>(test::random_csr(301, 277, 9.0, 9), block(4, 4), 11, seed);
}

TEST(MbrSpmm, RefusesZeroVectors) {
  const auto m = good();
  std::vector<double> x(29), y(37);
  expect_error([&] { cpu::spmm(m, 0, 1.0, x.data(), 0.0, y.data()); }, errc::usage, "k = 0");
}

// ---- refusals ------------------------------------------------------------------------

TEST(MbrRefuses, BlocksOfMoreThan64Positions) {
  const auto a = test::random_csr(20, 20, 3.0, 5);
  expect_error([&] { cpu::csr_to_mbr(a, block(9, 8)); }, errc::unsupported, "at most 64");
  expect_error([&] { cpu::csr_to_mbr(a, block(64, 2)); }, errc::unsupported, "128 positions");
}

TEST(MbrRefuses, OutOfRangeParameters) {
  const auto a = test::random_csr(20, 20, 3.0, 5);
  expect_error([&] { cpu::csr_to_mbr(a, block(-1, 4)); }, errc::usage, "block_rows = -1");
  expect_error([&] { cpu::csr_to_mbr(a, block(4, 65)); }, errc::usage, "block_cols = 65");
  expect_error([&] { cpu::csr_to_mbr(a, mbr_params{2, 2, 3}); }, errc::usage, "bitmap_bytes = 3");
  expect_error([&] { cpu::csr_to_mbr(a, mbr_params{4, 4, 1}); }, errc::usage, "need 2");
}

// ---- validate(): one test per invariant ----------------------------------------------

TEST(MbrValidate, AcceptsConverterOutput) {
  const auto m = good();
  EXPECT_EQ(m.params.bitmap_bytes, 2);
  EXPECT_EQ(m.block_row_ptr.size(), 11u);
}

TEST(MbrValidate, NegativeShape) {
  auto m = good();
  m.rows = -1;
  expect_error([&] { validate(m); }, errc::bad_input, "negative shape");
}

TEST(MbrValidate, BlockSizeBelowOne) {
  auto m = good();
  m.params.block_cols = 0;
  expect_error([&] { validate(m); }, errc::bad_input, "must be >= 1");
}

TEST(MbrValidate, BlockOver64Positions) {
  auto m = good();
  m.params.block_rows = 22;
  expect_error([&] { validate(m); }, errc::bad_input, "more than the 64 bits");
}

TEST(MbrValidate, BitmapBytesNotTheSmallestWidth) {
  auto m = good();
  m.params.bitmap_bytes = 4;
  expect_error([&] { validate(m); }, errc::bad_input, "bitmap_bytes = 4 but 4 x 3 blocks need 2");
}

TEST(MbrValidate, BlockRowPtrLength) {
  auto m = good();
  m.block_row_ptr.pop_back();
  expect_error([&] { validate(m); }, errc::bad_input, "block_row_ptr has 10 elements, expected 11");
}

TEST(MbrValidate, BlockRowPtrStart) {
  auto m = good();
  m.block_row_ptr[0] = 1;
  expect_error([&] { validate(m); }, errc::bad_input, "block_row_ptr[0] = 1");
}

TEST(MbrValidate, BlockRowPtrDecreasing) {
  auto m = good();
  m.block_row_ptr[5] = m.block_row_ptr[6] + 1;
  expect_error([&] { validate(m); }, errc::bad_input, "block_row_ptr decreases at 6");
}

TEST(MbrValidate, BlockRowPtrEnd) {
  auto m = good();
  m.block_row_ptr.back() += 1;
  expect_error([&] { validate(m); }, errc::bad_input, "block_row_ptr ends at");
}

TEST(MbrValidate, BitmapsLength) {
  auto m = good();
  m.bitmaps.pop_back();
  expect_error([&] { validate(m); }, errc::bad_input, "bitmaps has");
}

TEST(MbrValidate, ValuePtrLength) {
  auto m = good();
  m.value_ptr.push_back(m.value_ptr.back());
  expect_error([&] { validate(m); }, errc::bad_input, "value_ptr has 12 elements, expected 11");
}

TEST(MbrValidate, ValuePtrEndIsNotTheValueCount) {
  auto m = good();
  m.values.pop_back();
  expect_error([&] { validate(m); }, errc::bad_input, "value_ptr ends at");
}

TEST(MbrValidate, ValuePtrDecreasing) {
  auto m = good();
  m.value_ptr[3] = m.value_ptr[4] + 1;
  expect_error([&] { validate(m); }, errc::bad_input, "value_ptr decreases at 4");
}

TEST(MbrValidate, BlockColumnOutOfRange) {
  auto m = good();
  m.block_col_idx[2] = 10;  // 29 columns in blocks of 3: block columns 0..9
  expect_error([&] { validate(m); }, errc::bad_input, "block_col_idx[2] = 10 is out of range [0, 10)");
  m.block_col_idx[2] = -1;
  expect_error([&] { validate(m); }, errc::bad_input, "block_col_idx[2] = -1 is out of range");
}

TEST(MbrValidate, BlockColumnsNotIncreasing) {
  auto m = good();
  std::int64_t br = 0;
  while (m.block_row_ptr[br + 1] - m.block_row_ptr[br] < 2) ++br;
  const std::int32_t b = m.block_row_ptr[br];
  m.block_col_idx[b + 1] = m.block_col_idx[b];
  expect_error([&] { validate(m); }, errc::bad_input, "not sorted or has a duplicate");
}

TEST(MbrValidate, EmptyBitmap) {
  auto m = good();
  for (int byte = 0; byte < m.params.bitmap_bytes; ++byte) m.bitmaps[2 * m.params.bitmap_bytes + byte] = 0;
  expect_error([&] { validate(m); }, errc::bad_input, "bitmap of block 2 (block row 0) is 0");
}

TEST(MbrValidate, BitBeyondTheBlockPositions) {
  auto m = good();
  set_bit(m, 0, 13);  // a 4 x 3 block has positions 0..11
  expect_error([&] { validate(m); }, errc::bad_input, "sets bits beyond the 12 positions");
}

TEST(MbrValidate, BitBelowTheLastMatrixRow) {
  auto m = good();
  // 37 rows: block row 9 holds row 36 only, so row 1 of its blocks (bits 3..5) is outside.
  const std::int32_t b = m.block_row_ptr[9];
  ASSERT_LT(b, m.block_row_ptr[10]);
  set_bit(m, b, 4);
  expect_error([&] { validate(m); }, errc::bad_input, "beyond the matrix edge (block row 9 has 1 rows inside");
}

TEST(MbrValidate, BitRightOfTheLastMatrixColumn) {
  auto m = good();
  // 29 columns: block column 9 holds columns 27 and 28, so column 2 of it (bit 2) is outside.
  std::int32_t b = 0;
  while (b < m.block_row_ptr[9] && m.block_col_idx[b] != 9) ++b;
  ASSERT_LT(b, m.block_row_ptr[9]);
  set_bit(m, b, 2);
  expect_error([&] { validate(m); }, errc::bad_input, "block column 9 has 2 columns inside");
}

TEST(MbrValidate, SetBitsDisagreeWithValuePtr) {
  auto m = good();
  std::int64_t br = 1;
  while (m.value_ptr[br] == m.value_ptr[br + 1]) ++br;
  m.value_ptr[br] += 1;  // still non-decreasing; block row br - 1 now claims one value more
  expect_error([&] { validate(m); }, errc::bad_input,
               "block row " + std::to_string(br - 1) + ": bitmaps mark");
}

// validate() guards loading untrusted files: after any single corrupted element it either
// throws bad_input or accepts arrays that convert to a valid CSR with the same entries
// count (run under the sanitizer build, this also shows it never reads out of bounds).
TEST(MbrValidate, RandomCorruptionIsRejectedOrHarmless) {
  const auto base = good();
  std::mt19937_64 rng(77);
  int rejected = 0;
  for (int trial = 0; trial < 600; ++trial) {
    auto m = base;
    const int which = trial % 5;
    auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
    auto delta = [&] { return static_cast<int>(std::uniform_int_distribution<int>(-3, 3)(rng)); };
    if (which == 0) m.block_row_ptr[pick(m.block_row_ptr.size())] += delta();
    if (which == 1) m.block_col_idx[pick(m.block_col_idx.size())] += delta();
    if (which == 2) m.bitmaps[pick(m.bitmaps.size())] ^= static_cast<std::uint8_t>(1u << pick(8));
    if (which == 3) m.value_ptr[pick(m.value_ptr.size())] += delta();
    if (which == 4) m.params.block_rows += delta();
    try {
      validate(m);
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::bad_input) << e.what();
      ++rejected;
      continue;
    }
    const auto back = cpu::mbr_to_csr(m);
    validate(back);
    EXPECT_EQ(back.nnz(), m.nnz());
  }
  EXPECT_GT(rejected, 400);
}

// ---- worked examples ---------------------------------------------------------------------

// specs/formats/mbr.md, "Worked example": 6 x 6, an empty row, a stored zero, 4 x 4 blocks
// that overhang the matrix on the right and at the bottom.
TEST(MbrWorkedExample, SpecArraysLiterally) {
  const auto a = from_triplets(6, 6,
                               {{0, 0, 1}, {0, 2, 2}, {0, 5, 3}, {1, 1, 4}, {3, 0, 5}, {3, 3, 6},
                                {4, 4, 0}, {4, 5, 7}, {5, 0, 8}, {5, 5, 9}});
  const auto m = cpu::csr_to_mbr(a, block(4, 4));
  validate(m);
  EXPECT_EQ(m.params.block_rows, 4);
  EXPECT_EQ(m.params.block_cols, 4);
  EXPECT_EQ(m.params.bitmap_bytes, 2);
  EXPECT_EQ(vec<int>(m.block_row_ptr), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(vec<int>(m.block_col_idx), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(vec<int>(m.bitmaps), (std::vector<int>{0x25, 0x90, 0x02, 0x00, 0x10, 0x00, 0x23, 0x00}));
  EXPECT_EQ(vec<int>(m.value_ptr), (std::vector<int>{0, 6, 10}));
  EXPECT_EQ(vec<double>(m.values), (std::vector<double>{1, 2, 4, 5, 6, 3, 8, 0, 7, 9}));
  EXPECT_TRUE(equal(cpu::mbr_to_csr(m), a));

  const auto chosen = cpu::resolve_mbr_params(a, block(0, 0));
  EXPECT_EQ(chosen.block_rows, 8);
  EXPECT_EQ(chosen.block_cols, 8);
  EXPECT_EQ(chosen.bitmap_bytes, 8);
}

// The paper's example (sec. III): 2 x 2 blocks, b_map = (15, 3, 7), col_idx = (0, 1, 1),
// row_start = (0, 2, 3), val in block order.
TEST(MbrWorkedExample, PaperSectionIII) {
  const auto a = from_triplets(4, 4,
                               {{0, 0, 1}, {0, 1, 2}, {0, 2, 3}, {0, 3, 4}, {1, 0, 5}, {1, 1, 6},
                                {2, 2, 7}, {2, 3, 8}, {3, 2, 9}});
  const auto m = cpu::csr_to_mbr(a, block(2, 2));
  EXPECT_EQ(vec<int>(m.block_row_ptr), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(vec<int>(m.block_col_idx), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(vec<int>(m.bitmaps), (std::vector<int>{15, 3, 7}));
  EXPECT_EQ(vec<double>(m.values), (std::vector<double>{1, 2, 5, 6, 3, 4, 7, 8, 9}));
}
