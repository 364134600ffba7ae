// HYB on the GPU: CSR <-> HYB conversions byte for byte against the CPU converters, and the
// GPU SpMV (ELL thread per row + COO tail segmented sum with atomics) against the CSR
// reference. Every test skips on a machine without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "convert/cpu/hyb.hpp"
#include "convert/gpu/hyb.hpp"
#include "formats/device.hpp"
#include "io/matrix_file.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/gpu/spmv_hyb.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;

namespace {

// The generated matrix whose x alone would take 2^28 elements: left out of the SpMV tests.
constexpr std::string_view huge_cols = "cols_near_2pow28";

// More than 4096 rows (so the automatic width is not 0) and over 10^5 entries: many thread
// blocks, a tail spread over many warps, rows of 2000 entries (tail pieces crossing warps),
// empty rows and stored zeros.
csr<double, std::int32_t> large_mixed() {
  std::mt19937_64 rng(3);
  csr<double, std::int32_t> a;
  a.rows = 20000;
  a.cols = 20000;
  a.row_ptr.push_back(0);
  for (std::int64_t r = 0; r < a.rows; ++r) {
    const int len = r % 1500 == 7 ? 2000 : rng() % 5 == 0 ? 0 : static_cast<int>(3 + rng() % 6);
    const int stride = len > 0 ? static_cast<int>(a.cols) / len : 1;
    for (int k = 0; k < len; ++k) {
      a.col_idx.push_back(k * stride + static_cast<int>(rng() % stride));
      a.values.push_back(k % 17 == 3 ? 0.0 : static_cast<double>(static_cast<int>(rng() % 2001) - 1000) / 64.0);
    }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col_idx.size()));
  }
  return a;
}

// Both directions: GPU CSR -> HYB equals the CPU's for the resolved request, and GPU HYB ->
// CSR of the CPU's HYB equals the CPU's inverse (the input CSR). A request the CPU refuses
// is refused by the GPU with the same category and message.
template <class V>
void check_conversions(const csr<V, std::int32_t>& a, std::int64_t request, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()) + " ell_width request " + std::to_string(request));
  hyb_params p;
  try {
    p = cpu::resolve_hyb_params(a, {request});
  } catch (const error& e) {
    test::expect_error([&] { gpu::csr_to_hyb(to_device(a), {request}, ctx); }, e.code(), e.what());
    return;
  }
  const hyb<V> expected = cpu::csr_to_hyb(a, p);
  const hyb<V> got = to_host(gpu::csr_to_hyb(to_device(a), p, ctx));
  EXPECT_TRUE(equal(got, expected));
  const csr<V, std::int32_t> back = to_host(gpu::hyb_to_csr(to_device(expected), ctx));
  EXPECT_TRUE(equal(back, cpu::hyb_to_csr(expected)));
  EXPECT_TRUE(equal(back, a));
}

// (alpha, beta) = (1, 0) with y full of NaN (which must not be read) and (-0.5, 2), within
// the reference's tolerance.
template <class V>
void check_spmv(const csr<double, std::int32_t>& src, std::int64_t request, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()) + " ell_width request " + std::to_string(request));
  const csr<V, std::int32_t> a = test::cast_values<V>(src);
  const auto d = to_device(cpu::csr_to_hyb(a, {request}));
  const std::vector<V> x = test::test_vector<V>(a.cols, 1), y0 = test::test_vector<V>(a.rows, 2);
  const std::vector<V> nan(a.rows, std::numeric_limits<V>::quiet_NaN());
  device_array<V> dx, dy;
  dx.upload(x.data(), x.size());
  const double tol = cpu::spmv_tolerance<V>(test::max_row_length(a));
  for (const auto& [alpha, beta] : {std::pair{V(1), V(0)}, std::pair{V(-0.5), V(2)}}) {
    dy.upload(beta == V(0) ? nan.data() : y0.data(), a.rows);
    gpu::spmv(d, alpha, dx.data(), beta, dy.data(), ctx);
    ctx.synchronize();
    std::vector<V> y(a.rows);
    dy.download(y.data());
    EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data()), tol)
        << "alpha " << alpha << " beta " << beta;
  }
}

std::vector<test::generated> generated_inputs() {
  auto g = test::generator_set();
  g.push_back({"large_mixed_20000", large_mixed()});
  return g;
}

}  // namespace

// Widths: automatic (0 for the generator's small matrices: all COO), 1, 2, 3, 8 and one
// beyond the longest row (ELL only, with padding).
TEST(GpuHybConvert, MatchesTheCpuOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  for (const auto& g : generated_inputs()) {
    SCOPED_TRACE(g.name);
    const auto f = test::cast_values<float>(g.a);
    for (std::int64_t w : {std::int64_t{0}, std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, std::int64_t{8},
                           test::max_row_length(g.a) + 1}) {
      check_conversions(g.a, w, ctx);
      check_conversions(f, w, ctx);
    }
  }
}

TEST(GpuHybConvert, MatchesTheCpuOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    for (std::int64_t w : {0, 1, 4}) check_conversions(in.a, w, ctx);
    check_conversions(test::cast_values<float>(in.a), 0, ctx);
  }
}

TEST(GpuHybConvert, RefusesBadWidthsLikeTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto a = test::random_csr(700, 300, 2.0, 4);
  const auto d = to_device(a);
  test::expect_error([&] { gpu::csr_to_hyb(d, {-2}, ctx); }, errc::usage, "ell_width = -2 is negative");
  // Beyond the container cap 64 * (nnz + rows + 1) + 2^20: the CPU's message.
  const std::int64_t w = ell_slot_cap(a.nnz(), a.rows) / a.rows + 1;
  std::string cpu_what;
  try {
    cpu::resolve_hyb_params(a, {w});
    ADD_FAILURE() << "the CPU accepted width " << w;
  } catch (const error& e) {
    cpu_what = e.what();
  }
  test::expect_error([&] { gpu::csr_to_hyb(d, {w}, ctx); }, errc::usage, cpu_what);
  // A resolved width of 0 is an empty ELL part, not the automatic choice.
  const auto h = to_host(gpu::csr_to_hyb(d, {0}, ctx));
  EXPECT_EQ(h.params.ell_width, 0);
  EXPECT_EQ(h.coo.nnz(), a.nnz());
}

TEST(GpuHybSpmv, MatchesTheReferenceOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  for (const auto& g : generated_inputs()) {
    if (g.name == huge_cols) continue;
    SCOPED_TRACE(g.name);
    // 0: the automatic width (all COO below 4096 rows); 2 and 5: both parts; beyond the
    // longest row: ELL only, where the container cap allows that much padding (the
    // conversion test checks the refusal).
    const std::int64_t ell_only = test::max_row_length(g.a) + 1;
    for (std::int64_t w : {std::int64_t{0}, std::int64_t{2}, std::int64_t{5}, ell_only}) {
      if (g.a.rows > 0 && w > ell_slot_cap(g.a.nnz(), g.a.rows) / g.a.rows) continue;
      check_spmv<double>(g.a, w, ctx);
      check_spmv<float>(g.a, w, ctx);
    }
  }
}

TEST(GpuHybSpmv, MatchesTheReferenceOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    for (std::int64_t w : {0, 2}) {
      check_spmv<double>(in.a, w, ctx);
      check_spmv<float>(in.a, w, ctx);
    }
  }
}
