// MBR on the GPU: CSR <-> MBR conversions against the CPU converters, byte for byte, and the
// bitmap-decoding SpMV / SMMV kernels against the CSR reference within its tolerance and
// against the CPU MBR reference bit for bit, on the generated and the shared real matrices.
// Every test skips on a machine without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "convert/cpu/mbr.hpp"
#include "convert/gpu/mbr.hpp"
#include "formats/device.hpp"
#include "io/matrix_file.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/cpu/spmv_mbr.hpp"
#include "kernels/gpu/spmv_mbr.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
using test::expect_error;

namespace {

using I = std::int32_t;

// The generated matrix whose x alone would take 2^28 elements: left out of the SpMV tests.
constexpr std::string_view huge_cols = "cols_near_2pow28";

mbr_params block(int r, int c) { return mbr_params{r, c, 0}; }

// Requests (resolved on the host before the GPU sees them): automatic, every bitmap width
// (1x1 and 2x2: 1 byte, 3x5 and 5x3: 2, 4x8: 4, 8x8, 7x9, 1x64, 64x1, 16x4: 8), sizes that
// divide no test matrix, and the extreme shapes.
const std::vector<mbr_params> requests = {block(0, 0), block(1, 1), block(2, 2),  block(3, 5),  block(5, 3), block(4, 8),
                                          block(8, 8), block(7, 9), block(1, 64), block(64, 1), block(16, 4)};

std::string describe(const mbr_params& p) { return std::to_string(p.block_rows) + "x" + std::to_string(p.block_cols); }

// The spec's worked example (specs/formats/mbr.md): an empty row, a stored zero, edge blocks.
csr<double, I> example() {
  csr<double, I> a;
  a.rows = a.cols = 6;
  a.row_ptr = {0, 3, 4, 4, 6, 8, 10};
  a.col_idx = {0, 2, 5, 1, 0, 3, 4, 5, 0, 5};
  a.values = {1, 2, 3, 4, 5, 6, 0, 7, 8, 9};
  return a;
}

template <class V>
bool same_bits(const std::vector<V>& a, const std::vector<V>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(V)) == 0);
}

// Both directions, every request: GPU CSR -> MBR equals the CPU's, and GPU MBR -> CSR of the
// CPU's MBR equals the CPU's inverse.
template <class V>
void check_conversions(const csr<double, I>& src, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()));
  const csr<V, I> a = test::cast_values<V>(src);
  const auto d = to_device(a);
  for (const mbr_params& req : requests) {
    SCOPED_TRACE(describe(req));
    const mbr<V> want = cpu::csr_to_mbr(a, req);
    EXPECT_TRUE(equal(to_host(gpu::csr_to_mbr(d, cpu::resolve_mbr_params(a, req), ctx)), want));
    EXPECT_TRUE(equal(to_host(gpu::mbr_to_csr(to_device(want), ctx)), cpu::mbr_to_csr(want)));
  }
}

// Y = alpha*A*X + beta*Y with k vectors (k = 1 through gpu::spmv) for (alpha, beta) = (1, 0)
// on a Y of NaN (which must not be read) and (-0.5, 2): every column within the CSR
// reference's tolerance, and all of Y the CPU MBR reference's bits.
template <class V>
void check_product(const csr<V, I>& a, const mbr<V>& m, const mbr<V, I, device>& dm, int k, gpu_context& ctx) {
  SCOPED_TRACE("k = " + std::to_string(k));
  const std::vector<V> x = test::test_vector<V>(a.cols * k, 1), y0 = test::test_vector<V>(a.rows * k, 2);
  const std::vector<V> nan(a.rows * k, std::numeric_limits<V>::quiet_NaN());
  device_array<V> dx, dy;
  dx.upload(x.data(), x.size());
  const double tol = cpu::spmv_tolerance<V>(test::max_row_length(a));
  for (const auto& [alpha, beta] : {std::pair{V(1), V(0)}, std::pair{V(-0.5), V(2)}}) {
    SCOPED_TRACE("alpha " + std::to_string(alpha) + " beta " + std::to_string(beta));
    const std::vector<V>& start = beta == V(0) ? nan : y0;
    dy.upload(start.data(), start.size());
    if (k == 1)
      gpu::spmv(dm, alpha, dx.data(), beta, dy.data(), ctx);
    else
      gpu::spmm(dm, k, alpha, dx.data(), beta, dy.data(), ctx);
    ctx.synchronize();
    const std::vector<V> y = test::download(dy);
    std::vector<V> ref = start;
    cpu::spmm(m, k, alpha, x.data(), beta, ref.data());
    EXPECT_TRUE(same_bits(y, ref)) << "the GPU kernel's bits differ from cpu::spmm(mbr)";
    std::vector<V> xl(a.cols), y0l(a.rows), yl(a.rows);
    for (int l = 0; l < k; ++l) {
      for (std::int64_t j = 0; j < a.cols; ++j) xl[j] = x[j * k + l];
      for (std::int64_t i = 0; i < a.rows; ++i) {
        y0l[i] = y0[i * k + l];
        yl[i] = y[i * k + l];
      }
      EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, xl.data(), beta, y0l.data(), yl.data()), tol) << "vector " << l;
    }
  }
}

template <class V>
void check_products(const csr<double, I>& src, const std::vector<int>& ks, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()));
  const csr<V, I> a = test::cast_values<V>(src);
  for (const mbr_params& req : requests) {
    SCOPED_TRACE(describe(req));
    const mbr<V> m = cpu::csr_to_mbr(a, req);
    const auto dm = to_device(m);
    for (int k : ks) check_product(a, m, dm, k, ctx);
  }
}

}  // namespace

// ---- conversions ---------------------------------------------------------------------

TEST(GpuMbrConvert, MatchesTheCpuOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  auto inputs = test::generator_set();
  inputs.push_back({"spec_example", example()});
  for (const auto& g : inputs) {
    SCOPED_TRACE(g.name);
    check_conversions<double>(g.a, ctx);
    check_conversions<float>(g.a, ctx);
  }
}

TEST(GpuMbrConvert, MatchesTheCpuOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    check_conversions<double>(in.a, ctx);
    check_conversions<float>(in.a, ctx);
  }
}

// Values travel as bits: -0.0, stored zeros and NaN payloads come back as they were.
TEST(GpuMbrConvert, KeepsSignedZerosAndNanPayloads) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  csr<double, I> a = test::random_csr(301, 257, 9.0, 5);
  ASSERT_GT(a.nnz(), 300);
  for (std::int64_t k = 0; k < a.nnz(); k += 7) a.values[k] = -0.0;
  for (std::int64_t k = 3; k < a.nnz(); k += 11) a.values[k] = 0.0;
  std::uint64_t payload = 0x7ff8000000000abcull;
  std::memcpy(&a.values[5], &payload, sizeof payload);
  check_conversions<double>(a, ctx);
  check_conversions<float>(a, ctx);
}

TEST(GpuMbrConvert, RefusesUnresolvedAndInvalidBlockSizes) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto d = to_device(example());
  test::expect_error([&] { gpu::csr_to_mbr(d, block(0, 4), ctx); }, errc::usage, "pass resolved parameters");
  test::expect_error([&] { gpu::csr_to_mbr(d, block(2, 0), ctx); }, errc::usage, "pass resolved parameters");
  test::expect_error([&] { gpu::csr_to_mbr(d, block(65, 1), ctx); }, errc::usage, "block_rows = 65 is out of range");
  test::expect_error([&] { gpu::csr_to_mbr(d, block(9, 8), ctx); }, errc::unsupported, "a bitmap holds at most 64");
  test::expect_error([&] { gpu::csr_to_mbr(d, mbr_params{4, 4, 1}, ctx); }, errc::usage, "need 2");
  // The GPU stays usable after refusing; a concrete bitmap_bytes is accepted as well as 0.
  EXPECT_TRUE(equal(to_host(gpu::csr_to_mbr(d, mbr_params{4, 4, 2}, ctx)), cpu::csr_to_mbr(example(), block(4, 4))));
}

// ---- SpMV and SMMV -------------------------------------------------------------------

TEST(GpuMbrSpmv, MatchesTheCpuOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  auto inputs = test::generator_set();
  inputs.push_back({"spec_example", example()});
  for (const auto& g : inputs) {
    if (g.name == huge_cols) continue;
    SCOPED_TRACE(g.name);
    check_products<double>(g.a, {1, 3, 8, 11}, ctx);
    check_products<float>(g.a, {1, 3, 8, 11}, ctx);
  }
}

TEST(GpuMbrSpmv, MatchesTheCpuOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    check_products<double>(in.a, {1, 4}, ctx);
    check_products<float>(in.a, {1, 4}, ctx);
  }
}

// Every instantiated kernel: each vector count 1..8 per group (and 9, 16, 17: several
// groups) with each bitmap width (1x8: 1 byte, 4x4: 2, 4x8: 4, 8x8: 8).
TEST(GpuMbrSpmv, EveryVectorCountAndBitmapWidth) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const csr<double, I> a = test::random_csr(203, 190, 11.0, 23);
  const csr<float, I> af = test::cast_values<float>(a);
  for (const mbr_params& req : {block(1, 8), block(4, 4), block(4, 8), block(8, 8)}) {
    SCOPED_TRACE(describe(req));
    const mbr<double> m = cpu::csr_to_mbr(a, req);
    const mbr<float> mf = cpu::csr_to_mbr(af, req);
    const auto dm = to_device(m);
    const auto dmf = to_device(mf);
    for (int k : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17}) {
      check_product(a, m, dm, k, ctx);
      check_product(af, mf, dmf, k, ctx);
    }
  }
}

TEST(GpuMbrSpmv, RefusesNoVectorsAndInvalidBlocks) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  auto dm = to_device(cpu::csr_to_mbr(example(), block(4, 4)));
  device_array<double> x(12), y(12);
  test::expect_error([&] { gpu::spmm(dm, 0, 1.0, x.data(), 0.0, y.data(), ctx); }, errc::usage, "k = 0 vectors");
  dm.params.bitmap_bytes = 4;
  test::expect_error([&] { gpu::spmv(dm, 1.0, x.data(), 0.0, y.data(), ctx); }, errc::usage, "not a valid mbr block");
}
