// The GPU converter graph against the CPU graph, byte for byte (every target, value and index
// type, automatic and given parameters, back to CSR from every format); gpu::spmv on every
// format of an any_device_matrix (COO and the three CSR methods included) against the CPU
// reference; HOLA-SpMV on the shapes its special cases exist for; the cuSPARSE baseline with
// set-up kept; out-of-memory and no-device errors. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "convert/graph.hpp"
#include "convert/gpu/graph.hpp"
#include "formats/any_device_matrix.hpp"
#include "kernels/gpu/spmv.hpp"
#include "kernels/gpu/spmv_any.hpp"
#include "kernels/gpu/spmv_csr_hola.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;

namespace {

// The generated matrix whose x alone would take 2^28 elements: no SpMV on it.
constexpr std::string_view huge_cols = "cols_near_2pow28";

// What the CPU graph gives, and what the GPU graph gives for the same input and options.
void expect_same_conversion(const any_matrix& in, std::string_view target, const convert_options& opt,
                            gpu_context& ctx) {
  SCOPED_TRACE(std::string(format_name(in)) + " -> " + std::string(target));
  any_matrix cpu;
  try {
    cpu = convert(in, target, opt);
  } catch (const error& e) {
    // The GPU refuses what the CPU refuses, with the same category.
    try {
      (void)gpu::convert(to_device(in), target, opt, ctx);
      ADD_FAILURE() << "the CPU refused (" << e.what() << ") but the GPU converted";
    } catch (const error& g) {
      EXPECT_EQ(g.code(), e.code()) << g.what() << " vs " << e.what();
    }
    return;
  }
  const any_matrix gpu = to_host(gpu::convert(to_device(in), target, opt, ctx));
  EXPECT_TRUE(equal(cpu, gpu));
}

void check_graph(const csr<double, std::int32_t>& a, gpu_context& ctx) {
  const any_matrix in(a);
  for (std::string_view target : format_list) {
    expect_same_conversion(in, target, {}, ctx);
    convert_options to_float;
    to_float.values = value_type::f32;
    expect_same_conversion(in, target, to_float, ctx);
    // Parameters resolved on the host first: the whole conversion stays on the device.
    expect_same_conversion(in, target, resolve_params(in, target, {}), ctx);
    // And back: X -> CSR on the GPU equals the CPU's, from the CPU's X.
    const any_matrix x = convert(in, target);
    expect_same_conversion(x, "csr", {}, ctx);
  }
  convert_options wide;
  wide.index = index_type::i64;
  expect_same_conversion(in, "csr", wide, ctx);
  expect_same_conversion(in, "coo", wide, ctx);
  const any_matrix in64 = convert(in, "csr", wide);
  for (std::string_view target : {"csr", "coo", "hyb", "csr5"}) expect_same_conversion(in64, target, {}, ctx);
}

}  // namespace

TEST(GpuGraph, MatchesTheCpuGraphOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  for (const auto& g : test::generator_set()) {
    SCOPED_TRACE(g.name);
    check_graph(g.a, ctx);
  }
}

TEST(GpuGraph, MatchesTheCpuGraphOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  ASSERT_FALSE(test::real_set().empty());
  for (const auto& g : test::real_set()) {
    SCOPED_TRACE(g.name);
    check_graph(g.a, ctx);
  }
}

// Value casts keep what the CPU's keep: NaN payloads (quiet and signalling), signed zeros,
// subnormals, infinities, and values that round.
TEST(GpuGraph, ValueCastsAreBitIdenticalToTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  auto bits_to_double = [](std::uint64_t b) {
    double d;
    std::memcpy(&d, &b, sizeof d);
    return d;
  };
  const std::vector<double> specials = {
      bits_to_double(0x7FF8000000000001ull), bits_to_double(0xFFF4000000000000ull),  // quiet, signalling
      bits_to_double(0x7FF0000020000000ull), -0.0, 0.0, 1e-310, -4.9e-324, 1e-40, 3.4028235677973366e38,
      std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), 0.1, 1.0 / 3.0};
  csr<double, std::int32_t> a;
  a.rows = 1;
  a.cols = static_cast<std::int32_t>(specials.size());
  a.row_ptr = {0, static_cast<std::int32_t>(specials.size())};
  for (std::size_t j = 0; j < specials.size(); ++j) a.col_idx.push_back(static_cast<std::int32_t>(j));
  a.values.assign(specials.begin(), specials.end());
  convert_options to_float;
  to_float.values = value_type::f32;
  expect_same_conversion(any_matrix(a), "csr", to_float, ctx);
  const any_matrix f = convert(any_matrix(a), "csr", to_float);
  convert_options to_double;
  to_double.values = value_type::f64;
  expect_same_conversion(f, "csr", to_double, ctx);
}

TEST(GpuGraph, RefusesNarrowIndicesWithTheCpuMessage) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  csr<double, std::int64_t> a;
  a.rows = 2;
  a.cols = std::int64_t{1} << 32;
  a.row_ptr = {0, 1, 2};
  a.col_idx = {5, (std::int64_t{1} << 32) - 1};
  a.values = {1.0, 2.0};
  std::string cpu_message;
  try {
    convert(any_matrix(a), "hyb");
  } catch (const error& e) {
    cpu_message = e.what();
  }
  ASSERT_FALSE(cpu_message.empty());
  test::expect_error([&] { gpu::convert(to_device(any_matrix(a)), "hyb", {}, ctx); }, errc::unsupported, cpu_message);
  test::expect_error([&] { gpu::convert(to_device(any_matrix(a)), "nope", {}, ctx); }, errc::usage, "unknown format 'nope'");
}

// ---- gpu::spmv on every format -------------------------------------------------------------

namespace {

template <class V>
void check_every_format(const csr<double, std::int32_t>& src, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()));
  const csr<V, std::int32_t> a = test::cast_values<V>(src);
  for (std::string_view target : format_list) {
    SCOPED_TRACE(std::string(target));
    any_device_matrix m;
    try {
      m = to_device(convert(any_matrix(a), target));
    } catch (const error& e) {
      if (e.code() != errc::unsupported) throw;  // e.g. CMRS beyond 2^28 columns
      continue;
    }
    for (auto method : {gpu::csr_method::hola, gpu::csr_method::rows, gpu::csr_method::cusparse}) {
      if (target != "csr" && method != gpu::csr_method::hola) continue;
      SCOPED_TRACE(static_cast<int>(method));
      test::expect_spmv_matches(a, ctx, [&](V alpha, const V* x, V beta, V* y) {
        gpu::spmv(m, alpha, x, beta, y, ctx, method);
      });
    }
  }
  // 64-bit CSR and COO.
  convert_options wide;
  wide.index = index_type::i64;
  const csr<V, std::int64_t> a64 = std::get<csr<V, std::int64_t>>(convert(any_matrix(a), "csr", wide));
  for (std::string_view target : {"csr", "coo"}) {
    const any_device_matrix m = to_device(convert(any_matrix(a64), target));
    for (auto method : {gpu::csr_method::hola, gpu::csr_method::rows, gpu::csr_method::cusparse})
      test::expect_spmv_matches(a64, ctx, [&](V alpha, const V* x, V beta, V* y) {
        gpu::spmv(m, alpha, x, beta, y, ctx, method);
      });
  }
}

}  // namespace

TEST(GpuSpmvAny, EveryFormatMatchesTheCpuOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  for (const auto& g : test::generator_set()) {
    if (g.name == huge_cols) continue;
    SCOPED_TRACE(g.name);
    check_every_format<double>(g.a, ctx);
    check_every_format<float>(g.a, ctx);
  }
}

TEST(GpuSpmvAny, EveryFormatMatchesTheCpuOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  for (const auto& g : test::real_set()) {
    SCOPED_TRACE(g.name);
    check_every_format<double>(g.a, ctx);
  }
}

TEST(GpuSpmvAny, RefusesVectorsOfAnotherValueType) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto m = to_device(any_matrix(test::random_csr(10, 10, 3, 1)));
  device_array<float> x(10), y(10);
  test::expect_error([&] { gpu::spmv(m, 1.0f, x.data(), 0.0f, y.data(), ctx); }, errc::usage, "holds float64 values, the vectors float32");
}

// ---- HOLA-SpMV special cases (hola-spmv-steinberger.txt sec. 3.3) ------------------------------

namespace {

// Rows of the given lengths, columns spread over `cols`, or over as many as the longest row
// needs: the lengths follow hola_entries_per_block, which a change of the block size moves.
csr<double, std::int32_t> rows_of_lengths(const std::vector<std::int64_t>& lengths, std::int64_t cols) {
  csr<double, std::int32_t> a;
  a.rows = static_cast<std::int64_t>(lengths.size());
  for (const std::int64_t n : lengths) cols = std::max(cols, n);
  a.cols = cols;
  a.row_ptr.push_back(0);
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    const std::int64_t n = lengths[r];
    for (std::int64_t k = 0; k < n; ++k) {
      a.col_idx.push_back(static_cast<std::int32_t>(k * cols / std::max<std::int64_t>(n, 1)));
      a.values.push_back(1.0 + static_cast<double>((r * 7 + static_cast<std::size_t>(k)) % 13) / 8.0);
    }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col_idx.size()));
  }
  return a;
}

// Both ways of finding the blocks' rows (the automatic choice takes the scatter on matrices this
// small) and both ways of loading a block (hola_loads), in double and in float (chunks of 2 and
// of 4 entries): they must give the same rows, and the core kernel the same y.
template <class V>
void check_hola_as(const csr<V, std::int32_t>& a, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()));
  const auto d = to_device(a);
  for (auto assign : {gpu::hola_row_assignment::scatter, gpu::hola_row_assignment::search})
    for (auto loads : {gpu::hola_loads::entry, gpu::hola_loads::chunk}) {
      SCOPED_TRACE(std::string(assign == gpu::hola_row_assignment::scatter ? "scatter" : "search") +
                   (loads == gpu::hola_loads::entry ? ", by entry" : ", by chunk"));
      test::expect_spmv_matches(a, ctx, [&](V alpha, const V* x, V beta, V* y) {
        gpu::spmv_hola(d, alpha, x, beta, y, ctx, assign, loads);
      });
    }
}

void check_hola(const csr<double, std::int32_t>& a, gpu_context& ctx) {
  validate(a);
  check_hola_as(a, ctx);
  check_hola_as(test::cast_values<float>(a), ctx);
}

}  // namespace

TEST(GpuHola, RowsSpanningBlocksAndEndingOnBlockBoundaries) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  constexpr std::int64_t b = gpu::hola_entries_per_block, t = gpu::hola_entries_per_thread;
  check_hola(rows_of_lengths({5 * b + 3}, 20000), ctx);                       // one row, six blocks
  check_hola(rows_of_lengths({b, b, b / 2, b / 2, t, t - 1, t + 1}, 5000), ctx);  // ends on boundaries
  check_hola(rows_of_lengths({1, 3 * b, 1, 2 * b - 1, 2, b + 1}, 9000), ctx);
  // Rows of one entry: every block ends where a row ends, and its rows past the first 256 are
  // read from row_ptr rather than from the block's cache of row ends.
  check_hola(rows_of_lengths(std::vector<std::int64_t>(5 * b + 17, 1), 3000), ctx);
  // Row lengths far from their mean: the search's first guess lies thousands of rows away.
  std::vector<std::int64_t> skewed(60000, 1);
  skewed[0] = 4 * b;
  skewed[59990] = 2 * b + 3;
  check_hola(rows_of_lengths(skewed, 10000), ctx);
  std::vector<std::int64_t> mixed;
  for (int r = 0; r < 5000; ++r) mixed.push_back(r % 97 == 0 ? 3000 : r % 5);
  check_hola(rows_of_lengths(mixed, 4000), ctx);
  // Rows of 1-41 entries: runs that pass a row through to the next lane, rows ending across
  // warps (the segmented scan of the shared rows); then blocks alternating between rows of 1-3
  // entries (the thread-per-row path) and of 20-40 (the bit-mask path), and a block of short
  // rows holding the end of a long one.
  std::vector<std::int64_t> spanning, alternating;
  for (int r = 0; r < 20000; ++r) spanning.push_back(r * 7 % 41 + 1);
  for (int r = 0; r < 30000; ++r) alternating.push_back(r / 1500 % 2 ? 20 + r % 21 : 1 + r % 3);
  alternating[4000] = 3 * b / 2;
  check_hola(rows_of_lengths(spanning, 7000), ctx);
  check_hola(rows_of_lengths(alternating, 9000), ctx);
}

TEST(GpuHola, EmptyRowsInsideAndBetweenBlocks) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  constexpr std::int64_t b = gpu::hola_entries_per_block;
  check_hola(rows_of_lengths({0, 0, 3, 0, 0, 0, 5, 0, b, 0, 0, b - 8, 0, 7, 0}, 3000), ctx);
  std::vector<std::int64_t> sparse_rows;  // a few entries among many empty rows: more rows per
  for (int r = 0; r < 200000; ++r) sparse_rows.push_back(r % 50 == 0 ? 1 : 0);  // block than its buffer
  check_hola(rows_of_lengths(sparse_rows, 100), ctx);
  std::vector<std::int64_t> tail_empty(3000, 0);
  tail_empty[0] = 2 * b + 5;
  check_hola(rows_of_lengths(tail_empty, 6000), ctx);
  check_hola(rows_of_lengths({b, b, 0, 0}, 3 * b), ctx);  // whole blocks, then empty rows
  check_hola(rows_of_lengths(std::vector<std::int64_t>(1000, 0), 10), ctx);  // no entries at all
}

// Chunks need 16-byte aligned columns and values: arrays that start elsewhere (spmv_hola_arrays
// on another format's arrays) are loaded by entry whatever was asked.
TEST(GpuHola, UnalignedArraysAreLoadedByEntry) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto a = rows_of_lengths(std::vector<std::int64_t>(3 * gpu::hola_entries_per_block, 2), 4000);
  // The arrays one element into their allocations: 4 and 8 bytes past a 16-byte boundary.
  std::vector<std::int32_t> col(1, 0);
  std::vector<double> val(1, 0.0);
  col.insert(col.end(), a.col_idx.begin(), a.col_idx.end());
  val.insert(val.end(), a.values.begin(), a.values.end());
  device_array<std::int32_t> dptr, dcol;
  device_array<double> dval;
  dptr.upload(a.row_ptr.data(), a.row_ptr.size());
  dcol.upload(col.data(), col.size());
  dval.upload(val.data(), val.size());
  test::expect_spmv_matches(a, ctx, [&](double alpha, const double* x, double beta, double* y) {
    gpu::spmv_hola_arrays(a.rows, a.nnz(), dptr.data(), dcol.data() + 1, dval.data() + 1, alpha, x, beta, y, ctx,
                          gpu::hola_row_assignment::automatic, gpu::hola_loads::chunk);
  });
}

// ---- the cuSPARSE baseline with its set-up kept -----------------------------------------------

TEST(GpuCusparse, KeptSetUpGivesTheOneShotResultEveryCall) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  for (const auto& g : test::generator_set()) {
    if (g.name == huge_cols) continue;
    SCOPED_TRACE(g.name);
    const auto d = to_device(g.a);
    const auto x = test::test_vector<double>(g.a.cols, 3);
    device_array<double> dx, dy1, dy2;
    dx.upload(x.data(), x.size());
    dy1.resize(static_cast<std::size_t>(g.a.rows));
    dy2.resize(static_cast<std::size_t>(g.a.rows));
    gpu::cusparse_spmv<double, std::int32_t> plan(d, dx.data(), dy2.data(), ctx);
    gpu::spmv_cusparse(d, 2.0, dx.data(), 0.0, dy1.data(), ctx);
    for (int call = 0; call < 3; ++call) {
      plan(2.0, 0.0);
      ctx.synchronize();
      EXPECT_EQ(test::download(dy1), test::download(dy2)) << "call " << call;
    }
  }
}

// ---- errors: no such device, device memory exhausted ---------------------------------------

TEST(GpuErrors, NoSuchDeviceIsADeviceError) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  test::expect_error([] { gpu_context bad(1000); }, errc::device, "");
}

// Every conversion of the graph, with the device memory all but taken: a device error naming
// what ran out, never a crash or another kind of error; and the context still works after.
TEST(GpuErrors, EveryConversionReportsShortDeviceMemory) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const csr<double, std::int32_t> a = test::random_csr(400000, 400000, 24, 7);  // ~115 MB as CSR
  const any_matrix host(a);
  std::vector<std::pair<std::string, any_matrix>> sources;
  for (std::string_view target : format_list) sources.emplace_back(std::string(target), convert(host, target));
  std::vector<any_device_matrix> on_device;
  for (const auto& s : sources) on_device.push_back(to_device(s.second));
  std::vector<convert_options> resolved;
  for (std::string_view target : format_list) resolved.push_back(resolve_params(host, target, {}));
  {
    // Leave 16 MB free: less than any of these conversions needs.
    device_array<std::uint8_t> hog;
    const std::size_t free = device_memory_info().free;
    ASSERT_GT(free, std::size_t{64} << 20);
    hog.resize(free - (std::size_t{16} << 20));
    for (std::size_t t = 0; t < format_list.size(); ++t) {
      SCOPED_TRACE(std::string(format_list[t]));
      test::expect_error([&] { gpu::convert(on_device.front(), format_list[t], resolved[t], ctx); }, errc::device,
                         "device memory");
      if (format_list[t] != "csr")
        test::expect_error([&] { gpu::convert(on_device[t], "csr", {}, ctx); }, errc::device, "device memory");
    }
  }
  ctx.synchronize();
  const any_matrix back = to_host(gpu::convert(on_device.front(), "csr5", resolved[4], ctx));
  EXPECT_TRUE(equal(back, sources[4].second));
}
