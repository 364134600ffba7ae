// The GPU foundation: device memory (device_array, errors), host <-> device copies of every
// format, the CSR SpMV kernels and cuSPARSE against the CPU reference, and COO <-> CSR on
// the GPU against the CPU converters, byte for byte. Every test skips on a machine without
// a GPU (the CI machines), so they run only where a GPU is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "convert/cpu/csr_coo.hpp"
#include "convert/gpu/csr_coo.hpp"
#include "convert/graph.hpp"
#include "formats/device.hpp"
#include "io/matrix_file.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/gpu/spmv.hpp"
#include "kernels/gpu/spmv_coo.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;

namespace {

// The generated matrix whose x alone would take 2^28 elements: left out of the SpMV tests.
constexpr std::string_view huge_cols = "cols_near_2pow28";

template <class V, class I>
csr<V, I> retype(const csr<double, std::int32_t>& a) {
  csr<V, I> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.assign(a.row_ptr.begin(), a.row_ptr.end());
  out.col_idx.assign(a.col_idx.begin(), a.col_idx.end());
  out.values.assign(a.values.begin(), a.values.end());
  return out;
}

}  // namespace

// ---- device, memory ----------------------------------------------------------------

TEST(GpuDevice, ReportsNameAndMemory) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  EXPECT_FALSE(device_name(0).empty());
  const device_memory m = device_memory_info();
  EXPECT_GT(m.total, 0u);
  EXPECT_LE(m.free, m.total);
  gpu_context ctx;
  EXPECT_EQ(ctx.device(), 0);
  ctx.synchronize();
  test::expect_error([] { device_name(1 << 20); }, errc::device, "device 1048576");
}

// The counts a converter reads back mid-way (gpu_context::copy_back): each lands at its byte
// of the pinned area; a copy past the area or a wait with no copy queued is a usage error.
TEST(GpuDevice, CopiesCountsBackToThePinnedArea) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  test::expect_error([&] { ctx.wait_copies_back(); }, errc::usage, "no copy_back was queued");
  device_array<std::int32_t> counts(2);
  const std::vector<std::int32_t> h{7, -3};
  counts.upload(h.data(), h.size());
  ctx.copy_back(0, counts.data() + 1, sizeof(std::int32_t));
  ctx.copy_back(8, counts.data(), sizeof(std::int32_t));
  const auto* back = static_cast<const std::int32_t*>(ctx.wait_copies_back());
  EXPECT_EQ(back[0], -3);
  EXPECT_EQ(back[2], 7);
  test::expect_error([&] { ctx.copy_back(60, counts.data(), 8); }, errc::usage, "pass the area's 64");
}

TEST(GpuMemory, DeviceArrayKeepsContentsWhenGrowingAndMoves) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  std::vector<std::int32_t> h(1000);
  for (int i = 0; i < 1000; ++i) h[i] = i * 7 - 300;
  device_array<std::int32_t> d;
  EXPECT_TRUE(d.empty());
  d.upload(h.data(), h.size());
  d.resize(5000);  // a new allocation: the 1000 elements move along
  ASSERT_EQ(d.size(), 5000u);
  d.resize(1000);  // back within the capacity; only the uploaded elements are read
  EXPECT_EQ(test::download(d), h);
  d.resize(10);  // shrinking keeps the prefix
  const auto back = test::download(d);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), h.begin()));
  device_array<std::int32_t> moved(std::move(d));
  EXPECT_EQ(moved.size(), 10u);
  EXPECT_TRUE(d.empty());  // a moved-from array is empty
  EXPECT_EQ(d.data(), nullptr);
}

TEST(GpuMemory, OutOfMemoryIsADeviceErrorThatNamesTheSizes) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  device_array<double> d;
  const std::vector<double> h = {1.5, -2.0, 3.25};
  d.upload(h.data(), h.size());
  test::expect_error([&] { d.resize(std::size_t{1} << 50); }, errc::device,
               "device array of 1125899906842624 float64: out of device memory (needed 9007199254740992 bytes, free ");
  // The failed resize left the array as it was.
  EXPECT_EQ(test::download(d), h);
  test::expect_error([&] { d.resize(std::numeric_limits<std::size_t>::max() / 4); }, errc::device,
               "out of device memory (needs more than 2^64 bytes)");
  EXPECT_EQ(d.size(), 3u);
}

// Device memory comes from spconv's pool and goes back to it when freed: an array made again
// from the pool's kept memory holds what is copied in; device_memory_info() (which returns the
// pool's spare memory first) counts a live 1 GiB array as used and a freed one as free.
TEST(GpuMemory, PoolMemoryIsReusedAndReturned) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  constexpr std::size_t gib = std::size_t{1} << 30;
  const std::size_t before = device_memory_info().free;
  ASSERT_GT(before, 4 * gib);
  std::vector<std::int32_t> h(1 << 20);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<std::int32_t>(i * 2654435761u);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    device_array<std::int32_t> a;
    a.resize(gib / sizeof(std::int32_t));
    a.upload(h.data(), h.size());
    EXPECT_EQ(test::download(a), h);
    EXPECT_LT(device_memory_info().free, before - gib / 2);
  }
  EXPECT_GT(device_memory_info().free, before - gib / 2);
}

// ---- copies ----------------------------------------------------------------------------

// Every any_matrix alternative (every format, float and double, CSR/COO with both index
// widths) on every generated matrix: to_host(to_device(m)) has the same bits as m.
TEST(GpuCopy, EveryFormatRoundTripsBitForBit) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  int copied = 0;
  for (const auto& g : test::generator_set()) {
    for (value_type vt : {value_type::f64, value_type::f32}) {
      for (std::string_view fmt : format_list) {
        for (index_type it : {index_type::i32, index_type::i64}) {
          if (it == index_type::i64 && fmt != "csr" && fmt != "coo") continue;
          SCOPED_TRACE(g.name + " " + std::string(fmt) + " " + std::string(to_string(vt)) + "/" +
                       std::string(to_string(it)));
          convert_options opt;
          opt.values = vt;
          if (fmt == "csr" || fmt == "coo") opt.index = it;
          any_matrix m;
          try {
            m = convert(any_matrix(g.a), fmt, opt);
          } catch (const error& e) {
            // Formats that cannot hold this shape (e.g. fill beyond their cap) are not
            // what this test is about.
            if (e.code() != errc::unsupported) throw;
            continue;
          }
          std::visit(
              [&](const auto& host_m) {
                const auto back = to_host(to_device(host_m));
                EXPECT_TRUE(equal(back, host_m));
              },
              m);
          ++copied;
        }
      }
    }
  }
  // 15 matrices x 2 value types x 10 format/index pairs, less the few conversions refused.
  EXPECT_GT(copied, 200);
}

TEST(GpuCopy, HybPartsTakeTheMatrixShapeOnTheDevice) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  convert_options opt;
  opt.hyb.ell_width = 3;
  const auto src = test::generator_set();
  const auto it = std::find_if(src.begin(), src.end(), [](const auto& g) { return g.name == "power_law_2000"; });
  ASSERT_NE(it, src.end());
  const auto h = std::get<hyb<double>>(convert(any_matrix(it->a), "hyb", opt));
  ASSERT_GT(h.coo.nnz(), 0);  // both parts hold entries
  const auto d = to_device(h);
  EXPECT_EQ(d.ell.rows, h.rows);
  EXPECT_EQ(d.ell.cols, h.cols);
  EXPECT_EQ(d.coo.rows, h.rows);
  EXPECT_EQ(d.coo.cols, h.cols);
  EXPECT_EQ(d.ell.params.width, 3);
  EXPECT_EQ(d.coo.values.size(), h.coo.values.size());
  EXPECT_TRUE(equal(to_host(to_device(h.ell)), h.ell));
  EXPECT_TRUE(equal(to_host(d), h));
}

// ---- SpMV --------------------------------------------------------------------------------

namespace {

// cuSPARSE (lanes -1), our kernel's automatic choice (0) and every vector width.
constexpr int all_methods[] = {-1, 0, 1, 2, 4, 8, 16, 32};

std::string method_name(int m) { return m < 0 ? "cusparse" : m == 0 ? "automatic" : std::to_string(m) + " lanes"; }

template <class V, class I>
void run(int m, const csr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  if (m < 0) gpu::spmv_cusparse(a, alpha, x, beta, y, ctx);
  else gpu::spmv(a, alpha, x, beta, y, ctx, m);
}

// Every method, with beta != 0 and with beta == 0 on a y full of NaN (which must not be
// read), within the reference's tolerance.
template <class V, class I>
void check_spmv(const csr<double, std::int32_t>& src, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()) + "/" + std::string(type_name<I>()));
  const csr<V, I> a = retype<V, I>(src);
  const auto d = to_device(a);
  const std::vector<V> x = test::test_vector<V>(a.cols, 1), y0 = test::test_vector<V>(a.rows, 2);
  device_array<V> dx, dy;
  dx.upload(x.data(), x.size());
  const double tol = cpu::spmv_tolerance<V>(test::max_row_length(a));
  const std::vector<V> nan(a.rows, std::numeric_limits<V>::quiet_NaN());
  for (int m : all_methods) {
    SCOPED_TRACE(method_name(m));
    for (const V beta : {V(-0.5), V(0)}) {
      const V alpha = V(1.25);
      dy.upload(beta == V(0) ? nan.data() : y0.data(), a.rows);
      run(m, d, alpha, dx.data(), beta, dy.data(), ctx);
      ctx.synchronize();
      const auto y = test::download(dy);
      const double err = cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data());
      EXPECT_LE(err, tol) << "beta " << beta;
    }
  }
}

}  // namespace

TEST(GpuSpmv, KernelsAndCusparseMatchTheCpuOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  for (const auto& g : test::generator_set()) {
    if (g.name == huge_cols) continue;
    SCOPED_TRACE(g.name);
    check_spmv<double, std::int32_t>(g.a, ctx);
    check_spmv<float, std::int32_t>(g.a, ctx);
    check_spmv<double, std::int64_t>(g.a, ctx);
    check_spmv<float, std::int64_t>(g.a, ctx);
  }
}

TEST(GpuSpmv, KernelsAndCusparseMatchTheCpuOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    check_spmv<double, std::int32_t>(in.a, ctx);
    check_spmv<float, std::int32_t>(in.a, ctx);
  }
}

// COO SpMV (also HYB's tail): rows of 1 to 3 entries (row pieces crossing lanes), rows of
// 0 to 300 (crossing tiles of 128 entries), one row of 10000 entries over many tiles between
// short rows, entry counts that end mid-tile, runs of empty rows (shorter and longer than a
// warp, before the first entry, between tiles, after the last entry, with rows of under 2
// entries on average and more), matrices of rows averaging under and over 4 entries (the two
// kernels, detail::coo_writes_rows), 32- and 64-bit indices, float and double, beta 0 on a y
// of NaN and beta != 0: every row, empty ones too, must be written.
TEST(GpuCooSpmv, RowPiecesAcrossLanesTilesAndPartialTiles) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto make = [](std::int64_t rows, std::int64_t cols, const std::function<std::int64_t(std::int64_t)>& len) {
    return test::csr_from_columns(
        rows, cols,
        [&](std::int64_t r, std::vector<std::int64_t>& cs) {
          for (std::int64_t j = 0; j < len(r); ++j) cs.push_back((r * 17 + j * 5) % cols);
        },
        [](std::int64_t r, std::int64_t c) { return static_cast<double>((r * 3 + c * 11) % 23) - 11.0; });
  };
  const std::vector<std::pair<std::string, csr<double, std::int32_t>>> inputs = {
      {"rows of 1", make(1000, 1000, [](std::int64_t) { return 1; })},
      {"rows of 1-3", make(3001, 500, [](std::int64_t r) { return 1 + r % 3; })},
      {"rows of 0-300", make(700, 20011, [](std::int64_t r) { return (r * 7919) % 301; })},
      {"one long row", make(999, 30011, [](std::int64_t r) { return r == 400 ? 10000 : r % 5; })},
      {"127 entries", make(127, 10, [](std::int64_t) { return 1; })},
      {"rows of 0-2", make(5000, 300, [](std::int64_t r) { return r % 3; })},
      {"runs of empty rows", make(200000, 3000, [](std::int64_t r) { return r % 4999 == 17 ? 1 + r % 251 : 0; })},
      {"empty rows around one band",
       make(100000, 2003, [](std::int64_t r) { return r >= 50000 && r < 50100 ? 300 : r == 50200 ? 1 : 0; })},
      {"short rows between empty runs", make(40000, 500, [](std::int64_t r) { return r % 97 < 40 ? 1 : 0; })},
      // Rows averaging under 4 entries take the kernel that writes each row once
      // (detail::coo_writes_rows): these put rows over many tiles there too.
      {"one long row among rows of 0-1", make(5000, 30011, [](std::int64_t r) { return r == 400 ? 10000 : r % 2; })},
      {"rows of 0-300 among empty rows",
       make(70000, 20011, [](std::int64_t r) { return r % 100 == 0 ? (r * 7919) % 301 : 0; })},
      // Runs of rows of 5-12 tiles, each walked partly by its warp (coo_join_parts), several
      // in one warp's 32 tiles, ending at various lanes.
      {"runs of long rows among rows of 0-1",
       make(300000, 30011, [](std::int64_t r) { return r % 6000 < 10 ? 600 + (r * 97) % 900 : r % 2; })},
  };
  for (const auto& [name, src] : inputs) {
    SCOPED_TRACE(name);
    const auto check = [&](auto v, auto i) {
      using V = decltype(v);
      using I = decltype(i);
      SCOPED_TRACE(std::string(type_name<V>()) + "/" + std::string(type_name<I>()));
      const csr<V, I> a = retype<V, I>(src);
      const auto d = to_device(cpu::csr_to_coo(a));
      const std::vector<V> x = test::test_vector<V>(a.cols, 1), y0 = test::test_vector<V>(a.rows, 2);
      const std::vector<V> nan(a.rows, std::numeric_limits<V>::quiet_NaN());
      device_array<V> dx, dy;
      dx.upload(x.data(), x.size());
      for (const V beta : {V(-0.5), V(0)}) {
        dy.upload(beta == V(0) ? nan.data() : y0.data(), a.rows);
        gpu::spmv(d, V(1.25), dx.data(), beta, dy.data(), ctx);
        ctx.synchronize();
        const auto y = test::download(dy);
        EXPECT_LE(cpu::spmv_max_rel_error(a, V(1.25), x.data(), beta, y0.data(), y.data()),
                  cpu::spmv_tolerance<V>(test::max_row_length(a)))
            << "beta " << beta;
      }
    };
    check(double{}, std::int32_t{});
    check(float{}, std::int32_t{});
    check(double{}, std::int64_t{});
    check(float{}, std::int64_t{});
  }
}

TEST(GpuSpmv, AutomaticRuleFollowsTheMeanRowLength) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  EXPECT_EQ(gpu::csr_vector_lanes(0, 0), 1);
  EXPECT_EQ(gpu::csr_vector_lanes(100, 999), 1);
  EXPECT_EQ(gpu::csr_vector_lanes(100, 1000), 8);
  EXPECT_EQ(gpu::csr_vector_lanes(100, 1599), 8);
  EXPECT_EQ(gpu::csr_vector_lanes(100, 1600), 16);
  EXPECT_EQ(gpu::csr_vector_lanes(100, 6399), 16);
  EXPECT_EQ(gpu::csr_vector_lanes(100, 6400), 32);
  EXPECT_EQ(gpu::csr_vector_lanes(100, 1000000), 32);
  gpu_context ctx;
  const auto d = to_device(test::random_csr(10, 10, 3, 1));
  device_array<double> x, y;
  x.resize(10);
  y.resize(10);
  test::expect_error([&] { gpu::spmv(d, 1.0, x.data(), 0.0, y.data(), ctx, 3); }, errc::usage, "3 lanes per CSR row");
}

// ---- COO <-> CSR -------------------------------------------------------------------------

namespace {

// The COO of `a` with duplicates (every third entry split into two parts that do not sum
// exactly, a few -0.0 companions) in a shuffled order: the input that exercises the sort's
// stability and the duplicate sums.
coo<double, std::int32_t> shuffled_with_duplicates(const csr<double, std::int32_t>& a, std::uint64_t seed) {
  const auto sorted = cpu::csr_to_coo(a);
  std::vector<std::tuple<std::int32_t, std::int32_t, double>> t;
  for (std::int64_t k = 0; k < sorted.nnz(); ++k) {
    const auto r = sorted.row_idx[k], c = sorted.col_idx[k];
    const double v = sorted.values[k];
    if (k % 3 == 0) {
      t.emplace_back(r, c, v * 0.3);
      t.emplace_back(r, c, v * 0.7 + 1e-9);
    } else {
      t.emplace_back(r, c, v);
    }
    if (k % 11 == 0) t.emplace_back(r, c, -0.0);
  }
  std::mt19937_64 rng(seed);
  std::shuffle(t.begin(), t.end(), rng);
  coo<double, std::int32_t> out;
  out.rows = a.rows;
  out.cols = a.cols;
  for (const auto& [r, c, v] : t) {
    out.row_idx.push_back(r);
    out.col_idx.push_back(c);
    out.values.push_back(v);
  }
  return out;
}

template <class V, class I>
coo<V, I> retype(const coo<double, std::int32_t>& a) {
  coo<V, I> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_idx.assign(a.row_idx.begin(), a.row_idx.end());
  out.col_idx.assign(a.col_idx.begin(), a.col_idx.end());
  out.values.assign(a.values.begin(), a.values.end());
  return out;
}

// GPU COO -> CSR equals the CPU's bit for bit, and GPU CSR -> COO of the result equals the
// CPU's.
template <class V, class I>
void check_conversions(const coo<V, I>& in, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()) + "/" + std::string(type_name<I>()));
  const csr<V, I> cpu_csr = cpu::coo_to_csr(in);
  const csr<V, I> gpu_csr = to_host(gpu::coo_to_csr(to_device(in), ctx));
  EXPECT_TRUE(equal(gpu_csr, cpu_csr));
  EXPECT_TRUE(equal(to_host(gpu::csr_to_coo(to_device(cpu_csr), ctx)), cpu::csr_to_coo(cpu_csr)));
}

template <class V, class I>
void check_conversions_as(const coo<double, std::int32_t>& in, gpu_context& ctx) {
  check_conversions(retype<V, I>(in), ctx);
}

void check_all_types(const coo<double, std::int32_t>& in, gpu_context& ctx) {
  check_conversions_as<double, std::int32_t>(in, ctx);
  check_conversions_as<float, std::int32_t>(in, ctx);
  check_conversions_as<double, std::int64_t>(in, ctx);
  check_conversions_as<float, std::int64_t>(in, ctx);
}

}  // namespace

TEST(GpuCooToCsr, SumsDuplicatesInInputOrderLikeTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  coo<double, std::int32_t> a;
  a.rows = 3;
  a.cols = 4;
  // (2, 3): 1 + 1e-17 - 1 in input order is 0, in any other order 1e-17 or 1e-17 - ...;
  // (0, 1): 2 - 2 = +0; (1, 2): a lone -0.0 stays -0.0; (1, 0): -0.0 + 0.0 = +0.0.
  for (auto [r, c, v] : std::vector<std::tuple<int, int, double>>{{2, 3, 1.0},
                                                                  {0, 1, 2.0},
                                                                  {1, 2, -0.0},
                                                                  {2, 0, 3.0},
                                                                  {2, 3, 1e-17},
                                                                  {1, 0, -0.0},
                                                                  {0, 1, -2.0},
                                                                  {2, 3, -1.0},
                                                                  {1, 0, 0.0}}) {
    a.row_idx.push_back(r);
    a.col_idx.push_back(c);
    a.values.push_back(v);
  }
  const auto g = to_host(gpu::coo_to_csr(to_device(a), ctx));
  validate(g);
  EXPECT_TRUE(equal(g, cpu::coo_to_csr(a)));
  ASSERT_EQ(g.values.size(), 5u);
  EXPECT_EQ(g.values[4], (1.0 + 1e-17) + -1.0);
  EXPECT_TRUE(std::signbit(g.values[2]));   // (1, 2) = -0.0
  EXPECT_FALSE(std::signbit(g.values[1]));  // (1, 0) = +0.0
  check_all_types(a, ctx);
}

TEST(GpuCooToCsr, MatchesTheCpuOnShuffledGeneratedMatricesWithDuplicates) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  std::uint64_t seed = 1;
  for (const auto& g : test::generator_set()) {
    SCOPED_TRACE(g.name);
    check_all_types(cpu::csr_to_coo(g.a), ctx);                  // sorted, no duplicates
    check_all_types(shuffled_with_duplicates(g.a, seed++), ctx);  // shuffled, duplicates
  }
}

TEST(GpuCooToCsr, MatchesTheCpuOnShuffledRealMatricesWithDuplicates) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  std::uint64_t seed = 100;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    const auto t = shuffled_with_duplicates(in.a, seed++);
    check_conversions_as<double, std::int32_t>(t, ctx);
    check_conversions_as<float, std::int64_t>(t, ctx);
  }
}

// Entries in strict (row, column) order are copied (the order is checked on the device); the
// nearly ordered cases must still be sorted and summed: a row whose columns fall, an adjacent
// duplicate, a row that goes back. Empty rows lead, sit between and trail.
TEST(GpuCooToCsr, CopiesOnlyEntriesInStrictOrder) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto make = [](std::vector<std::tuple<int, int, double>> entries) {
    coo<double, std::int32_t> a;
    a.rows = 7;
    a.cols = 6;
    for (auto [r, c, v] : entries) {
      a.row_idx.push_back(r);
      a.col_idx.push_back(c);
      a.values.push_back(v);
    }
    return a;
  };
  const std::vector<std::tuple<int, int, double>> ordered{{1, 0, 1.5}, {1, 4, -2.0}, {3, 2, 0.25}, {3, 5, -0.0},
                                                          {5, 1, 7.0}};
  for (const auto& [name, entries] :
       std::vector<std::pair<std::string, std::vector<std::tuple<int, int, double>>>>{
           {"strict order", ordered},
           {"columns falling in a row", {{1, 4, -2.0}, {1, 0, 1.5}, {3, 2, 0.25}, {3, 5, -0.0}, {5, 1, 7.0}}},
           {"adjacent duplicate", {{1, 0, 1.5}, {1, 4, -2.0}, {1, 4, 0.5}, {3, 2, 0.25}, {5, 1, 7.0}}},
           {"a row going back", {{1, 0, 1.5}, {3, 2, 0.25}, {1, 4, -2.0}, {3, 5, -0.0}, {5, 1, 7.0}}}}) {
    SCOPED_TRACE(name);
    const auto a = make(entries);
    const auto g = to_host(gpu::coo_to_csr(to_device(a), ctx));
    validate(g);
    EXPECT_TRUE(equal(g, cpu::coo_to_csr(a)));
    check_all_types(a, ctx);
  }
}

// Columns beyond 32 bits: the column sort runs over 41 key bits.
TEST(GpuCooToCsr, SortsColumnsBeyond32Bits) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  coo<double, std::int64_t> a;
  a.rows = 1000;
  a.cols = std::int64_t{1} << 41;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::int64_t> row(0, a.rows - 1), col(0, a.cols - 1), few(0, 7);
  for (int k = 0; k < 20000; ++k) {
    a.row_idx.push_back(row(rng));
    // Some columns repeat (duplicates), the others spread over all 41 bits.
    a.col_idx.push_back(k % 4 == 0 ? few(rng) << 38 : col(rng));
    a.values.push_back(static_cast<double>(k % 97) / 7.0 - 6.0);
  }
  const auto c = cpu::coo_to_csr(a);
  ASSERT_LT(c.nnz(), a.nnz());  // the test holds duplicates
  EXPECT_TRUE(equal(to_host(gpu::coo_to_csr(to_device(a), ctx)), c));
}

TEST(GpuCooToCsr, RefusesBadInputWithTheCpuMessages) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  coo<double, std::int32_t> good;
  good.rows = 4;
  good.cols = 5;
  good.row_idx = {0, 3, 1, 2, 3};
  good.col_idx = {4, 0, 2, 2, 1};
  good.values = {1, 2, 3, 4, 5};
  std::vector<coo<double, std::int32_t>> bad;
  bad.push_back(good);
  bad.back().row_idx[3] = 4;  // row out of range
  bad.push_back(good);
  bad.back().row_idx[4] = -1;  // two bad rows: the first is named
  bad.back().row_idx[2] = 7;
  bad.push_back(good);
  bad.back().col_idx[1] = -3;  // a bad column
  bad.push_back(good);
  bad.back().col_idx[0] = 5;  // bad column and bad row: the row is named first, as on the CPU
  bad.back().row_idx[4] = 9;
  bad.push_back(good);
  bad.back().values.pop_back();  // length mismatch
  bad.push_back(good);
  bad.back().rows = -1;  // negative shape
  for (std::size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(i);
    std::string cpu_what;
    try {
      cpu::coo_to_csr(bad[i]);
      ADD_FAILURE() << "the CPU accepted the input";
    } catch (const error& e) {
      cpu_what = e.what();
    }
    test::expect_error([&] { gpu::coo_to_csr(to_device(bad[i]), ctx); }, errc::bad_input, cpu_what);
  }
  // The GPU stays usable after refusing input.
  EXPECT_TRUE(equal(to_host(gpu::coo_to_csr(to_device(good), ctx)), cpu::coo_to_csr(good)));
}
