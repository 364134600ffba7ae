// MBR on the GPU: CSR <-> MBR conversions against the CPU converters, byte for byte, and the
// bitmap-decoding SpMV / SMMV kernels against the CSR reference within its tolerance, and the
// row kernel (gpu::spmm for every k; gpu::spmv for heights without a block-row kernel) against
// the CPU MBR reference bit for bit, on the generated and the shared real matrices. Every test
// skips on a machine without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
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
// (1x1 and 2x2: 1 byte; 3x5, 5x3, 4x4 and 8x2: 2; 4x8 and 2x16: 4; 8x8, 7x9, 1x64, 64x1 and
// 16x4: 8), each height of the block-row kernel (1, 2, 4, 8) with two widths and, over them,
// every bitmap width (1x1, 1x64, 2x2, 2x16, 4x4, 4x8, 8x2, 8x8), heights that run the row
// kernel (3, 5, 7, 16, 64), sizes that divide no test matrix, and the extreme shapes.
const std::vector<mbr_params> requests = {block(0, 0), block(1, 1),  block(2, 2),  block(3, 5),  block(5, 3),
                                          block(4, 8), block(8, 8),  block(7, 9),  block(1, 64), block(64, 1),
                                          block(16, 4), block(2, 16), block(4, 4), block(8, 2)};

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

// Which call a check makes: gpu::spmv (k = 1) or gpu::spmm (any k, the row kernel).
enum class entry { spmv, spmm };

// Y = alpha*A*X + beta*Y with k vectors for (alpha, beta) = (1, 0) on a Y of NaN (which must
// not be read) and (-0.5, 2): every column within the CSR reference's tolerance, and where the
// row kernel runs (spmm, or spmv with a height outside the block-row kernel's) all of Y the
// CPU MBR reference's bits. The block-row and tile kernels split a row's sum over lanes, so
// only the tolerance holds there.
template <class V>
void check_product(const csr<V, I>& a, const mbr<V>& m, const mbr<V, I, device>& dm, entry e, int k,
                   gpu_context& ctx, gpu::mbr_kernel kernel = gpu::mbr_kernel::automatic) {
  SCOPED_TRACE((e == entry::spmv ? "spmv, k = " : "spmm, k = ") + std::to_string(k) + ", " +
               gpu::mbr_kernel_name(kernel) + " kernel");
  ASSERT_TRUE(e == entry::spmm || k == 1);
  const gpu::mbr_kernel runs =
      kernel == gpu::mbr_kernel::automatic ? gpu::mbr_spmv_kernel(m.params.block_rows) : kernel;
  const bool same_bits_as_cpu = e == entry::spmm || runs == gpu::mbr_kernel::rows;
  const std::vector<V> x = test::test_vector<V>(a.cols * k, 1), y0 = test::test_vector<V>(a.rows * k, 2);
  const std::vector<V> nan(a.rows * k, std::numeric_limits<V>::quiet_NaN());
  device_array<V> dx, dy;
  dx.upload(x.data(), x.size());
  const double tol = cpu::spmv_tolerance<V>(test::max_row_length(a));
  for (const auto& [alpha, beta] : {std::pair{V(1), V(0)}, std::pair{V(-0.5), V(2)}}) {
    SCOPED_TRACE("alpha " + std::to_string(alpha) + " beta " + std::to_string(beta));
    const std::vector<V>& start = beta == V(0) ? nan : y0;
    dy.upload(start.data(), start.size());
    if (e == entry::spmv)
      gpu::spmv(dm, alpha, dx.data(), beta, dy.data(), ctx, kernel);
    else
      gpu::spmm(dm, k, alpha, dx.data(), beta, dy.data(), ctx);
    ctx.synchronize();
    const std::vector<V> y = test::download(dy);
    if (same_bits_as_cpu) {
      std::vector<V> ref = start;
      cpu::spmm(m, k, alpha, x.data(), beta, ref.data());
      EXPECT_TRUE(same_bits(y, ref)) << "the row kernel's bits differ from cpu::spmm(mbr)";
    }
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
    check_product(a, m, dm, entry::spmv, 1, ctx);
    // The block-row kernel, which the rule no longer picks, on the same matrices.
    if (gpu::mbr_lane_kernel_height(m.params.block_rows))
      check_product(a, m, dm, entry::spmv, 1, ctx, gpu::mbr_kernel::block_rows);
    for (int k : ks) check_product(a, m, dm, entry::spmm, k, ctx);
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

// Block rows of more than 8 blocks (GPU MBR -> CSR lists them and gives each of their rows a
// warp, 32 blocks a step): a full row 0 and a row of every third column (with 1x1 blocks, a
// block row of 5000 and of 1667 blocks), rows of 2100 and of 33 to 40 entries 64 columns apart,
// rows of 2 entries between, and full rows in the last block rows, which overhang the matrix
// for most heights.
TEST(GpuMbrConvert, LongBlockRowsMatchTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  constexpr int rows = 70, cols = 5000;
  csr<double, I> a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr = {0};
  for (int i = 0; i < rows; ++i) {
    std::vector<int> cs;
    if (i == 0 || i >= 66) {
      for (int j = 0; j < cols; ++j) cs.push_back(j);
    } else if (i == 3) {
      for (int j = 0; j < cols; j += 3) cs.push_back(j);
    } else if (i == 9) {
      for (int j = 100; j < 2200; ++j) cs.push_back(j);
    } else if (i % 5 == 1) {
      for (int j = 0; j < 33 + i % 8; ++j) cs.push_back(j * 64 + i % 7);
    } else if (i % 2 == 0) {
      cs = {i, 4000 + i};
    }
    for (const int j : cs) {
      a.col_idx.push_back(j);
      a.values.push_back(1.0 + 0.001 * i + 0.5 * (j % 13));
    }
    a.row_ptr.push_back(static_cast<I>(a.col_idx.size()));
  }
  check_conversions<double>(a, ctx);
  check_conversions<float>(a, ctx);
}

// Every ordering pass of convert/gpu/block_rows.cuh (see test::block_order_passes): of the
// wide block rows, 8x8, 7x9 and 5x3 merge those of twelve or twenty entries a row by 8 slots,
// 4x4, 4x8 and 3x5 (the rows of 20 and 32) by 4; those holding the row of 33 entries, and
// 16x4's of twelve entries a row (16 rows), sort by 8 slots, 16x4's of twenty entries a row
// (320 to 333 entries) by 16 slots in a kernel of their own; 8x2 over the twelve (a span of
// 440K blocks), the block rows holding row 128's 612 entries, 64x1 (64 rows) and 1-row blocks
// search; 2-row blocks sort.
TEST(GpuMbrConvert, EveryOrderingPass) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const csr<double, I> a = test::block_order_passes();
  check_conversions<double>(a, ctx);
  check_conversions<float>(a, ctx);
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

// Every instantiated row kernel: each vector count 1..8 per group (and 9, 16, 17: several
// groups) with each bitmap width (1x8: 1 byte, 4x4: 2, 4x8: 4, 8x8: 8); and gpu::spmv.
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
    check_product(a, m, dm, entry::spmv, 1, ctx);
    check_product(af, mf, dmf, entry::spmv, 1, ctx);
    for (int k : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17}) {
      check_product(a, m, dm, entry::spmm, k, ctx);
      check_product(af, mf, dmf, entry::spmm, k, ctx);
    }
  }
}

namespace {

// Matrices that make the warps of the block-row and tile kernels walk block rows of very
// different lengths: an arrow (two dense rows and two dense columns over a diagonal) puts far
// more than 32 blocks (and, for the tile kernel, more than a tile's 256) in a block row whose
// neighbours hold two or three, and leaves 100 rows empty (whole empty block rows, more than
// 32 in a run with 1-row blocks); 1003 rows overhang the last block row of every height but 1.
// Random matrices of several densities give, together with the arrow, every lane count 4..32
// of the block-row kernel's rule; a dense matrix fills every block. Each height of both
// kernels (1, 2, 4, 8) comes with a width for each bitmap width (1, 2, 4 and 8 bytes).
const std::vector<std::pair<std::string, csr<double, I>>>& uneven_block_rows() {
  static const std::vector<std::pair<std::string, csr<double, I>>> inputs = {
      {"arrow_1003x4001",
       test::csr_from_columns(
           1003, 4001,
           [](std::int64_t r, std::vector<std::int64_t>& cs) {
             if (r >= 700 && r < 800) return;
             if (r == 0 || r == 600)
               for (std::int64_t j = 0; j < 4001; ++j) cs.push_back(j);
             cs.insert(cs.end(), {0, r, 4000});
           },
           [](std::int64_t r, std::int64_t j) { return static_cast<double>((r * 31 + j * 17) % 97) / 8.0 - 6.0; })},
      {"sparse_300x3000", test::random_csr(300, 3000, 0.8, 41)},
      {"random_200x3000", test::random_csr(200, 3000, 12.0, 42)},
      {"long_rows_100x20000", test::random_csr(100, 20000, 300.0, 43)},
      // Every block full: 8 x 1 blocks of 8 values (one column), 8 x 8 blocks of 64.
      {"dense_96x300",
       test::csr_from_columns(
           96, 300,
           [](std::int64_t, std::vector<std::int64_t>& cs) {
             for (std::int64_t j = 0; j < 300; ++j) cs.push_back(j);
           },
           [](std::int64_t r, std::int64_t j) { return static_cast<double>((r * 7 + j) % 13) - 6.0; })}};
  return inputs;
}
const std::vector<mbr_params> lane_kernel_sizes = {block(1, 5), block(1, 12), block(1, 32), block(1, 40),
                                                   block(2, 3), block(2, 8),  block(2, 13), block(2, 32),
                                                   block(4, 2), block(4, 3),  block(4, 8),  block(4, 16),
                                                   block(8, 1), block(8, 2),  block(8, 3),  block(8, 8)};

// What the arrow is there for: block rows longer than 2 x 32 blocks, empty block rows, and
// (r > 1) a last block row that overhangs the matrix.
void expect_uneven_arrow(const csr<double, I>& a, const mbr<double>& m, const mbr_params& req) {
  const std::int64_t block_rows = static_cast<std::int64_t>(m.block_row_ptr.size()) - 1;
  I longest = 0, empty = 0;
  for (std::int64_t br = 0; br < block_rows; ++br) {
    longest = std::max(longest, m.block_row_ptr[br + 1] - m.block_row_ptr[br]);
    empty += m.block_row_ptr[br + 1] == m.block_row_ptr[br];
  }
  EXPECT_GT(longest, 2 * 32);
  EXPECT_GT(empty, 0);
  EXPECT_TRUE(req.block_rows == 1 || a.rows % req.block_rows != 0);
}

// gpu::spmv with `kernel` on every uneven_block_rows() matrix and lane_kernel_sizes size, in
// double and float; inspect(name, a, req, m) sees each double MBR before it runs.
template <class F>
void check_on_uneven_block_rows(gpu::mbr_kernel kernel, gpu_context& ctx, F&& inspect) {
  for (const auto& [name, a] : uneven_block_rows()) {
    SCOPED_TRACE(name);
    const csr<float, I> af = test::cast_values<float>(a);
    for (const mbr_params& req : lane_kernel_sizes) {
      SCOPED_TRACE(describe(req));
      const mbr<double> m = cpu::csr_to_mbr(a, req);
      const mbr<float> mf = cpu::csr_to_mbr(af, req);
      inspect(name, a, req, m);
      check_product(a, m, to_device(m), entry::spmv, 1, ctx, kernel);
      check_product(af, mf, to_device(mf), entry::spmv, 1, ctx, kernel);
    }
  }
}

// The tile kernel's windows by the way they are summed (mbr_tile_by_block, mbr_lane_per_block):
// 32 blocks from a tile's first, which is a multiple of 32; those of full 1-column blocks; and
// those that lie inside a block row in a kernel that gathers (mbr_tile_gathers).
struct window_counts {
  int by_block = 0, by_run = 0, full_one_column = 0, gathered = 0;
};
void count_windows(const mbr<double>& m, window_counts& counts) {
  const int r = m.params.block_rows, c = m.params.block_cols;
  const auto blocks = static_cast<I>(m.block_col_idx.size());
  const bool may = gpu::mbr_tile_by_block(static_cast<std::int64_t>(m.values.size()), blocks, r, c);
  const bool gathers = may && gpu::mbr_tile_gathers(blocks, static_cast<std::int64_t>(m.block_row_ptr.size()) - 1);
  std::size_t br = 0;  // the block row of the window's first block
  for (I w0 = 0; w0 < blocks; w0 += 32) {
    const I we = std::min(w0 + 32, blocks);
    int n = 0;
    for (I b = w0; b < we; ++b)
      for (int k = 0; k < m.params.bitmap_bytes; ++k)
        n += std::popcount(m.bitmaps[static_cast<std::size_t>(b) * m.params.bitmap_bytes + k]);
    ++(may && gpu::mbr_lane_per_block(n, r, c) ? counts.by_block : counts.by_run);
    counts.full_one_column += r > 1 && c == 1 && n == 32 * r;
    while (m.block_row_ptr[br + 1] <= w0) ++br;
    counts.gathered += gathers && m.block_row_ptr[br + 1] > we;
  }
}

}  // namespace

// The kernel gpu::spmv picks: heights 1, 2, 4, 8 take the tile kernel, other heights the row
// kernel. The lane kernels refuse other heights.
TEST(GpuMbrSpmv, KernelChoice) {
  for (int r : {1, 2, 4, 8}) EXPECT_EQ(gpu::mbr_spmv_kernel(r), gpu::mbr_kernel::tiles) << r;
  for (int r : {3, 5, 16, 64}) EXPECT_EQ(gpu::mbr_spmv_kernel(r), gpu::mbr_kernel::rows) << r;
  EXPECT_EQ(gpu::mbr_tile_windows(0), 1);
  EXPECT_EQ(gpu::mbr_tile_windows(2 * 32 * 8192 - 1), 1);
  EXPECT_EQ(gpu::mbr_tile_windows(2 * 32 * 8192), 2);
  EXPECT_EQ(gpu::mbr_tile_windows(std::int64_t{1} << 40), 8);
  EXPECT_TRUE(gpu::mbr_tile_gathers(64 * 1000, 1000));
  EXPECT_FALSE(gpu::mbr_tile_gathers(64 * 1000 - 1, 1000));
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto dm = to_device(cpu::csr_to_mbr(example(), block(3, 3)));
  device_array<double> x(6), y(6);
  for (const gpu::mbr_kernel k : {gpu::mbr_kernel::block_rows, gpu::mbr_kernel::tiles})
    test::expect_error([&] { gpu::spmv(dm, 1.0, x.data(), 0.0, y.data(), ctx, k); }, errc::usage,
                       "takes blocks of 1, 2, 4 or 8 rows, not 3");
}

// The block-row kernel on every height, bitmap width and lane count of its rule.
TEST(GpuMbrSpmv, BlockRowKernelOnEveryHeightWidthAndLaneCount) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  std::set<int> lanes_seen;
  check_on_uneven_block_rows(gpu::mbr_kernel::block_rows, ctx,
                             [&](const std::string& name, const csr<double, I>& a, const mbr_params& req,
                                 const mbr<double>& m) {
                               const auto block_rows = static_cast<std::int64_t>(m.block_row_ptr.size()) - 1;
                               lanes_seen.insert(gpu::mbr_lanes_per_block_row(
                                   block_rows, static_cast<std::int64_t>(m.values.size())));
                               if (name == "arrow_1003x4001") expect_uneven_arrow(a, m, req);
                             });
  EXPECT_EQ(lanes_seen, (std::set<int>{4, 8, 16, 32}));
}

// The tile kernel on the same matrices and sizes: block rows split between tiles (of 32 blocks
// here, mbr_tile_windows' choice for small matrices: the arrow's dense rows and many others; the
// test counts them; a tile's first value is counted from either end of its block row), runs of
// empty block rows, overhanging last block rows, windows summed a lane per block and a lane per run
// (mbr_lane_per_block; counted too), among them windows of full one-column blocks, and windows
// inside a block row whose sums the lanes gather (mbr_tile_gathers: the long rows' matrix at every
// size, counted); then, chosen by the rule, on a random matrix of just over 2^18 rows, whose tiles
// hold several windows.
TEST(GpuMbrSpmv, TileKernelOnEveryHeightAndWidth) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  int split = 0;
  window_counts windows;
  check_on_uneven_block_rows(gpu::mbr_kernel::tiles, ctx,
                             [&](const std::string&, const csr<double, I>&, const mbr_params&, const mbr<double>& m) {
                               const I tile =
                                   32 * gpu::mbr_tile_windows(static_cast<std::int64_t>(m.block_col_idx.size()));
                               for (std::size_t br = 0; br + 1 < m.block_row_ptr.size(); ++br)
                                 split += m.block_row_ptr[br] / tile != (m.block_row_ptr[br + 1] - 1) / tile &&
                                          m.block_row_ptr[br + 1] > m.block_row_ptr[br];
                               count_windows(m, windows);
                             });
  EXPECT_GT(split, 20);  // block rows that the tile kernel adds to y from several warps
  EXPECT_GT(windows.by_block, 20);
  EXPECT_GT(windows.by_run, 20);
  EXPECT_GT(windows.full_one_column, 0);
  EXPECT_GT(windows.gathered, 20);
  const csr<double, I> big = test::random_csr((std::int64_t{1} << 18) + 5, 70000, 6.0, 44);
  const csr<float, I> bigf = test::cast_values<float>(big);
  for (const mbr_params& req : {block(1, 4), block(2, 8), block(4, 4), block(8, 8)}) {
    SCOPED_TRACE(describe(req));
    const mbr<double> m = cpu::csr_to_mbr(big, req);
    EXPECT_GT(gpu::mbr_tile_windows(static_cast<std::int64_t>(m.block_col_idx.size())), 1);
    const mbr<float> mf = cpu::csr_to_mbr(bigf, req);
    check_product(big, m, to_device(m), entry::spmv, 1, ctx);
    check_product(bigf, mf, to_device(mf), entry::spmv, 1, ctx);
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
