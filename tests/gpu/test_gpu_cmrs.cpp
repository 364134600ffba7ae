// CMRS on the GPU: CSR <-> CMRS conversions against the CPU converters, byte for byte, the
// warp-per-strip SpMV kernels (basic and sec. 6.7 modified) against the CSR reference within
// its tolerance and against the CPU CMRS reference bit for bit, and the tile kernel against the
// CSR reference, on the generated and the shared real matrices. Every test but the kernel rule's
// skips on a machine without a GPU.
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

#include "convert/cpu/cmrs.hpp"
#include "convert/gpu/cmrs.hpp"
#include "formats/device.hpp"
#include "io/matrix_file.hpp"
#include "kernels/cpu/spmv_cmrs.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/gpu/spmv_cmrs.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
using test::expect_error;

namespace {

using I = std::int32_t;

// The generated matrix whose x alone would take 2^28 elements: left out of the SpMV tests.
constexpr std::string_view huge_cols = "cols_near_2pow28";

cmrs_params P(int height, int modulo, bool sort_columns = false) {
  cmrs_params p;
  p.height = height;
  p.modulo = modulo;
  p.sort_columns = sort_columns;
  return p;
}

// Requests (resolved on the host before the GPU sees them): automatic, the edges of height,
// column order, and the sec. 6.7 layout with every modulo (height * modulo == 32 exactly
// included, and heights that divide nothing).
const std::vector<cmrs_params> requests = {P(0, 0),  P(1, 32), P(16, 32), P(3, 32, true), P(16, 0, true), P(0, 8),
                                           P(16, 2), P(2, 16), P(4, 8),   P(5, 8),        P(16, 4),       P(7, 16)};

std::string describe(const cmrs_params& p) {
  return "height " + std::to_string(p.height) + " modulo " + std::to_string(p.modulo) +
         (p.sort_columns ? " sorted" : "");
}

// The spec's worked example (specs/formats/cmrs.md): an empty row, a stored zero.
csr<double, I> example() {
  csr<double, I> a;
  a.rows = a.cols = 6;
  a.row_ptr = {0, 2, 5, 5, 8, 10, 13};
  a.col_idx = {0, 2, 1, 3, 5, 0, 2, 4, 1, 5, 0, 1, 2};
  a.values = {1, 2, 3, 4, 5, 6, 0, 7, 8, 9, 10, 11, 12};
  return a;
}

template <class V>
bool same_bits(const std::vector<V>& a, const std::vector<V>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(V)) == 0);
}

// Both directions, every request: GPU CSR -> CMRS equals the CPU's, and GPU CMRS -> CSR of the
// CPU's CMRS equals the CPU's inverse.
template <class V>
void check_conversions(const csr<double, I>& src, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()));
  const csr<V, I> a = test::cast_values<V>(src);
  const auto d = to_device(a);
  for (const cmrs_params& req : requests) {
    SCOPED_TRACE(describe(req));
    const cmrs<V> want = cpu::csr_to_cmrs(a, req);
    EXPECT_TRUE(equal(to_host(gpu::csr_to_cmrs(d, cpu::resolve_cmrs_params(a, req), ctx)), want));
    EXPECT_TRUE(equal(to_host(gpu::cmrs_to_csr(to_device(want), ctx)), cpu::cmrs_to_csr(want)));
  }
}

// y = alpha*A*x + beta*y for (alpha, beta) = (1, 0) on a y of NaN (which must not be read) and
// (-0.5, 2) by the strip kernels: within the CSR reference's tolerance, and the CPU CMRS
// reference's bits; and by the tile kernel where the layout allows it (basic, CSR order):
// within the tolerance.
template <class V>
void check_spmv_of(const csr<V, I>& a, const cmrs<V>& m, gpu_context& ctx) {
  const auto dm = to_device(m);
  const std::vector<V> x = test::test_vector<V>(a.cols, 1), y0 = test::test_vector<V>(a.rows, 2);
  const std::vector<V> nan(a.rows, std::numeric_limits<V>::quiet_NaN());
  device_array<V> dx, dy;
  dx.upload(x.data(), x.size());
  const double tol = cpu::spmv_tolerance<V>(test::max_row_length(a));
  for (const auto& [alpha, beta] : {std::pair{V(1), V(0)}, std::pair{V(-0.5), V(2)}}) {
    SCOPED_TRACE("alpha " + std::to_string(alpha) + " beta " + std::to_string(beta));
    const std::vector<V>& start = beta == V(0) ? nan : y0;
    dy.upload(start.data(), start.size());
    gpu::spmv(dm, alpha, dx.data(), beta, dy.data(), ctx, gpu::cmrs_kernel::strips);
    ctx.synchronize();
    const std::vector<V> y = test::download(dy);
    EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data()), tol);
    std::vector<V> ref = start;
    cpu::spmv(m, alpha, x.data(), beta, ref.data());
    EXPECT_TRUE(same_bits(y, ref)) << "the GPU kernel's bits differ from cpu::spmv(cmrs)";
  }
  if (gpu::cmrs_tile_layout(m.params)) {
    SCOPED_TRACE("tile kernel");
    test::expect_spmv_matches(a, ctx, [&](V alpha, const V* xd, V beta, V* yd) {
      gpu::spmv(dm, alpha, xd, beta, yd, ctx, gpu::cmrs_kernel::tiles);
    });
  }
}

template <class V>
void check_spmv(const csr<double, I>& src, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()));
  const csr<V, I> a = test::cast_values<V>(src);
  for (const cmrs_params& req : requests) {
    SCOPED_TRACE(describe(req));
    check_spmv_of(a, cpu::csr_to_cmrs(a, req), ctx);
  }
}

}  // namespace

// ---- conversions ---------------------------------------------------------------------

TEST(GpuCmrsConvert, MatchesTheCpuOnGeneratedMatrices) {
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

TEST(GpuCmrsConvert, MatchesTheCpuOnRealMatrices) {
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
TEST(GpuCmrsConvert, KeepsSignedZerosAndNanPayloads) {
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

TEST(GpuCmrsConvert, RefusesUnresolvedParametersAndTooManyColumns) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto d = to_device(example());
  test::expect_error([&] { gpu::csr_to_cmrs(d, P(0, 32), ctx); }, errc::usage, "pass resolved parameters");
  test::expect_error([&] { gpu::csr_to_cmrs(d, P(4, 0), ctx); }, errc::usage, "pass resolved parameters");
  test::expect_error([&] { gpu::csr_to_cmrs(d, P(17, 32), ctx); }, errc::usage, "height = 17 is out of range");
  test::expect_error([&] { gpu::csr_to_cmrs(d, P(4, 4), ctx); }, errc::usage, "height * modulo = 4 * 4 is below 32");
  test::expect_error([&] { gpu::csr_to_cmrs(d, P(16, 8, true), ctx); }, errc::usage, "sort_columns");
  csr<double, I> wide;
  wide.rows = 2;
  wide.cols = cmrs_max_cols + 1;
  wide.row_ptr = {0, 0, 0};
  std::string cpu_what;
  try {
    cpu::csr_to_cmrs(wide, P(4, 32));
  } catch (const error& e) {
    cpu_what = e.what();
  }
  ASSERT_FALSE(cpu_what.empty());
  test::expect_error([&] { gpu::csr_to_cmrs(to_device(wide), P(4, 32), ctx); }, errc::unsupported, cpu_what);
  // The GPU stays usable after refusing.
  EXPECT_TRUE(equal(to_host(gpu::csr_to_cmrs(d, P(4, 32), ctx)), cpu::csr_to_cmrs(example(), P(4, 32))));
}

// ---- SpMV ------------------------------------------------------------------------------

TEST(GpuCmrsSpmv, MatchesTheCpuOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  auto inputs = test::generator_set();
  inputs.push_back({"spec_example", example()});
  for (const auto& g : inputs) {
    if (g.name == huge_cols) continue;
    SCOPED_TRACE(g.name);
    check_spmv<double>(g.a, ctx);
    check_spmv<float>(g.a, ctx);
  }
}

TEST(GpuCmrsSpmv, MatchesTheCpuOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    check_spmv<double>(in.a, ctx);
    check_spmv<float>(in.a, ctx);
  }
}

// Every instantiated kernel (height 1..16 with the basic buffer, every (height, modulo) with
// height * modulo >= 32 for the modified one), on a matrix whose rows vary from empty to long;
// the basic buffer also on rows of about two entries, whose strips the pipelined kernel takes
// at every height, and of a hundred, whose strips the register kernel takes
// (gpu::cmrs_short_strips).
TEST(GpuCmrsSpmv, EveryHeightAndModuloKernel) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const csr<double, I> mixed = test::random_csr(389, 311, 8.0, 17), short_rows = test::random_csr(389, 311, 2.0, 18);
  const csr<double, I> long_rows = test::csr_from_columns(  // 100 entries a row
      389, 311,
      [](std::int64_t r, std::vector<std::int64_t>& cs) {
        for (std::int64_t k = 0; k < 100; ++k) cs.push_back((r * 7 + k * 3) % 311);
      },
      [](std::int64_t r, std::int64_t c) { return 0.5 + static_cast<double>((r + 3 * c) % 29); });
  int kernels = 0;
  for (int modulo : {2, 4, 8, 16, 32}) {
    for (int h = 1; h <= cmrs_max_height; ++h) {
      if (modulo < cmrs_warp && h * modulo < cmrs_warp) continue;
      SCOPED_TRACE(describe(P(h, modulo)));
      std::vector<const csr<double, I>*> inputs = {&mixed};
      if (modulo == cmrs_warp) {
        const std::int64_t strips = cmrs_strips(389, h);
        EXPECT_TRUE(gpu::cmrs_short_strips(static_cast<std::int64_t>(short_rows.values.size()), strips));
        EXPECT_FALSE(gpu::cmrs_short_strips(static_cast<std::int64_t>(long_rows.values.size()), strips));
        inputs.push_back(&short_rows);
        inputs.push_back(&long_rows);
      }
      for (const csr<double, I>* in : inputs) {
        check_spmv_of(*in, cpu::csr_to_cmrs(*in, P(h, modulo)), ctx);
        const csr<float, I> f = test::cast_values<float>(*in);
        check_spmv_of(f, cpu::csr_to_cmrs(f, P(h, modulo)), ctx);
      }
      ++kernels;
    }
  }
  EXPECT_EQ(kernels, 16 + 15 + 13 + 9 + 1);
}

// The pipelined kernel over more strips than the device holds warps, so that each warp walks
// several (its prefetched bounds and heads carried from one strip to the next), with a few
// long rows among the short ones (strips past their heads).
TEST(GpuCmrsSpmv, PipelinedKernelOverManyStripsPerWarp) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const std::int64_t n = 1 << 20;
  const csr<double, I> a = test::csr_from_columns(
      n, n,
      [](std::int64_t r, std::vector<std::int64_t>& cs) {
        const std::int64_t len = r % 4099 == 0 ? 200 : 1 + r % 3;
        for (std::int64_t k = 0; k < len; ++k) cs.push_back((r * 7 + k * 131) % (1 << 20));
      },
      [](std::int64_t r, std::int64_t c) { return 1.0 + static_cast<double>((r * 31 + c) % 97) / 8.0; });
  for (int h : {4, 16}) {
    SCOPED_TRACE(describe(P(h, 32)));
    const cmrs<double> m = cpu::csr_to_cmrs(a, P(h, 32));
    ASSERT_TRUE(gpu::cmrs_short_strips(static_cast<std::int64_t>(m.col_row.size()), cmrs_strips(n, h)));
    check_spmv_of(a, m, ctx);
  }
}

// The tile kernel where its bookkeeping is hardest: leading, trailing and interior empty rows,
// whole empty strips, runs of empty rows longer than a warp (written by the whole warp), a row
// of 700 entries whose strip spans several tiles (split strips, added atomically), rows of one
// entry; tiles of one window (128 slots) on a small matrix (asked for: it takes the strip
// kernels by default), of 4 windows on one of 4.5M slots and of 2 on one of 2.1M slots in
// rows of one entry (staged rows), through the automatic choice; float and double; several
// heights.
TEST(GpuCmrsSpmv, TileKernelOnEmptyRowsSplitStripsAndLongTiles) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  // ones: rows of at most one entry besides row 3000, which the kernel stages in shared memory.
  const auto pattern = [](std::int64_t rows, std::int64_t cols, bool ones) {
    return test::csr_from_columns(
        rows, cols,
        [rows, cols, ones](std::int64_t r, std::vector<std::int64_t>& cs) {
          const bool empty = r < 40 || r >= rows - 500 || (r >= 2000 && r < 2300) || r % 7 == 0;
          const std::int64_t len = r == 3000 ? 700 : empty ? 0 : ones ? 1 : r % 5 + (r % 11 == 0 ? 30 : 0);
          for (std::int64_t k = 0; k < len; ++k) cs.push_back((r * 13 + k * 7) % cols);
        },
        [](std::int64_t r, std::int64_t c) { return 0.25 + static_cast<double>((r * 5 + c) % 23) / 4.0; });
  };
  const csr<double, I> small = pattern(5000, 4001, false), large = pattern(1100000, 90001, false),
                       ones = pattern(2500000, 90001, true);
  for (const csr<double, I>* a : {&small, &large, &ones}) {
    for (int h : {1, 3, 16}) {
      SCOPED_TRACE("rows " + std::to_string(a->rows) + " height " + std::to_string(h));
      const cmrs<double> m = cpu::csr_to_cmrs(*a, P(h, 32));
      const auto slots = static_cast<std::int64_t>(m.values.size());
      // The small matrix takes the strip kernels by default: the tile kernel is asked for.
      const gpu::cmrs_kernel automatic = gpu::cmrs_spmv_kernel(m.params, a->rows);
      ASSERT_EQ(automatic, a == &small ? gpu::cmrs_kernel::strips : gpu::cmrs_kernel::tiles);
      EXPECT_EQ(gpu::cmrs_tile_windows(slots), a == &small ? 1 : a == &large ? 4 : 2);
      const auto dm = to_device(m);
      test::expect_spmv_matches(*a, ctx, [&](double alpha, const double* x, double beta, double* y) {
        gpu::spmv(dm, alpha, x, beta, y, ctx, a == &small ? gpu::cmrs_kernel::tiles : gpu::cmrs_kernel::automatic);
      });
      const csr<float, I> f = test::cast_values<float>(*a);
      const auto df = to_device(cpu::csr_to_cmrs(f, P(h, 32)));
      test::expect_spmv_matches(f, ctx, [&](float alpha, const float* x, float beta, float* y) {
        gpu::spmv(df, alpha, x, beta, y, ctx, gpu::cmrs_kernel::tiles);
      });
    }
  }
}

TEST(GpuCmrsSpmv, KernelChoice) {
  // The tile kernel from 2^18 rows on, however long the strips, in the basic layout in CSR order.
  const std::int64_t rows = gpu::cmrs_tile_kernel_rows;
  EXPECT_EQ(gpu::cmrs_spmv_kernel(P(4, 32), rows), gpu::cmrs_kernel::tiles);
  EXPECT_EQ(gpu::cmrs_spmv_kernel(P(16, 32), std::int64_t{1} << 30), gpu::cmrs_kernel::tiles);
  EXPECT_EQ(gpu::cmrs_spmv_kernel(P(4, 32), rows - 1), gpu::cmrs_kernel::strips);
  EXPECT_EQ(gpu::cmrs_spmv_kernel(P(4, 32, true), rows), gpu::cmrs_kernel::strips);
  EXPECT_EQ(gpu::cmrs_spmv_kernel(P(16, 8), rows), gpu::cmrs_kernel::strips);
  EXPECT_EQ(gpu::cmrs_tile_windows(0), 1);
  EXPECT_EQ(gpu::cmrs_tile_windows(2 * 128 * 8192 - 1), 1);
  EXPECT_EQ(gpu::cmrs_tile_windows(2 * 128 * 8192), 2);
  EXPECT_EQ(gpu::cmrs_tile_windows(std::int64_t{1} << 40), 8);
  if (!gpu_available()) GTEST_SKIP() << "no GPU: the refusals need a device";
  gpu_context ctx;
  device_array<double> x(6), y(6);
  for (const cmrs_params& p : {P(2, 32, true), P(16, 8)}) {
    SCOPED_TRACE(describe(p));
    const auto m = to_device(cpu::csr_to_cmrs(example(), p));
    test::expect_error([&] { gpu::spmv(m, 1.0, x.data(), 0.0, y.data(), ctx, gpu::cmrs_kernel::tiles); },
                       errc::usage, "the cmrs tile kernel takes the basic layout in CSR order");
  }
}

TEST(GpuCmrsSpmv, RefusesParametersOutsideTheFormat) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto m = cpu::csr_to_cmrs(example(), P(2, 32));
  device_array<double> x(6), y(6);
  auto bad = to_device(m);
  bad.params.height = 0;
  test::expect_error([&] { gpu::spmv(bad, 1.0, x.data(), 0.0, y.data(), ctx); }, errc::usage, "height = 0");
  bad.params.height = 2;
  bad.params.modulo = 8;
  test::expect_error([&] { gpu::spmv(bad, 1.0, x.data(), 0.0, y.data(), ctx); }, errc::usage, "height * modulo = 16");
  bad.params.height = 3;
  bad.params.modulo = 32;
  test::expect_error([&] { gpu::spmv(bad, 1.0, x.data(), 0.0, y.data(), ctx); }, errc::usage,
                     "strip_ptr has 4 elements");
}
