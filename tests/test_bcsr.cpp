// BCSR: round trips, the block size rule, the SpMV against the CSR reference, validate()
// catching each broken invariant, refusals, and the worked example of specs/formats/bcsr.md.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "convert/cpu/bcsr.hpp"
#include "convert/cpu/blocking.hpp"
#include "kernels/cpu/spmv_bcsr.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
using test::expect_error;

namespace {

// Canonical CSR from per-row (column, value) lists given in column order.
csr<double, std::int32_t> make_csr(std::int64_t rows, std::int64_t cols,
                                   const std::vector<std::vector<std::pair<int, double>>>& entries) {
  csr<double, std::int32_t> a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.push_back(0);
  for (const auto& row : entries) {
    for (auto [c, v] : row) {
      a.col_idx.push_back(c);
      a.values.push_back(v);
    }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col_idx.size()));
  }
  return a;
}

template <class A>
std::vector<std::int64_t> ints(const A& arr) {
  return std::vector<std::int64_t>(arr.begin(), arr.end());
}

// The 6 x 6 matrix of the worked example in specs/formats/bcsr.md: row 2 is empty,
// (1,5) is a stored +0.0 and (3,3) a stored -0.0.
csr<double, std::int32_t> worked_example() {
  return make_csr(6, 6,
                  {{{0, 1.0}, {1, 2.0}, {4, 3.0}},
                   {{1, 4.0}, {5, 0.0}},
                   {},
                   {{2, 5.0}, {3, -0.0}},
                   {{0, 7.0}, {5, 8.0}},
                   {{4, 9.0}}});
}
const bcsr_params worked_example_params{2, 4};

// Dense 3 x 3 blocks at scattered block positions of a 300 x 300 matrix.
csr<double, std::int32_t> three_by_three_blocks() {
  std::vector<std::vector<std::pair<int, double>>> rows(300);
  for (int br = 0; br < 100; ++br) {
    std::vector<int> bcs = {br, (br * 7 + 3) % 100, (br * 13 + 5) % 100};
    std::sort(bcs.begin(), bcs.end());
    bcs.erase(std::unique(bcs.begin(), bcs.end()), bcs.end());
    for (int i = 0; i < 3; ++i)
      for (int bc : bcs)
        for (int j = 0; j < 3; ++j) rows[br * 3 + i].push_back({bc * 3 + j, 1.0 + br + 0.25 * i + 0.125 * j});
  }
  return make_csr(300, 300, rows);
}

const std::vector<bcsr_params> block_sizes = {{0, 0},   {1, 1},  {2, 2},  {3, 3}, {4, 4}, {6, 6}, {8, 8},
                                              {16, 16}, {1, 16}, {16, 1}, {2, 3}, {5, 7}, {0, 4}, {3, 0}};

template <class V>
void expect_round_trip(const csr<V, std::int32_t>& a, bcsr_params p) {
  SCOPED_TRACE("block " + std::to_string(p.block_rows) + " x " + std::to_string(p.block_cols));
  const auto b = cpu::csr_to_bcsr(a, p);
  validate(b);
  // Sides given are kept; sides left 0 become concrete.
  EXPECT_EQ(b.params.block_rows, p.block_rows ? p.block_rows : b.params.block_rows);
  EXPECT_EQ(b.params.block_cols, p.block_cols ? p.block_cols : b.params.block_cols);
  EXPECT_GE(b.params.block_rows, 1);
  EXPECT_GE(b.params.block_cols, 1);
  EXPECT_EQ(b.nnz(), a.nnz());
  EXPECT_TRUE(equal(cpu::bcsr_to_csr(b), a));
}

template <class V>
std::int64_t max_row_len(const csr<V, std::int32_t>& a) {
  std::int64_t m = 0;
  for (std::int64_t r = 0; r < a.rows; ++r) m = std::max<std::int64_t>(m, a.row_ptr[r + 1] - a.row_ptr[r]);
  return m;
}

template <class V>
void expect_spmv_matches(const csr<V, std::int32_t>& a, const bcsr<V>& b, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<V> x(a.cols), y0(a.rows);
  for (auto& v : x) v = static_cast<V>(dist(rng));
  for (auto& v : y0) v = static_cast<V>(dist(rng));
  for (auto [alpha, beta] : {std::pair<V, V>{1, 0}, std::pair<V, V>{-0.5, 2}}) {
    // With beta == 0 y is not read: NaN there must not reach the result.
    std::vector<V> y = beta == V(0) ? std::vector<V>(a.rows, std::numeric_limits<V>::quiet_NaN()) : y0;
    cpu::spmv(b, alpha, x.data(), beta, y.data());
    EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data()),
              cpu::spmv_tolerance<V>(max_row_len(a)))
        << "alpha " << alpha << " beta " << beta;
  }
}

using value_types = ::testing::Types<float, double>;
template <class V>
class BcsrRoundTrip : public ::testing::Test {};
TYPED_TEST_SUITE(BcsrRoundTrip, value_types);
template <class V>
class BcsrSpmv : public ::testing::Test {};
TYPED_TEST_SUITE(BcsrSpmv, value_types);

}  // namespace

// ---- round trips -----------------------------------------------------------------

TYPED_TEST(BcsrRoundTrip, ExactOnGeneratedMatrices) {
  for (const auto& g : test::generator_set()) {
    SCOPED_TRACE(g.name);
    const auto a = test::cast_values<TypeParam>(g.a);
    for (const auto& p : block_sizes) expect_round_trip(a, p);
  }
}

TYPED_TEST(BcsrRoundTrip, KeepsStoredZerosNegativeZerosAndSpecialValues) {
  using V = TypeParam;
  const double nan_payload = std::bit_cast<double>(std::uint64_t{0x7ff8000000000123});
  // Row 0 holds +0.0 alone in its 2 x 2 and 4 x 4 blocks (a block whose only entry is a
  // stored zero); the rest mixes -0.0, NaN with a payload, infinities and a subnormal.
  auto a = test::cast_values<V>(make_csr(5, 7,
                                         {{{0, 0.0}},
                                          {{2, -0.0}, {3, nan_payload}, {6, 0.0}},
                                          {{1, std::numeric_limits<double>::infinity()}, {2, 0.0}},
                                          {{0, -std::numeric_limits<double>::infinity()}, {5, -0.0}},
                                          {{4, 1e-310}, {6, 0.0}}}));
  a.values[8] = std::numeric_limits<V>::denorm_min();  // (4, 4): 1e-310 is 0 in float
  for (const auto& p : block_sizes) {
    expect_round_trip(a, p);
    EXPECT_EQ(cpu::csr_to_bcsr(a, p).stored_zeros.size(), 4u);
  }
  // Many stored zeros (like add32's 4036): a quarter of a random matrix's values.
  auto z = test::cast_values<V>(test::random_csr(400, 300, 8.0, 21));
  for (std::size_t k = 0; k < z.values.size(); k += 4) z.values[k] = (k % 8 == 0) ? V(0) : -V(0);
  for (const auto& p : block_sizes) expect_round_trip(z, p);
}

// ---- SpMV ----------------------------------------------------------------------------

TYPED_TEST(BcsrSpmv, MatchesCsrReferenceOnGeneratedMatrices) {
  using V = TypeParam;
  for (const auto& g : test::generator_set()) {
    // cols_near_2pow28 would need a 2^28-element x; its blocks are covered by the round trip.
    if (g.a.cols > (1 << 20)) continue;
    SCOPED_TRACE(g.name);
    const auto a = test::cast_values<V>(g.a);
    for (const auto& p : block_sizes) {
      SCOPED_TRACE("block " + std::to_string(p.block_rows) + " x " + std::to_string(p.block_cols));
      expect_spmv_matches(a, cpu::csr_to_bcsr(a, p), 7);
    }
  }
}

TYPED_TEST(BcsrSpmv, EveryBlockSizeWithOverhangingBlocks) {
  // 45 x 53: most sizes leave a partial last block row and block column, and the sizes
  // cover every compile-time instance and the run-time fallback.
  using V = TypeParam;
  const auto a = test::cast_values<V>(test::random_csr(45, 53, 9.0, 31));
  for (int r = 1; r <= bcsr_max_block; ++r)
    for (int c = 1; c <= bcsr_max_block; ++c) {
      SCOPED_TRACE("block " + std::to_string(r) + " x " + std::to_string(c));
      expect_spmv_matches(a, cpu::csr_to_bcsr(a, bcsr_params{r, c}), 8);
    }
}

// The merges' height dispatch (shared with CSR -> MBR): each listed height as its constant, any
// other height as 0 (the run-time form), and the function called exactly once.
TEST(BlockingKnownHeight, ListedHeightsAreConstantsOthersZero) {
  auto dispatched = [](int h) {
    std::vector<int> got;
    cpu::blocking::with_known_height<1, 2, 4, 8>(h, [&](auto known) { got.push_back(decltype(known)::value); });
    return got;
  };
  for (const int h : {1, 2, 4, 8}) EXPECT_EQ(dispatched(h), std::vector<int>{h});
  for (const int h : {0, 3, 5, 7, 16}) EXPECT_EQ(dispatched(h), std::vector<int>{0});
}

// ---- the block size rule ---------------------------------------------------------

TEST(BcsrAuto, PicksThreeByThreeForDenseThreeByThreeBlocks) {
  const auto a = three_by_three_blocks();
  const auto p = cpu::resolve_bcsr_params(a, {});
  EXPECT_EQ(p.block_rows, 3);
  EXPECT_EQ(p.block_cols, 3);
  EXPECT_EQ(fill_ratio(cpu::csr_to_bcsr(a, {})), 1.0);
}

TEST(BcsrAuto, PicksOneByOneForScatteredEntries) {
  const auto p = cpu::resolve_bcsr_params(test::random_csr(500, 500, 5.0, 3), {});
  EXPECT_EQ(p.block_rows, 1);
  EXPECT_EQ(p.block_cols, 1);
}

TEST(BcsrAuto, KeepsTheGivenSideAndChoosesTheOther) {
  const auto a = three_by_three_blocks();
  EXPECT_EQ(cpu::resolve_bcsr_params(a, {3, 0}).block_cols, 3);
  EXPECT_EQ(cpu::resolve_bcsr_params(a, {0, 3}).block_rows, 3);
  const auto p = cpu::resolve_bcsr_params(a, {5, 0});
  EXPECT_EQ(p.block_rows, 5);
  EXPECT_GE(p.block_cols, 1);
  const auto q = cpu::resolve_bcsr_params(a, {7, 11});
  EXPECT_EQ(q.block_rows, 7);
  EXPECT_EQ(q.block_cols, 11);
}

// The rule's model: the arrays' size (stored_zeros is the same for every size, so left out
// here too), weighted 4 for 1 x 1 and 5 for every other size (specs/formats/bcsr.md).
std::size_t weighted_bytes(const bcsr<double>& b) {
  const std::size_t model = bytes(b) - b.stored_zeros.size() * sizeof(std::int32_t);
  return model * (b.params.block_rows * b.params.block_cols == 1 ? 4 : 5);
}

TEST(BcsrAuto, ChoosesTheFewestWeightedBytesAmongCandidates) {
  // The chosen size must have no more weighted bytes than any candidate converted
  // explicitly, and on a tie no more values per block.
  const int sides[] = {1, 2, 3, 4, 6, 8};
  for (const auto& g : test::generator_set()) {
    if (g.a.nnz() == 0) continue;
    SCOPED_TRACE(g.name);
    const auto chosen = cpu::csr_to_bcsr(g.a, {});
    for (int r : sides)
      for (int c : sides) {
        const auto b = cpu::csr_to_bcsr(g.a, bcsr_params{r, c});
        EXPECT_LE(weighted_bytes(chosen), weighted_bytes(b)) << r << " x " << c;
        if (weighted_bytes(chosen) == weighted_bytes(b)) {
          EXPECT_LE(chosen.params.block_rows * chosen.params.block_cols, r * c);
        }
      }
  }
}

TEST(BcsrAuto, BlocksMustSaveAFifthOfTheBytes) {
  // Groups of g identical rows over scattered columns: g x 1 blocks without fill store
  // 8 g + 4 bytes per g entries against 12 per entry in 1 x 1 (both plus block_ptr). Pairs
  // save 1/6 of the bytes, not enough; groups of four save 1/4.
  auto groups = [](int g) {
    csr<double, std::int32_t> a;
    a.rows = 64 * g;
    a.cols = 4096;
    a.row_ptr.push_back(0);
    for (std::int64_t i = 0; i < a.rows; ++i) {
      const std::int64_t group = i / g;
      for (int k = 0; k < 8; ++k) {
        a.col_idx.push_back(static_cast<std::int32_t>(k * 512 + group * 37 % 512));  // sorted, none adjacent
        a.values.push_back(1.0 + static_cast<double>(i + k));
      }
      a.row_ptr.push_back(static_cast<std::int32_t>(a.col_idx.size()));
    }
    return a;
  };
  const auto pairs = cpu::resolve_bcsr_params(groups(2), {});
  EXPECT_EQ(pairs.block_rows, 1);
  EXPECT_EQ(pairs.block_cols, 1);
  EXPECT_EQ(cpu::resolve_bcsr_params(groups(2), {2, 0}).block_cols, 1);  // a given side is kept
  const auto fours = cpu::resolve_bcsr_params(groups(4), {});
  EXPECT_EQ(fours.block_rows, 4);
  EXPECT_EQ(fours.block_cols, 1);
}

TEST(BcsrParams, RejectsOutOfRangeRequests) {
  const auto a = test::random_csr(10, 10, 2.0, 1);
  for (auto [p, fragment] : {std::pair{bcsr_params{-1, 0}, "block_rows = -1 is out of range [0, 16]"},
                             std::pair{bcsr_params{17, 2}, "block_rows = 17 is out of range"},
                             std::pair{bcsr_params{0, -3}, "block_cols = -3 is out of range"},
                             std::pair{bcsr_params{4, 100}, "block_cols = 100 is out of range"}}) {
    expect_error([&] { cpu::resolve_bcsr_params(a, p); }, errc::usage, fragment);
    expect_error([&] { cpu::csr_to_bcsr(a, p); }, errc::usage, fragment);
  }
}

// ---- refusals ---------------------------------------------------------------------

TEST(BcsrRefuses, FillBeyondTheContainerCap) {
  // One row with an entry every 16 columns: 16 x 16 blocks store 256 values per entry,
  // against the limit 64 * (n + 17) + 2^20, which n = 5467 entries meet and 5468 exceed.
  auto make = [](int n) {
    csr<double, std::int32_t> a;
    a.rows = 16;
    a.cols = 16 * std::int64_t{n};
    a.row_ptr.assign(17, n);
    a.row_ptr[0] = 0;
    for (int j = 0; j < n; ++j) {
      a.col_idx.push_back(16 * j);
      a.values.push_back(1.0 + j);
    }
    return a;
  };
  EXPECT_EQ(cpu::csr_to_bcsr(make(5467), {16, 16}).values.size(), 1399552u);
  const auto a = make(5468);
  expect_error([&] { cpu::csr_to_bcsr(a, {16, 16}); }, errc::unsupported,
               "16 x 16 blocks need 1399808 values for 5468 entries, beyond the limit of 1399616 values");
  // Automatic block columns convert the same matrix: with 16 rows fixed, 16 x 1 stores the
  // fewest bytes (and the fewest values, so it is never beyond the limit when another size fits).
  const auto b = cpu::csr_to_bcsr(a, {16, 0});
  EXPECT_EQ(b.params.block_cols, 1);
  EXPECT_TRUE(equal(cpu::bcsr_to_csr(b), a));
}

TEST(BcsrRefuses, ValueLimitIsTheContainerCapOrThe32BitLimit) {
  EXPECT_EQ(bcsr_max_values(0, 0), 64 + (1 << 20));
  EXPECT_EQ(bcsr_max_values(1000, 99), 64 * 1100 + (1 << 20));
  EXPECT_EQ(bcsr_max_values(std::int64_t{1} << 30, 0), std::numeric_limits<std::int32_t>::max());
}

// ---- validate(): one test per invariant ---------------------------------------------

namespace {
bcsr<double> good() { return cpu::csr_to_bcsr(worked_example(), worked_example_params); }
}  // namespace

TEST(BcsrValidate, AcceptsConverterOutput) { validate(good()); }

TEST(BcsrValidate, BlockSizeOutOfRange) {
  auto a = good();
  a.params.block_rows = 0;
  expect_error([&] { validate(a); }, errc::bad_input, "block_rows = 0 is out of range [1, 16]");
  a = good();
  a.params.block_cols = 17;
  expect_error([&] { validate(a); }, errc::bad_input, "block_cols = 17 is out of range [1, 16]");
}

TEST(BcsrValidate, NegativeShape) {
  auto a = good();
  a.cols = -6;
  expect_error([&] { validate(a); }, errc::bad_input, "negative shape");
}

TEST(BcsrValidate, BlockPtrLength) {
  auto a = good();
  a.block_ptr.pop_back();
  expect_error([&] { validate(a); }, errc::bad_input, "block_ptr has 3 elements, expected 4");
}

TEST(BcsrValidate, BlockPtrStart) {
  auto a = good();
  a.block_ptr[0] = 1;
  expect_error([&] { validate(a); }, errc::bad_input, "block_ptr[0] = 1");
}

TEST(BcsrValidate, BlockPtrDecreases) {
  auto a = good();
  a.block_ptr[1] = 4;
  expect_error([&] { validate(a); }, errc::bad_input, "block_ptr decreases at 2");
}

TEST(BcsrValidate, BlockPtrEnd) {
  auto a = good();
  a.block_col.push_back(1);
  expect_error([&] { validate(a); }, errc::bad_input, "block_ptr ends at 5, expected 6");
}

TEST(BcsrValidate, ValuesLength) {
  auto a = good();
  a.values.pop_back();
  expect_error([&] { validate(a); }, errc::bad_input, "values has 39 elements, expected 40");
}

TEST(BcsrValidate, ValuesBeyond32BitOffsets) {
  // 2^23 + 1 blocks of 16 x 16 need 2^31 + 256 values: refused before values is looked at.
  bcsr<double> a;
  a.rows = 16;
  a.cols = 16;
  a.params = {16, 16};
  const std::int32_t n = (1 << 23) + 1;
  a.block_ptr = {0, n};
  a.block_col.resize(n);
  expect_error([&] { validate(a); }, errc::bad_input, "beyond the 32-bit offset limit");
}

TEST(BcsrValidate, FillBeyondTheContainerCap) {
  // n blocks of 16 x 16 with one entry each in a 16-row matrix: 256 n values against the
  // limit 64 * (n + 17) + 2^20, which n = 5467 meets exactly and n = 5468 exceeds.
  auto make = [](int n) {
    bcsr<double> a;
    a.rows = 16;
    a.cols = 16 * std::int64_t{n};
    a.params = {16, 16};
    a.block_ptr = {0, n};
    for (int k = 0; k < n; ++k) a.block_col.push_back(k);
    a.values.assign(std::size_t{256} * n, 0.0);
    for (int k = 0; k < n; ++k) a.values[std::size_t{256} * k] = 1.0 + k;
    return a;
  };
  validate(make(5467));
  expect_error([&] { validate(make(5468)); }, errc::bad_input,
               "values has 1399808 elements for 5468 entries, beyond the limit of 1399616 values");
}

TEST(BcsrValidate, BlockColOutOfRange) {
  auto a = good();
  a.block_col[1] = 2;
  expect_error([&] { validate(a); }, errc::bad_input, "block_col[1] = 2 is out of range [0, 2)");
}

TEST(BcsrValidate, BlockColNotIncreasing) {
  auto a = good();
  a.block_col[4] = 0;
  expect_error([&] { validate(a); }, errc::bad_input, "block row 2 is not sorted or has a duplicate");
}

TEST(BcsrValidate, StoredZeroOutOfRange) {
  auto a = good();
  a.stored_zeros[0] = 40;
  expect_error([&] { validate(a); }, errc::bad_input, "stored_zeros[0] = 40 is out of range [0, 40)");
}

TEST(BcsrValidate, StoredZerosNotIncreasing) {
  auto a = good();
  a.stored_zeros.push_back(13);
  expect_error([&] { validate(a); }, errc::bad_input, "stored_zeros is not increasing at 1");
}

TEST(BcsrValidate, StoredZeroNotPositiveZero) {
  auto a = good();
  a.stored_zeros[0] = 0;  // values[0] = 1
  expect_error([&] { validate(a); }, errc::bad_input, "which is not +0.0");
  a = good();
  a.stored_zeros[0] = 23;  // values[23] = -0.0, an entry by its own bits
  expect_error([&] { validate(a); }, errc::bad_input, "stored_zeros[0] = 23 points to values[23]");
}

TEST(BcsrValidate, StoredZeroInPadding) {
  auto a = good();
  a.stored_zeros.push_back(14);  // block 1, row 1, column 4 + 2 = 6: outside the 6 columns
  expect_error([&] { validate(a); }, errc::bad_input, "is padding outside the matrix (row 1, column 6), not an entry");
}

TEST(BcsrValidate, PaddingNotZero) {
  auto a = good();
  a.values[10] = -0.0;  // block 1, row 0, column 6: -0.0 differs from fill
  expect_error([&] { validate(a); }, errc::bad_input, "(row 0, column 6) and must be +0.0");
  // Padding rows: 5 x 5 in 2 x 2 blocks, the last block row's second row is row 5.
  std::vector<std::vector<std::pair<int, double>>> dense(5);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) dense[i].push_back({j, 1.0 + i * 5 + j});
  auto b = cpu::csr_to_bcsr(make_csr(5, 5, dense), {2, 2});
  validate(b);
  b.values[b.values.size() - 2] = 3.0;  // last block: row 5, column 4
  expect_error([&] { validate(b); }, errc::bad_input, "(row 5, column 4) and must be +0.0");
}

TEST(BcsrValidate, BlockWithoutEntry) {
  auto a = good();
  a.values[24] = 0.0;  // block 3 held only the 7 at (4, 0)
  expect_error([&] { validate(a); }, errc::bad_input, "block 3 (block row 2, block column 0) holds no entry");
}

// ---- the worked example of specs/formats/bcsr.md ------------------------------------

TEST(BcsrWorkedExample, ArraysMatchTheSpec) {
  const auto a = worked_example();
  const auto b = cpu::csr_to_bcsr(a, worked_example_params);
  EXPECT_EQ(b.rows, 6);
  EXPECT_EQ(b.cols, 6);
  EXPECT_EQ(b.params.block_rows, 2);
  EXPECT_EQ(b.params.block_cols, 4);
  EXPECT_EQ(ints(b.block_ptr), (std::vector<std::int64_t>{0, 2, 3, 5}));
  EXPECT_EQ(ints(b.block_col), (std::vector<std::int64_t>{0, 1, 0, 0, 1}));
  const std::vector<double> values = {1, 2, 0, 0, 0, 4, 0, 0,     // block 0: rows 0-1, columns 0-3
                                      3, 0, 0, 0, 0, 0, 0, 0,     // block 1: rows 0-1, columns 4-7
                                      0, 0, 0, 0, 0, 0, 5, -0.0,  // block 2: rows 2-3, columns 0-3
                                      7, 0, 0, 0, 0, 0, 0, 0,     // block 3: rows 4-5, columns 0-3
                                      0, 8, 0, 0, 9, 0, 0, 0};    // block 4: rows 4-5, columns 4-7
  ASSERT_EQ(b.values.size(), values.size());
  for (std::size_t k = 0; k < values.size(); ++k)
    EXPECT_EQ(std::bit_cast<std::uint64_t>(b.values[k]), std::bit_cast<std::uint64_t>(values[k]))
        << "values[" << k << "]";
  EXPECT_EQ(ints(b.stored_zeros), (std::vector<std::int64_t>{13}));
  EXPECT_EQ(b.nnz(), 10);
  EXPECT_EQ(fill_ratio(b), 4.0);
  EXPECT_TRUE(equal(cpu::bcsr_to_csr(b), a));
}
