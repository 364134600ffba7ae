// BCSR on the GPU: CSR <-> BCSR conversions byte for byte against the CPU converters (both
// directions, generated and real matrices, automatic and explicit block sizes, special
// values, refusals), and the block-row SpMV kernel against the CSR reference for every
// dispatched block size. Every test skips on a machine without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "convert/cpu/bcsr.hpp"
#include "convert/gpu/bcsr.hpp"
#include "formats/device.hpp"
#include "io/matrix_file.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/gpu/spmv.hpp"
#include "kernels/gpu/spmv_bcsr.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
using test::expect_error;

namespace {

// The generated matrix whose x alone would take 2^28 elements: left out of the SpMV tests.
constexpr std::string_view huge_cols = "cols_near_2pow28";

// Automatic, one free side, every compile-time size of the kernel (squares 1..4, 6, 8;
// r in that set with another c) and the generic kernel (16 x 16, 16 x 1, 5 x 7).
const std::vector<bcsr_params> requests = {{0, 0},   {1, 1},  {2, 2},  {3, 3}, {4, 4}, {6, 6}, {8, 8},
                                           {16, 16}, {1, 16}, {16, 1}, {2, 3}, {5, 7}, {0, 4}, {3, 0}};
const std::vector<bcsr_params> real_requests = {{0, 0}, {4, 4}, {3, 5}};

std::string describe(const bcsr_params& p) {
  return "block " + std::to_string(p.block_rows) + " x " + std::to_string(p.block_cols);
}

// The block size is resolved on the host (the CPU's exact rule), as a GPU caller does; the
// GPU conversion of the CSR must then equal the CPU's, and the GPU conversion back of the
// CPU's BCSR must equal the CPU's CSR. A size the CPU refuses, the GPU refuses alike.
template <class V>
void check_conversions(const csr<V, std::int32_t>& a, const bcsr_params& request, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()) + " " + describe(request));
  const bcsr_params p = cpu::resolve_bcsr_params(a, request);
  bcsr<V> want;
  try {
    want = cpu::csr_to_bcsr(a, p);
  } catch (const error& e) {
    test::expect_error([&] { gpu::csr_to_bcsr(to_device(a), p, ctx); }, e.code(), e.what());
    return;
  }
  const auto got = to_host(gpu::csr_to_bcsr(to_device(a), p, ctx));
  EXPECT_TRUE(equal(got, want));
  EXPECT_TRUE(equal(to_host(gpu::bcsr_to_csr(to_device(want), ctx)), cpu::bcsr_to_csr(want)));
}

// (1, 0) on a y full of NaN (beta == 0 must not read y) and (-0.5, 2), within the CSR
// reference's tolerance.
template <class V>
void check_spmv(const csr<V, std::int32_t>& a, const bcsr<V>& b, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()) + " " + describe(b.params));
  const auto d = to_device(b);
  const std::vector<V> x = test::test_vector<V>(a.cols, 1), y0 = test::test_vector<V>(a.rows, 2);
  const std::vector<V> nan(a.rows, std::numeric_limits<V>::quiet_NaN());
  device_array<V> dx, dy;
  dx.upload(x.data(), x.size());
  const double tol = cpu::spmv_tolerance<V>(test::max_row_length(a));
  for (const auto& [alpha, beta] : {std::pair<V, V>{1, 0}, std::pair<V, V>{-0.5, 2}}) {
    dy.upload(beta == V(0) ? nan.data() : y0.data(), a.rows);
    gpu::spmv(d, alpha, dx.data(), beta, dy.data(), ctx);
    ctx.synchronize();
    const auto y = test::download(dy);
    EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data()), tol)
        << "alpha " << alpha << " beta " << beta;
  }
}

// Canonical CSR from per-row (column, value) lists given in column order.
csr<double, std::int32_t> make_csr(std::int64_t cols, const std::vector<std::vector<std::pair<int, double>>>& rows) {
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

}  // namespace

// ---- conversions ---------------------------------------------------------------------

TEST(GpuBcsrConvert, MatchesTheCpuOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  for (const auto& g : test::generator_set()) {
    SCOPED_TRACE(g.name);
    const auto f = test::cast_values<float>(g.a);
    for (const auto& p : requests) {
      check_conversions(g.a, p, ctx);
      check_conversions(f, p, ctx);
    }
  }
}

TEST(GpuBcsrConvert, MatchesTheCpuOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    const auto f = test::cast_values<float>(in.a);
    for (const auto& p : real_requests) {
      check_conversions(in.a, p, ctx);
      check_conversions(f, p, ctx);
    }
  }
}

// Every ordering pass of convert/gpu/block_rows.cuh (see test::block_order_passes), with
// stored zeros: the squares up to 8 x 8 and 2 x 3 count, sort, merge or sort by slots, 16 x 16
// searches every entry (more than 64 positions a block), 5 x 7 and 6 x 6 merge the wide block
// rows, and 16 x 4 sorts those of 320 to 333 entries by 16 slots (order_slot_rows).
TEST(GpuBcsrConvert, EveryOrderingPass) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto a = test::block_order_passes();
  const auto f = test::cast_values<float>(a);
  std::vector<bcsr_params> passes = requests;
  passes.push_back({16, 4});
  for (const auto& p : passes) {
    check_conversions(a, p, ctx);
    check_conversions(f, p, ctx);
  }
}

// Stored +0.0 (listed in stored_zeros), -0.0, a NaN with a payload, infinities and a
// denormal: only +0.0 collides with fill, every other value is recognised by its bits.
TEST(GpuBcsrConvert, KeepsStoredZerosNegativeZerosAndSpecialValues) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const double nan_payload = std::bit_cast<double>(std::uint64_t{0x7ff8000000000123});
  const double inf = std::numeric_limits<double>::infinity();
  const auto a = make_csr(7, {{{3, 0.0}, {6, 1.5}},
                              {},
                              {{0, -0.0}, {4, nan_payload}},
                              {{1, inf}, {2, -inf}, {3, 0.0}},
                              {{2, std::numeric_limits<double>::denorm_min()}, {5, 0.0}}});
  const auto f = test::cast_values<float>(a);
  for (const auto& p : requests) {
    check_conversions(a, p, ctx);
    check_conversions(f, p, ctx);
  }
  const auto b = cpu::csr_to_bcsr(a, {2, 2});
  ASSERT_EQ(b.stored_zeros.size(), 3u);  // the test holds stored zeros
  EXPECT_TRUE(equal(to_host(gpu::csr_to_bcsr(to_device(a), {2, 2}, ctx)), b));
}

// The matrix of BcsrRefuses.FillBeyondTheContainerCap: one row with an entry every 16
// columns, so 16 x 16 blocks store 256 values per entry; 5467 entries fit the limit, 5468
// do not.
TEST(GpuBcsrConvert, RefusesFillBeyondTheCapWithTheCpuMessage) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
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
  const auto fits = make(5467);
  EXPECT_TRUE(equal(to_host(gpu::csr_to_bcsr(to_device(fits), {16, 16}, ctx)), cpu::csr_to_bcsr(fits, {16, 16})));
  test::expect_error([&] { gpu::csr_to_bcsr(to_device(make(5468)), {16, 16}, ctx); }, errc::unsupported,
               "bcsr: 16 x 16 blocks need 1399808 values for 5468 entries, beyond the limit of 1399616 values");
  // The context stays usable after a refusal.
  EXPECT_TRUE(equal(to_host(gpu::csr_to_bcsr(to_device(fits), {16, 1}, ctx)), cpu::csr_to_bcsr(fits, {16, 1})));
}

TEST(GpuBcsrConvert, RequiresAResolvedBlockSize) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto d = to_device(test::random_csr(20, 20, 3.0, 5));
  test::expect_error([&] { gpu::csr_to_bcsr(d, {0, 4}, ctx); }, errc::usage, "block_rows = 0 is out of range [1, 16]");
  test::expect_error([&] { gpu::csr_to_bcsr(d, {4, 17}, ctx); }, errc::usage, "block_cols = 17 is out of range [1, 16]");
}

// ---- SpMV -------------------------------------------------------------------------------

TEST(GpuBcsrSpmv, MatchesTheCpuReferenceOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  for (const auto& g : test::generator_set()) {
    if (g.name == huge_cols) continue;
    SCOPED_TRACE(g.name);
    const auto f = test::cast_values<float>(g.a);
    for (const auto& p : requests) {
      check_spmv(g.a, cpu::csr_to_bcsr(g.a, p), ctx);
      check_spmv(f, cpu::csr_to_bcsr(f, p), ctx);
    }
  }
}

TEST(GpuBcsrSpmv, MatchesTheCpuReferenceOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    const auto f = test::cast_values<float>(in.a);
    for (const auto& p : real_requests) {
      check_spmv(in.a, cpu::csr_to_bcsr(in.a, p), ctx);
      check_spmv(f, cpu::csr_to_bcsr(f, p), ctx);
    }
  }
}

TEST(GpuBcsrSpmv, LanesPerBlockRowFollowTheMeanBlockCount) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  EXPECT_EQ(gpu::bcsr_lanes_per_block_row(0, 0), 1);
  EXPECT_EQ(gpu::bcsr_lanes_per_block_row(100, 100), 1);   // one block per block row
  EXPECT_EQ(gpu::bcsr_lanes_per_block_row(100, 101), 2);   // mean just above 1: rounded up
  EXPECT_EQ(gpu::bcsr_lanes_per_block_row(100, 500), 8);   // mean 5 -> 8
  EXPECT_EQ(gpu::bcsr_lanes_per_block_row(100, 999), 16);  // mean 9.99 -> 16
  EXPECT_EQ(gpu::bcsr_lanes_per_block_row(100, 1000), 8);  // mean 10: CSR's rule, 8
  EXPECT_EQ(gpu::bcsr_lanes_per_block_row(100, 3400), 16);  // mean 34 -> 16
  EXPECT_EQ(gpu::bcsr_lanes_per_block_row(100, 6400), 32);  // a warp from 64
  EXPECT_EQ(gpu::bcsr_lanes_per_block_row(100, 1000000), 32);  // a warp at most
  for (const std::int64_t n : {1000, 2048, 6400, 123456})
    EXPECT_EQ(gpu::bcsr_lanes_per_block_row(100, n), gpu::csr_vector_lanes(100, n)) << n;
}
