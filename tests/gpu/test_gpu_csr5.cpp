// CSR5 on the GPU: CSR <-> CSR5 conversions byte for byte against the CPU converters, and the
// GPU SpMV (warp per tile for omega = 32, thread per tile otherwise) against the CSR
// reference. Every test skips on a machine without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "convert/cpu/csr5.hpp"
#include "convert/gpu/csr5.hpp"
#include "formats/device.hpp"
#include "io/matrix_file.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/gpu/spmv_csr5.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;

namespace {

// The generated matrix whose x alone would take 2^28 elements: left out of the SpMV tests.
constexpr std::string_view huge_cols = "cols_near_2pow28";

// Row r gets lengths[r] strictly increasing columns (a stride through [0, cols)) and
// values exactly representable in float.
csr<double, std::int32_t> from_lengths(const std::vector<int>& lengths, int cols) {
  csr<double, std::int32_t> a;
  a.rows = static_cast<std::int64_t>(lengths.size());
  a.cols = cols;
  a.row_ptr.push_back(0);
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    const int len = lengths[r], stride = len > 0 ? cols / len : 1;
    for (int k = 0; k < len; ++k) {
      a.col_idx.push_back(k * stride + static_cast<int>(r % stride));
      a.values.push_back(std::ldexp(static_cast<double>((k * 131 + static_cast<int>(r) * 17) % 257) - 128.0, -5));
    }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col_idx.size()));
  }
  return a;
}

// Tile edges for omega 32 x sigma 4 (T = 128): leading empty rows, a row filling tile 0
// exactly, rows ending and starting on tile boundaries, a row over several tiles followed
// by an empty row, 10^5 empty rows inside one tile (empty_offset far beyond a tile), a row
// running into the incomplete tile, trailing empty rows.
csr<double, std::int32_t> tile_edges() {
  std::vector<int> len = {0, 0, 0, 128, 5, 0, 0, 123, 300, 0, 1, 1, 1};
  len.insert(len.end(), 100000, 0);
  for (int v : {7, 3, 0, 2, 700, 0, 0, 0}) len.push_back(v);
  return from_lengths(len, 1000);
}

// Over 10^5 entries: many thread blocks and grid-stride rounds, runs of empty rows, rows of
// 3000 entries crossing many tiles.
csr<double, std::int32_t> large_mixed() {
  std::mt19937_64 rng(5);
  std::vector<int> len(30000);
  for (std::size_t r = 0; r < len.size(); ++r)
    len[r] = (r / 600) % 5 == 2 || rng() % 3 == 0 ? 0 : r % 997 == 0 ? 3000 : static_cast<int>(rng() % 16);
  return from_lengths(len, 20000);
}

// Rows of 0 to 3 entries (mean 1.6): with sigma 4 and 8 a lane closes several rows, so the
// warp kernel stages its rows' sums (spmv_csr5.cu, stage_sigma), empty rows included.
csr<double, std::int32_t> short_rows() {
  std::mt19937_64 rng(7);
  std::vector<int> len(20000);
  for (auto& l : len) l = rng() % 5 == 0 ? 0 : static_cast<int>(rng() % 3) + 1;
  return from_lengths(len, 5000);
}

std::vector<test::generated> edge_matrices() {
  // Fewer entries than most parameter sets' tile: only an incomplete tile, after empty rows.
  const csr<double, std::int32_t> incomplete_only = from_lengths({0, 0, 5, 0, 3, 0}, 40);
  return {{"tile_edges", tile_edges()},
          {"large_mixed", large_mixed()},
          {"incomplete_only", incomplete_only},
          {"short_rows", short_rows()}};
}

std::string describe(const csr5_params& p) {
  return "omega " + std::to_string(p.omega) + " sigma " + std::to_string(p.sigma);
}

// Requests resolved for `a`: the GPU and CPU automatic choices, then explicit sizes: one
// entry per tile, odd sizes, the GPU width with the shortest and the tallest tiles (1- and
// 3-word descriptors) and the widest tile.
template <class V>
std::vector<csr5_params> parameter_sets(const csr<V, std::int32_t>& a) {
  return {cpu::resolve_csr5_params(a, {}, csr5_target::gpu),
          cpu::resolve_csr5_params(a, {}, csr5_target::cpu),
          {1, 1},
          {3, 5},
          {32, 1},
          {32, 4},
          {32, 8},
          {32, 16},
          {32, 64},
          {64, 64}};
}

// Both directions: GPU CSR -> CSR5 equals the CPU's, and GPU CSR5 -> CSR of the CPU's CSR5
// equals the CPU's inverse (the input CSR).
template <class V>
void check_conversions(const csr<V, std::int32_t>& a, const csr5_params& p, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()) + " " + describe(p));
  const csr5<V> expected = cpu::csr_to_csr5(a, p);
  const csr5<V> got = to_host(gpu::csr_to_csr5(to_device(a), p, ctx));
  EXPECT_TRUE(equal(got, expected));
  const csr<V, std::int32_t> back = to_host(gpu::csr5_to_csr(to_device(expected), ctx));
  EXPECT_TRUE(equal(back, cpu::csr5_to_csr(expected)));
  EXPECT_TRUE(equal(back, a));
}

// (alpha, beta) = (1, 0) with y full of NaN (which must not be read) and (-0.5, 2), within
// the reference's tolerance.
template <class V>
void check_spmv(const csr<double, std::int32_t>& src, const csr5_params& p, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()) + " " + describe(p));
  const csr<V, std::int32_t> a = test::cast_values<V>(src);
  const auto d = to_device(cpu::csr_to_csr5(a, p));
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

}  // namespace

TEST(GpuCsr5Convert, MatchesTheCpuOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  auto inputs = test::generator_set();
  for (auto& m : edge_matrices()) inputs.push_back(std::move(m));
  for (const auto& g : inputs) {
    SCOPED_TRACE(g.name);
    const auto f = test::cast_values<float>(g.a);
    for (const auto& p : parameter_sets(g.a)) {
      check_conversions(g.a, p, ctx);
      check_conversions(f, p, ctx);
    }
  }
}

TEST(GpuCsr5Convert, MatchesTheCpuOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    const auto gpu_default = cpu::resolve_csr5_params(in.a, {});
    for (const csr5_params& p : {gpu_default, cpu::resolve_csr5_params(in.a, {}, csr5_target::cpu), csr5_params{32, 64},
                                 csr5_params{3, 5}})
      check_conversions(in.a, p, ctx);
    check_conversions(test::cast_values<float>(in.a), gpu_default, ctx);
  }
}

// The thesis's example (Figure 6.1, omega = sigma = 4): the GPU writes the arrays of
// specs/formats/csr5.md, "-0" tile pointer and empty_offset included.
TEST(GpuCsr5Convert, ThesisExampleArrays) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const int dense[8][8] = {{1, 0, 2, 3, 0, 0, 4, 5}, {0, 1, 0, 2, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0},
                           {1, 2, 3, 4, 5, 0, 6, 7}, {0, 1, 0, 2, 0, 3, 0, 0}, {1, 2, 0, 0, 0, 0, 0, 0},
                           {0, 1, 2, 3, 4, 5, 6, 7}, {1, 2, 3, 4, 5, 6, 7, 8}};
  csr<double, std::int32_t> a;
  a.rows = a.cols = 8;
  a.row_ptr.push_back(0);
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 8; ++c)
      if (dense[r][c] != 0) {
        a.col_idx.push_back(c);
        a.values.push_back(dense[r][c]);
      }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col_idx.size()));
  }
  const csr5<double> c = to_host(gpu::csr_to_csr5(to_device(a), {4, 4}, ctx));
  validate(c);
  auto vec = [](const auto& arr) { return std::vector<std::uint32_t>(arr.begin(), arr.end()); };
  EXPECT_EQ(vec(c.tile_ptr), (std::vector<std::uint32_t>{0x80000000u, 4, 7, 8}));
  EXPECT_EQ(vec(c.tile_desc), (std::vector<std::uint32_t>{64, 657, 3, 259, 720, 3, 275, 4}));
  EXPECT_EQ(vec(c.tile_desc_offset_ptr), (std::vector<std::uint32_t>{0, 4, 4}));
  EXPECT_EQ(vec(c.tile_desc_offset), (std::vector<std::uint32_t>{0, 1, 3, 4}));
  EXPECT_EQ(vec(c.col_idx), (std::vector<std::uint32_t>{0, 7, 1, 6, 2, 1, 2, 7, 3, 3, 3, 1, 6, 0, 4, 3, 5,
                                                        2, 6, 2, 0, 3, 7, 3, 1, 4, 0, 4, 1, 5, 1, 5, 6, 7}));
}

TEST(GpuCsr5Convert, RefusesUnresolvedParametersAndBadInput) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto a = to_device(test::random_csr(50, 40, 3.0, 9));
  test::expect_error([&] { gpu::csr_to_csr5(a, {0, 4}, ctx); }, errc::usage, "omega = 0 is not in [1, 64]");
  test::expect_error([&] { gpu::csr_to_csr5(a, {32, 65}, ctx); }, errc::usage, "sigma = 65 is not in [1, 64]");
  auto broken = to_device(test::random_csr(50, 40, 3.0, 9));
  broken.values.resize(broken.values.size() - 1);
  test::expect_error([&] { gpu::csr_to_csr5(broken, {32, 4}, ctx); }, errc::bad_input,
                     "csr5: the input CSR's row_ptr/col_idx/values lengths do not match");
  // The context stays usable.
  EXPECT_TRUE(equal(to_host(gpu::csr_to_csr5(a, {32, 4}, ctx)), cpu::csr_to_csr5(to_host(a), {32, 4})));
}

TEST(GpuCsr5Spmv, MatchesTheReferenceOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  auto inputs = test::generator_set();
  for (auto& m : edge_matrices()) inputs.push_back(std::move(m));
  for (const auto& g : inputs) {
    if (g.name == huge_cols) continue;
    SCOPED_TRACE(g.name);
    for (const auto& p : parameter_sets(g.a)) {
      check_spmv<double>(g.a, p, ctx);
      check_spmv<float>(g.a, p, ctx);
    }
  }
}

TEST(GpuCsr5Spmv, MatchesTheReferenceOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    for (const csr5_params& p : {cpu::resolve_csr5_params(in.a, {}), csr5_params{32, 64}, csr5_params{4, 16}}) {
      check_spmv<double>(in.a, p, ctx);
      check_spmv<float>(in.a, p, ctx);
    }
  }
}
