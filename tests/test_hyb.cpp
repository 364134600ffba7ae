// HYB (ELL part + COO tail): the spec's worked example, exact round trips, the automatic
// ELL width, SpMV against the CSR reference, validate() per invariant, refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "convert/cpu/hyb.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/cpu/spmv_hyb.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
using test::expect_error;

namespace {

template <class A>
auto vec(const A& a) {
  return std::vector<typename A::value_type>(a.begin(), a.end());
}

std::int64_t max_row_length(const csr<double, std::int32_t>& a) {
  std::int64_t m = 0;
  for (std::int64_t r = 0; r < a.rows; ++r) m = std::max<std::int64_t>(m, a.row_ptr[r + 1] - a.row_ptr[r]);
  return m;
}

// Row r has lens[r] entries in columns 0..lens[r]-1 (for the width rule only lengths matter).
csr<double, std::int32_t> with_row_lengths(const std::vector<std::int64_t>& lens, std::int64_t cols) {
  csr<double, std::int32_t> a;
  a.rows = static_cast<std::int64_t>(lens.size());
  a.cols = cols;
  a.row_ptr.push_back(0);
  for (std::size_t r = 0; r < lens.size(); ++r) {
    for (std::int64_t c = 0; c < lens[r]; ++c) {
      a.col_idx.push_back(static_cast<std::int32_t>(c));
      a.values.push_back(static_cast<double>(r % 7) + 0.5 * static_cast<double>(c));
    }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col_idx.size()));
  }
  return a;
}

std::vector<std::int64_t> lengths(std::vector<std::pair<std::int64_t, std::int64_t>> count_len) {
  std::vector<std::int64_t> out;
  for (auto [count, len] : count_len) out.insert(out.end(), count, len);
  return out;
}

// The widths every generated matrix is converted with: automatic, small, the longest row
// (all in ELL) and beyond it (all-padding slots), where the container cap allows them
// (one_dense_row and power_law_2000 would be mostly padding: HybRefuses covers that).
std::vector<std::int64_t> widths_for(const csr<double, std::int32_t>& a) {
  const std::int64_t m = max_row_length(a);
  std::vector<std::int64_t> out;
  for (std::int64_t w : {std::int64_t{0}, std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, std::int64_t{7},
                         std::max<std::int64_t>(m, 1), m + 3})
    if (a.rows * w <= ell_slot_cap(a.nnz(), a.rows)) out.push_back(w);
  return out;
}

// A valid HYB with ELL padding, full ELL rows and a tail: 40 rows, width 4.
hyb<double> good_hyb() {
  auto a = test::random_csr(40, 30, 4.0, 21);
  auto h = cpu::csr_to_hyb(a, {4});
  validate(h);
  return h;
}

// First row r with ELL slot `k` used (want_full) or padding (!want_full).
std::int64_t row_where(const hyb<double>& h, std::int64_t k, bool want_full) {
  for (std::int64_t r = 0; r < h.rows; ++r)
    if ((h.ell.col_idx[k * h.rows + r] != -1) == want_full) return r;
  ADD_FAILURE() << "no such row";
  return 0;
}

}  // namespace

// ---- the worked example of specs/formats/hyb.md --------------------------------

TEST(HybWorkedExample, ArraysMatchSpec) {
  csr<double, std::int32_t> a;
  a.rows = a.cols = 6;
  a.row_ptr = {0, 2, 3, 3, 7, 10, 11};
  a.col_idx = {0, 2, 1, 0, 3, 4, 5, 1, 4, 5, 5};
  a.values = {1, 2, 0, 4, 5, 6, 7, 8, 9, 10, 11};
  validate(a);

  auto h = cpu::csr_to_hyb(a, {2});
  validate(h);
  EXPECT_EQ(h.params.ell_width, 2);
  EXPECT_EQ(h.nnz(), 11);
  EXPECT_EQ(vec(h.ell.col_idx), (std::vector<std::int32_t>{0, 1, -1, 0, 1, 5, 2, -1, -1, 3, 4, -1}));
  EXPECT_EQ(vec(h.ell.values), (std::vector<double>{1, 0, 0, 4, 8, 11, 2, 0, 0, 5, 9, 0}));
  EXPECT_EQ(vec(h.coo.row_idx), (std::vector<std::int32_t>{3, 3, 4}));
  EXPECT_EQ(vec(h.coo.col_idx), (std::vector<std::int32_t>{4, 5, 5}));
  EXPECT_EQ(vec(h.coo.values), (std::vector<double>{6, 7, 10}));
  EXPECT_TRUE(equal(cpu::hyb_to_csr(h), a));

  // Automatic width: 6 rows < 4096, so everything goes to the COO tail.
  auto h0 = cpu::csr_to_hyb(a, {0});
  EXPECT_EQ(h0.params.ell_width, 0);
  EXPECT_TRUE(h0.ell.col_idx.empty());
  EXPECT_EQ(vec(h0.coo.row_idx), (std::vector<std::int32_t>{0, 0, 1, 3, 3, 3, 3, 4, 4, 4, 5}));
  EXPECT_EQ(vec(h0.coo.col_idx), vec(a.col_idx));
  EXPECT_EQ(vec(h0.coo.values), vec(a.values));
}

// ---- round trips -----------------------------------------------------------------

template <class V>
void round_trip_generated() {
  for (const auto& g : test::generator_set()) {
    auto a = test::cast_values<V>(g.a);
    for (std::int64_t w : widths_for(g.a)) {
      SCOPED_TRACE(g.name + " ell_width " + std::to_string(w));
      auto h = cpu::csr_to_hyb(a, {w});
      validate(h);
      if (w > 0) {
        EXPECT_EQ(h.params.ell_width, w);
      }
      EXPECT_EQ(h.nnz(), a.nnz());
      EXPECT_TRUE(equal(cpu::hyb_to_csr(h), a));
    }
  }
}
TEST(HybRoundTrip, GeneratedMatricesFloat) { round_trip_generated<float>(); }
TEST(HybRoundTrip, GeneratedMatricesDouble) { round_trip_generated<double>(); }

TEST(HybRoundTrip, StoredZerosAndNegativeZerosStayEntries) {
  auto a = test::random_csr(300, 200, 6.0, 3);
  // Zeros of both signs in the first slot (ELL) and the last entry (tail for long rows).
  for (std::int64_t r = 0; r < a.rows; ++r) {
    if (a.row_ptr[r] == a.row_ptr[r + 1]) continue;
    a.values[a.row_ptr[r]] = r % 2 ? -0.0 : 0.0;
    a.values[a.row_ptr[r + 1] - 1] = r % 3 ? 0.0 : -0.0;
  }
  for (std::int64_t w : {1, 3, 6, 40}) {
    SCOPED_TRACE(w);
    auto h = cpu::csr_to_hyb(a, {w});
    validate(h);
    EXPECT_EQ(h.nnz(), a.nnz());
    EXPECT_TRUE(equal(cpu::hyb_to_csr(h), a));
    auto f = test::cast_values<float>(a);
    EXPECT_TRUE(equal(cpu::hyb_to_csr(cpu::csr_to_hyb(f, {w})), f));
  }
}

// ---- the automatic ELL width --------------------------------------------------------

TEST(HybAutoWidth, BelowBreakevenRowsIsAllCoo) {
  EXPECT_EQ(cpu::hyb_auto_ell_width(with_row_lengths(lengths({{4095, 3}}), 10)), 0);
  EXPECT_EQ(cpu::hyb_auto_ell_width(with_row_lengths(lengths({{4096, 3}}), 10)), 3);
  EXPECT_EQ(cpu::hyb_auto_ell_width(csr<double, std::int32_t>{}), 0);
  for (const auto& g : test::generator_set()) EXPECT_EQ(cpu::hyb_auto_ell_width(g.a), 0) << g.name;
}

TEST(HybAutoWidth, ThirdOfTheRowsBoundary) {
  // 5000 rows of 10 entries: exactly a third of 15000 rows, so width 10...
  EXPECT_EQ(cpu::hyb_auto_ell_width(with_row_lengths(lengths({{5000, 10}, {10000, 2}}), 20)), 10);
  // ...but less than a third of 15003 rows: only the width every row reaches.
  EXPECT_EQ(cpu::hyb_auto_ell_width(with_row_lengths(lengths({{5000, 10}, {10003, 2}}), 20)), 2);
  // A third of the rows but fewer than 4096 of them: 4000 of 12000.
  EXPECT_EQ(cpu::hyb_auto_ell_width(with_row_lengths(lengths({{4000, 9}, {8000, 1}}), 20)), 1);
}

TEST(HybAutoWidth, LongRowsGoToTheTail) {
  // A regular matrix with a few dense rows (the case HYB is for, sec. 5.3.1).
  auto a = with_row_lengths(lengths({{3000, 4}, {5, 3000}, {6000, 4}}), 3000);
  auto h = cpu::csr_to_hyb(a, {0});
  validate(h);
  EXPECT_EQ(h.params.ell_width, 4);
  EXPECT_EQ(h.ell.params.width, 4);
  EXPECT_EQ(h.coo.nnz(), 5 * (3000 - 4));
  EXPECT_TRUE(equal(cpu::hyb_to_csr(h), a));
  // Resolving fills the width and keeps explicit requests.
  EXPECT_EQ(cpu::resolve_hyb_params(a, {0}).ell_width, 4);
  EXPECT_EQ(cpu::resolve_hyb_params(a, {9}).ell_width, 9);
}

TEST(HybAutoWidth, RandomLargeMatrixUsesTheHistogram) {
  // Poisson(6) row lengths over 20000 rows: check the rule against a direct count.
  auto a = test::random_csr(20000, 5000, 6.0, 8);
  const std::int64_t w = cpu::hyb_auto_ell_width(a);
  auto at_least = [&](std::int64_t k) {
    std::int64_t n = 0;
    for (std::int64_t r = 0; r < a.rows; ++r) n += a.row_ptr[r + 1] - a.row_ptr[r] >= k;
    return n;
  };
  const std::int64_t need = std::max<std::int64_t>(4096, (a.rows + 2) / 3);
  EXPECT_GE(w, 1);
  EXPECT_GE(at_least(w), need);
  EXPECT_LT(at_least(w + 1), need);
  auto h = cpu::csr_to_hyb(a, {0});
  EXPECT_EQ(h.params.ell_width, w);
  EXPECT_TRUE(equal(cpu::hyb_to_csr(h), a));
}

// ---- SpMV against the CSR reference ---------------------------------------------

template <class V>
void spmv_against_csr() {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  auto cases = test::generator_set();
  cases.push_back({"auto_width_long_rows", with_row_lengths(lengths({{4500, 5}, {3, 2000}}), 2000)});
  // Enough rows for several row blocks (4096 rows per block at least).
  cases.push_back({"random_20000x3000", test::random_csr(20000, 3000, 5.0, 9)});
  for (const auto& g : cases) {
    // x of 2^28 entries would take gigabytes; that matrix's columns are covered by the round trip.
    if (g.a.cols > (1 << 24)) continue;
    auto a = test::cast_values<V>(g.a);
    std::vector<V> x(a.cols), y0(a.rows);
    for (auto& v : x) v = static_cast<V>(dist(rng));
    for (auto& v : y0) v = static_cast<V>(dist(rng));
    const double tol = cpu::spmv_tolerance<V>(max_row_length(g.a));
    for (std::int64_t w : widths_for(g.a)) {
      auto h = cpu::csr_to_hyb(a, {w});
      for (auto [alpha, beta] : {std::pair<V, V>{1, 0}, std::pair<V, V>{-0.5, 2}}) {
        SCOPED_TRACE(g.name + " ell_width " + std::to_string(w) + " alpha " + std::to_string(alpha));
        // beta == 0 must not read y: start from NaN.
        std::vector<V> y(a.rows, beta == V(0) ? std::numeric_limits<V>::quiet_NaN() : V(0));
        if (beta != V(0)) y = y0;
        cpu::spmv(h, alpha, x.data(), beta, y.data());
        EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data()), tol);
      }
    }
  }
}
TEST(HybSpmv, MatchesCsrReferenceFloat) { spmv_against_csr<float>(); }
TEST(HybSpmv, MatchesCsrReferenceDouble) { spmv_against_csr<double>(); }

// ---- arrays as the container sees them --------------------------------------------

TEST(HybArrays, PrefixedNamesAndRebuildFromStoredParts) {
  const auto a = good_hyb();
  std::vector<std::string> names;
  std::map<std::string, std::vector<unsigned char>> stored;
  hyb<double>::for_each_array(a, [&](std::string_view name, const auto& arr) {
    names.emplace_back(name);
    auto& bytes = stored[std::string(name)];
    bytes.resize(arr.size() * sizeof(arr[0]));
    if (!bytes.empty()) std::memcpy(bytes.data(), arr.data(), bytes.size());
  });
  EXPECT_EQ(names, (std::vector<std::string>{"ell/col_idx", "ell/values", "coo/indices_0", "coo/indices_1",
                                             "coo/values"}));
  EXPECT_EQ(bytes(a), stored["ell/col_idx"].size() + stored["ell/values"].size() + stored["coo/indices_0"].size() +
                          stored["coo/indices_1"].size() + stored["coo/values"].size());

  // What a generic reader does: shape, params, then the arrays by name.
  hyb<double> b;
  b.rows = a.rows;
  b.cols = a.cols;
  std::vector<std::int64_t> params;
  hyb_params::for_each_param(a.params, [&](std::string_view, const auto& v) { params.push_back(v); });
  std::size_t i = 0;
  hyb_params::for_each_param(b.params, [&](std::string_view, auto& v) { v = params[i++]; });
  hyb<double>::for_each_array(b, [&](std::string_view name, auto& arr) {
    const auto& bytes = stored.at(std::string(name));
    arr.resize(bytes.size() / sizeof(arr[0]));
    if (!bytes.empty()) std::memcpy(arr.data(), bytes.data(), bytes.size());
  });
  expect_error([&] { validate(b); }, errc::bad_input, "ell part has shape 0 x 0");
  std::remove_cvref_t<decltype(b)>::sync_parts(b);
  validate(b);
  EXPECT_TRUE(equal(a, b));
  EXPECT_TRUE(equal(a.ell, b.ell));
  EXPECT_TRUE(equal(a.coo, b.coo));
}

// ---- validate(): one test per invariant ----------------------------------------------

TEST(HybValidate, AcceptsConverterOutputAndItsEllPart) {
  for (const auto& g : test::generator_set())
    for (std::int64_t w : widths_for(g.a)) {
      SCOPED_TRACE(g.name + " ell_width " + std::to_string(w));
      auto h = cpu::csr_to_hyb(g.a, {w});
      validate(h);
      validate(h.ell);
      validate(h.coo);
    }
}

TEST(HybValidate, NegativeShape) {
  auto h = good_hyb();
  h.rows = h.ell.rows = h.coo.rows = -1;
  expect_error([&] { validate(h); }, errc::bad_input, "hyb: negative shape");
}

TEST(HybValidate, EllPartShapeDiffers) {
  auto h = good_hyb();
  h.ell.cols += 1;
  expect_error([&] { validate(h); }, errc::bad_input, "ell part has shape 40 x 31, the matrix 40 x 30");
}

TEST(HybValidate, CooPartShapeDiffers) {
  auto h = good_hyb();
  h.coo.rows -= 1;
  expect_error([&] { validate(h); }, errc::bad_input, "coo part has shape 39 x 30");
}

TEST(HybValidate, EllWidthDiffersFromParam) {
  auto h = good_hyb();
  h.params.ell_width = 5;
  expect_error([&] { validate(h); }, errc::bad_input, "ell part has width 4, ell_width is 5");
}

TEST(HybValidate, NegativeWidth) {
  auto h = good_hyb();
  h.params.ell_width = h.ell.params.width = -1;
  expect_error([&] { validate(h); }, errc::bad_input, "ell/width = -1 is negative");
}

TEST(HybValidate, SlotsBeyond32Bits) {
  // A lying shape: rejected before the (absent) arrays are looked at.
  hyb<double> h;
  h.rows = h.ell.rows = h.coo.rows = std::int64_t{1} << 20;
  h.cols = h.ell.cols = h.coo.cols = 10;
  h.params.ell_width = h.ell.params.width = std::int64_t{1} << 11;
  expect_error([&] { validate(h); }, errc::bad_input, "exceeds 2^31-1 slots");
}

TEST(HybValidate, EllColIdxLength) {
  auto h = good_hyb();
  h.ell.col_idx.pop_back();
  expect_error([&] { validate(h); }, errc::bad_input, "ell/col_idx has 159 elements, expected 160");
}

TEST(HybValidate, EllValuesLength) {
  auto h = good_hyb();
  h.ell.values.push_back(0.0);
  expect_error([&] { validate(h); }, errc::bad_input, "ell/values has 161 elements, expected 160");
}

TEST(HybValidate, EllColumnOutOfRange) {
  auto h = good_hyb();
  const std::int64_t r = row_where(h, 0, true);
  h.ell.col_idx[r] = 30;
  expect_error([&] { validate(h); }, errc::bad_input, "ell/col_idx[" + std::to_string(r) + "] = 30");
  h.ell.col_idx[r] = -2;
  expect_error([&] { validate(h); }, errc::bad_input, "is out of range [-1, 30)");
}

TEST(HybValidate, PaddingValueNotPositiveZero) {
  auto h = good_hyb();
  const std::int64_t s = 3 * h.rows + row_where(h, 3, false);
  h.ell.values[s] = 1.5;
  expect_error([&] { validate(h); }, errc::bad_input, "ell/values[" + std::to_string(s) + "] = 1.5");
  h.ell.values[s] = -0.0;
  expect_error([&] { validate(h); }, errc::bad_input, "in a padding slot");
  h.ell.values[s] = std::numeric_limits<double>::quiet_NaN();
  expect_error([&] { validate(h); }, errc::bad_input, "expected +0");
}

TEST(HybValidate, EntryAfterPadding) {
  auto h = good_hyb();
  // A row with slot 1 padded: give it an entry in slot 2 behind the padding.
  const std::int64_t r = row_where(h, 1, false);
  h.ell.col_idx[2 * h.rows + r] = 29;
  h.ell.values[2 * h.rows + r] = 1.0;
  expect_error([&] { validate(h); }, errc::bad_input, "follows a padding slot");
}

TEST(HybValidate, EllRowNotSorted) {
  auto h = good_hyb();
  const std::int64_t r = row_where(h, 1, true);
  std::swap(h.ell.col_idx[r], h.ell.col_idx[h.rows + r]);
  expect_error([&] { validate(h); }, errc::bad_input, "ell/row " + std::to_string(r) + " is not sorted");
  h = good_hyb();
  h.ell.col_idx[h.rows + r] = h.ell.col_idx[r];
  expect_error([&] { validate(h); }, errc::bad_input, "or has a duplicate");
}

TEST(HybValidate, CooLengths) {
  auto h = good_hyb();
  ASSERT_GT(h.coo.nnz(), 0);
  h.coo.col_idx.pop_back();
  expect_error([&] { validate(h); }, errc::bad_input, "coo/col_idx has");
  h = good_hyb();
  h.coo.values.push_back(1.0);
  expect_error([&] { validate(h); }, errc::bad_input, "coo/values has");
}

TEST(HybValidate, CooIndexOutOfRange) {
  auto h = good_hyb();
  h.coo.row_idx.back() = 40;
  expect_error([&] { validate(h); }, errc::bad_input, "coo/row_idx[");
  h = good_hyb();
  h.coo.col_idx[0] = -1;
  expect_error([&] { validate(h); }, errc::bad_input, "coo/col_idx[0] = -1 is out of range [0, 30)");
}

TEST(HybValidate, CooNotSorted) {
  auto h = good_hyb();
  ASSERT_GE(h.coo.nnz(), 2);
  std::swap(h.coo.col_idx[0], h.coo.col_idx[1]);
  std::swap(h.coo.row_idx[0], h.coo.row_idx[1]);
  expect_error([&] { validate(h); }, errc::bad_input, "coo tail is not sorted by (row, column) or has a duplicate at 1");
}

TEST(HybValidate, CooRowWhoseEllSlotsAreNotFull) {
  auto h = good_hyb();
  // Move the tail's first row to a row whose last ELL slot is padding, keeping the tail sorted.
  const std::int64_t r = row_where(h, 3, false);
  h.coo.row_idx.assign(1, static_cast<std::int32_t>(r));
  h.coo.col_idx.assign(1, 29);
  h.coo.values.assign(1, 1.0);
  expect_error([&] { validate(h); }, errc::bad_input,
               "row " + std::to_string(r) + " has coo entries (coo/row_idx[0]) but its ELL slots are not full");
}

TEST(HybValidate, CooColumnNotAfterTheRowsEllColumns) {
  auto h = good_hyb();
  const std::int64_t r = h.coo.row_idx[0];
  h.coo.col_idx[0] = h.ell.col_idx[3 * h.rows + r];
  expect_error([&] { validate(h); }, errc::bad_input, "does not come after the row's last ELL column");
}

TEST(HybValidate, EllBeyondTheContainerCap) {
  // One row, width 2^20 + 200: all padding, more slots than 64 * (0 + 1 + 1) + 2^20.
  hyb<float> h;
  h.rows = h.cols = 1;
  h.params.ell_width = (1 << 20) + 200;
  std::remove_cvref_t<decltype(h)>::sync_parts(h);
  h.ell.col_idx.assign(h.params.ell_width, -1);
  h.ell.values.assign(h.params.ell_width, 0.0f);
  expect_error([&] { validate(h); }, errc::bad_input, "beyond the container cap 64 * (nnz + rows + 1) + 2^20 = 1048704");
  h.ell.params.width = h.params.ell_width = (1 << 20) + 100;
  h.ell.col_idx.resize(h.params.ell_width);
  h.ell.values.resize(h.params.ell_width);
  validate(h);
}

TEST(HybValidate, RandomCorruptionsAreRejectedOrHarmless) {
  // validate() guards untrusted files: whatever one element or one length is changed to, it
  // either throws bad_input or the matrix is still safe to convert (and converts to valid CSR).
  const auto good = good_hyb();
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> small(-3, 45);
  for (int it = 0; it < 3000; ++it) {
    auto h = good;
    const int what = it % 6;
    auto poke = [&](auto& arr) {
      if (arr.empty()) return;
      auto& e = arr[std::uniform_int_distribution<std::size_t>(0, arr.size() - 1)(rng)];
      e = static_cast<std::remove_reference_t<decltype(e)>>(small(rng));
    };
    if (what == 0) poke(h.ell.col_idx);
    if (what == 1) poke(h.ell.values);
    if (what == 2) poke(h.coo.row_idx);
    if (what == 3) poke(h.coo.col_idx);
    if (what == 4) h.coo.row_idx.resize(h.coo.row_idx.size() + small(rng) % 3, 0);
    if (what == 5) h.rows = h.ell.rows = h.coo.rows = small(rng);
    try {
      validate(h);
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::bad_input) << e.what();
      continue;
    }
    auto back = cpu::hyb_to_csr(h);
    validate(back);
    EXPECT_EQ(back.nnz(), h.nnz());
  }
}

// ---- validate() of a standalone ELL ---------------------------------------------------

TEST(HybEllValidate, NamesTheEllFormatAndChecksItsCap) {
  auto e = good_hyb().ell;
  validate(e);
  EXPECT_EQ(e.nnz(), good_hyb().nnz() - good_hyb().coo.nnz());
  auto bad = e;
  bad.col_idx[0] = 99;
  expect_error([&] { validate(bad); }, errc::bad_input, "ell: col_idx[0] = 99");
  bad = e;
  bad.params.width = 5;
  expect_error([&] { validate(bad); }, errc::bad_input, "ell: col_idx has 160 elements, expected 200");
  ell<double> wide;
  wide.rows = wide.cols = 1;
  wide.params.width = (1 << 20) + 200;
  wide.col_idx.assign(wide.params.width, -1);
  wide.values.assign(wide.params.width, 0.0);
  expect_error([&] { validate(wide); }, errc::bad_input, "ell: width 1048776 gives 1048776 ELL slots");
}

// ---- refusals ----------------------------------------------------------------------

TEST(HybRefuses, NegativeWidthRequest) {
  auto a = test::random_csr(10, 10, 2.0, 1);
  expect_error([&] { cpu::csr_to_hyb(a, {-1}); }, errc::usage, "ell_width = -1 is negative");
}

TEST(HybRefuses, WidthBeyondTheContainerCap) {
  auto a = test::random_csr(10, 10, 2.0, 1);
  const std::int64_t cap = 64 * (a.nnz() + 10 + 1) + (1 << 20);
  expect_error([&] { cpu::csr_to_hyb(a, {cap / 10 + 1}); }, errc::usage, "beyond the container cap");
  auto h = cpu::csr_to_hyb(a, {cap / 10});  // the largest width allowed
  validate(h);
  EXPECT_TRUE(equal(cpu::hyb_to_csr(h), a));
}

TEST(HybRefuses, SlotsBeyond32Bits) {
  // A lying shape without arrays: explicit widths are checked from rows and nnz alone,
  // before anything is read or allocated. 2^26 rows x 40 slots > 2^31-1, within the cap.
  csr<double, std::int32_t> a;
  a.rows = std::int64_t{1} << 26;
  a.cols = 10;
  expect_error([&] { cpu::csr_to_hyb(a, {40}); }, errc::unsupported, "beyond the 32-bit slot index");
}
