// CSR and COO: validate() invariants and COO <-> CSR conversion.
#include <gtest/gtest.h>

#include "convert/cpu/csr_coo.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
using test::expect_error;

namespace {

coo<double, std::int32_t> make_coo(std::int64_t rows, std::int64_t cols,
                                   std::vector<std::tuple<int, int, double>> t) {
  coo<double, std::int32_t> a;
  a.rows = rows;
  a.cols = cols;
  for (auto [r, c, v] : t) {
    a.row_idx.push_back(r);
    a.col_idx.push_back(c);
    a.values.push_back(v);
  }
  return a;
}

}  // namespace

TEST(CooToCsr, SortsAndSumsDuplicatesInFileOrder) {
  auto a = make_coo(3, 4, {{2, 3, 1.0}, {0, 1, 2.0}, {2, 0, 3.0}, {2, 3, 1e-17}, {0, 1, -2.0}, {2, 3, -1.0}});
  auto c = cpu::coo_to_csr(a);
  validate(c);
  EXPECT_EQ(std::vector<int>(c.row_ptr.begin(), c.row_ptr.end()), (std::vector<int>{0, 1, 1, 3}));
  EXPECT_EQ(std::vector<int>(c.col_idx.begin(), c.col_idx.end()), (std::vector<int>{1, 0, 3}));
  EXPECT_EQ(c.values[0], 0.0);
  EXPECT_EQ(c.values[1], 3.0);
  // (1 + 1e-17) - 1 in file order is 0; another order would give 1e-17.
  EXPECT_EQ(c.values[2], (1.0 + 1e-17) + -1.0);
}

TEST(CooToCsr, RoundTripIsExactOnGeneratedMatrices) {
  for (const auto& g : test::generator_set()) {
    SCOPED_TRACE(g.name);
    auto coo_form = cpu::csr_to_coo(g.a);
    validate(coo_form);
    auto back = cpu::coo_to_csr(coo_form);
    EXPECT_TRUE(equal(back, g.a));
  }
}

TEST(CooToCsr, ReversedInputGivesCanonicalCsr) {
  auto a = test::random_csr(3000, 2000, 9.0, 5);
  auto t = cpu::csr_to_coo(a);
  std::reverse(t.row_idx.begin(), t.row_idx.end());
  std::reverse(t.col_idx.begin(), t.col_idx.end());
  std::reverse(t.values.begin(), t.values.end());
  EXPECT_TRUE(equal(cpu::coo_to_csr(t), a));
}

TEST(CooToCsr, RefusesNnzBeyondIndexType) {
  // Not allocated for real: validate() fires before, on a lying 64-bit shape.
  auto a = make_coo(3, 3, {{0, 0, 1.0}});
  a.rows = std::int64_t{1} << 40;
  expect_error([&] { cpu::coo_to_csr(a); }, errc::bad_input, "does not fit the index type");
}

TEST(ValidateCsr, CatchesEachBrokenInvariant) {
  auto good = test::random_csr(20, 30, 4.0, 1);
  validate(good);
  {
    auto a = good;
    a.row_ptr.pop_back();
    expect_error([&] { validate(a); }, errc::bad_input, "row_ptr has");
  }
  {
    auto a = good;
    a.row_ptr[0] = 1;
    expect_error([&] { validate(a); }, errc::bad_input, "row_ptr[0] = 1");
  }
  {
    auto a = good;
    std::swap(a.row_ptr[5], a.row_ptr[6]);
    if (a.row_ptr[5] == a.row_ptr[6]) a.row_ptr[5] += 1;
    expect_error([&] { validate(a); }, errc::bad_input, "decreases");
  }
  {
    auto a = good;
    a.row_ptr.back() += 1;
    expect_error([&] { validate(a); }, errc::bad_input, "ends at");
  }
  {
    auto a = good;
    a.values.pop_back();
    expect_error([&] { validate(a); }, errc::bad_input, "values has");
  }
  {
    auto a = good;
    a.col_idx[3] = 30;
    expect_error([&] { validate(a); }, errc::bad_input, "out of range");
  }
  {
    auto a = good;
    a.col_idx[3] = -1;
    expect_error([&] { validate(a); }, errc::bad_input, "out of range");
  }
  {
    auto a = good;
    std::int64_t r = 0;
    while (a.row_ptr[r + 1] - a.row_ptr[r] < 2) ++r;
    std::swap(a.col_idx[a.row_ptr[r]], a.col_idx[a.row_ptr[r] + 1]);
    expect_error([&] { validate(a); }, errc::bad_input, "not sorted");
  }
  {
    auto a = good;
    a.rows = -1;
    expect_error([&] { validate(a); }, errc::bad_input, "negative shape");
  }
}

TEST(ValidateCoo, CatchesEachBrokenInvariant) {
  auto good = make_coo(3, 4, {{0, 0, 1.0}, {2, 3, 2.0}});
  validate(good);
  {
    auto a = good;
    a.row_idx[1] = 3;
    expect_error([&] { validate(a); }, errc::bad_input, "row_idx[1] = 3");
  }
  {
    auto a = good;
    a.col_idx[0] = 4;
    expect_error([&] { validate(a); }, errc::bad_input, "col_idx[0] = 4");
  }
  {
    auto a = good;
    a.values.push_back(1.0);
    expect_error([&] { validate(a); }, errc::bad_input, "values has");
  }
  {
    auto a = good;
    a.col_idx.pop_back();
    expect_error([&] { validate(a); }, errc::bad_input, "col_idx has");
  }
}

TEST(Equal, ComparesBitsNotValues) {
  auto a = test::random_csr(10, 10, 3.0, 2);
  auto b = a;
  EXPECT_TRUE(equal(a, b));
  b.values[0] = -b.values[0];
  EXPECT_FALSE(equal(a, b));
  auto z = make_coo(1, 1, {{0, 0, 0.0}});
  auto nz = make_coo(1, 1, {{0, 0, -0.0}});
  EXPECT_FALSE(equal(z, nz));
}

// The worked example of specs/formats/csr.md and coo.md, arrays compared literally.
TEST(CsrSpec, WorkedExample) {
  auto a = make_coo(4, 5, {{2, 4, 40.0}, {0, 0, 10.0}, {3, 4, 50.0}, {2, 1, 30.0}, {0, 3, 20.0}, {2, 2, 0.0}});
  auto c = cpu::coo_to_csr(a);
  EXPECT_EQ(std::vector<int>(c.row_ptr.begin(), c.row_ptr.end()), (std::vector<int>{0, 2, 2, 5, 6}));
  EXPECT_EQ(std::vector<int>(c.col_idx.begin(), c.col_idx.end()), (std::vector<int>{0, 3, 1, 2, 4, 4}));
  EXPECT_EQ(std::vector<double>(c.values.begin(), c.values.end()), (std::vector<double>{10, 20, 30, 0, 40, 50}));
  auto t = cpu::csr_to_coo(c);
  EXPECT_EQ(std::vector<int>(t.row_idx.begin(), t.row_idx.end()), (std::vector<int>{0, 0, 2, 2, 2, 3}));
}
