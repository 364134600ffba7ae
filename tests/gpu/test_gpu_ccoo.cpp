// CCOO on the GPU: CSR <-> CCOO conversions byte for byte against the CPU converters (both
// directions, generated and real matrices, automatic and explicit chunk sizes, special
// values, value table and direct chunks, no table where no chunk could use one, every column
// width, row offset 255, refusals), and the SpMV kernels (the block kernel, table warps)
// against the CSR reference.
// Every test skips on a machine without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "convert/cpu/ccoo.hpp"
#include "convert/gpu/ccoo.hpp"
#include "formats/device.hpp"
#include "io/matrix_file.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/gpu/spmv_ccoo.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
using test::expect_error;

namespace {

// The generated matrix whose x alone would take 2^28 elements: left out of the SpMV tests.
constexpr std::string_view huge_cols = "cols_near_2pow28";

// Automatic, the paper's 256 x 4, and chunks that are small, odd (B not a multiple of the
// warp), or hold K beyond the kernel's compile-time K (8, 1024), so that rows span many
// chunks, the last chunk is partial and every kernel variant runs.
const std::vector<ccoo_params> requests = {{0, 0}, {256, 4}, {256, 1}, {256, 2}, {1, 1},
                                           {2, 3}, {5, 8},   {3, 2},   {100, 2}, {4, 1024}};
const std::vector<ccoo_params> real_requests = {{0, 0}, {256, 4}, {3, 2}};

std::string describe(const ccoo_params& p) {
  return "chunk " + std::to_string(p.chunk_b) + "x" + std::to_string(p.chunk_k);
}

// The parameters are resolved on the host (cpu::resolve_ccoo_params), as a GPU caller does;
// the GPU conversion of the CSR must equal the CPU's, and the GPU conversion back of the
// CPU's CCOO must equal the CPU's CSR.
template <class V>
void check_conversions(const csr<V, std::int32_t>& a, const ccoo_params& request, gpu_context& ctx) {
  SCOPED_TRACE(std::string(type_name<V>()) + " " + describe(request));
  const ccoo_params p = cpu::resolve_ccoo_params(a, request);
  const ccoo<V> want = cpu::csr_to_ccoo(a, p);
  EXPECT_TRUE(equal(to_host(gpu::csr_to_ccoo(to_device(a), p, ctx)), want));
  EXPECT_TRUE(equal(to_host(gpu::ccoo_to_csr(to_device(want), ctx)), cpu::ccoo_to_csr(want)));
}

const char* kernel_name(gpu::ccoo_kernel k) { return k == gpu::ccoo_kernel::blocks ? "blocks" : "table_warps"; }

// The kernels that take chunks of b x k: the block kernel, and table warps where the shape fits.
std::vector<gpu::ccoo_kernel> kernels_for(int b, int k) {
  if (gpu::ccoo_table_warps_fit(b, k)) return {gpu::ccoo_kernel::blocks, gpu::ccoo_kernel::table_warps};
  return {gpu::ccoo_kernel::blocks};
}

// (1, 0) on a y full of NaN (beta == 0 must not read y), (-0.5, 2) and (0.75, 1) (beta == 1
// leaves y unscaled before the atomic adds), within the CSR reference's tolerance.
template <class V>
void check_spmv(const csr<V, std::int32_t>& a, const ccoo<V>& m, gpu_context& ctx, gpu::ccoo_kernel kernel) {
  SCOPED_TRACE(std::string(type_name<V>()) + " " + describe(m.params) + " " + kernel_name(kernel));
  const auto d = to_device(m);
  const std::vector<V> x = test::test_vector<V>(a.cols, 1), y0 = test::test_vector<V>(a.rows, 2);
  const std::vector<V> nan(a.rows, std::numeric_limits<V>::quiet_NaN());
  device_array<V> dx, dy;
  dx.upload(x.data(), x.size());
  const double tol = cpu::spmv_tolerance<V>(test::max_row_length(a));
  for (const auto& [alpha, beta] : {std::pair<V, V>{1, 0}, std::pair<V, V>{-0.5, 2}, std::pair<V, V>{0.75, 1}}) {
    dy.upload(beta == V(0) ? nan.data() : y0.data(), a.rows);
    gpu::spmv(d, alpha, dx.data(), beta, dy.data(), ctx, kernel);
    ctx.synchronize();
    const auto y = test::download(dy);
    EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data()), tol)
        << "alpha " << alpha << " beta " << beta;
  }
}

// The same by the block kernel and, where its shape fits, by table warps.
template <class V>
void check_spmv(const csr<V, std::int32_t>& a, const ccoo<V>& m, gpu_context& ctx) {
  for (const auto kernel : kernels_for(m.params.chunk_b, m.params.chunk_k)) check_spmv(a, m, ctx, kernel);
}

using row_list = std::vector<std::vector<std::pair<int, double>>>;

csr<double, std::int32_t> from_rows(std::int64_t cols, const row_list& rows) {
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

void check_both_types(const csr<double, std::int32_t>& a, const ccoo_params& p, gpu_context& ctx) {
  check_conversions(a, p, ctx);
  check_conversions(test::cast_values<float>(a), p, ctx);
}

}  // namespace

// ---- conversions ---------------------------------------------------------------------

TEST(GpuCcooConvert, MatchesTheCpuOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  for (const auto& g : test::generator_set()) {
    SCOPED_TRACE(g.name);
    for (const auto& p : requests) check_both_types(g.a, p, ctx);
  }
}

TEST(GpuCcooConvert, MatchesTheCpuOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    for (const auto& p : real_requests) check_both_types(in.a, p, ctx);
  }
}

// Stored +0.0 and -0.0, a NaN with a payload, infinities, a denormal: the table counts
// values by their bits and the pad bitmap keeps stored zeros apart from padding.
TEST(GpuCcooConvert, StoredZerosSignedZerosNaNsAndInfinities) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const double nan_payload = std::bit_cast<double>(std::uint64_t{0x7ff8000000000123});
  const double inf = std::numeric_limits<double>::infinity();
  const auto a = from_rows(5, {{{3, 0.0}},
                               {},
                               {{0, -0.0}, {4, nan_payload}},
                               {{1, inf}, {2, -inf}, {3, 0.0}},
                               {{2, std::numeric_limits<double>::denorm_min()}}});
  for (const auto& p : requests) check_both_types(a, p, ctx);
}

// Rows 0-19 use three values (table chunks), rows 20-39 unique ones: more than 256
// distinct values, so those chunks store their values directly and the table is full.
TEST(GpuCcooConvert, MixesTableAndDirectChunks) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  row_list rows(40);
  for (int r = 0; r < 40; ++r)
    for (int c = 0; c < 40; c += 3) rows[r].push_back({c, r < 20 ? 1.0 + (r + c) % 3 : 1.0 + r * 1000 + c});
  const auto a = from_rows(40, rows);
  const auto m = cpu::csr_to_ccoo(a, {4, 4});
  ASSERT_TRUE(m.chunk_format[0] & ccoo_code::lut);
  ASSERT_FALSE(m.chunk_format[m.chunk_format.size() - 1] & ccoo_code::lut);
  ASSERT_EQ(m.table.size(), ccoo_table_capacity);
  check_both_types(a, {4, 4}, ctx);
  check_both_types(a, {1, 1}, ctx);
}

namespace {

// 2.9M random doubles, one in 7 replaced by one of 5 frequent values (0..4), and the first
// `frequent_rows` rows made of those only: more distinct patterns than one count takes (and
// than the global hash table's 2^21 slots).
csr<double, std::int32_t> mostly_distinct(std::int64_t frequent_rows) {
  auto a = test::random_csr(4000, 4000, 800.0, 3);
  for (std::size_t k = 0; k < a.values.size(); ++k)
    if (k % 7 == 0 || k < static_cast<std::size_t>(a.row_ptr[frequent_rows])) a.values[k] = static_cast<double>(k % 5);
  return a;
}

}  // namespace

// Every chunk of 1024 value fields holds ~880 distinct patterns, more than a table (256): no
// chunk could use any table, so the converter skips the count and stores none, as the CPU
// does.
TEST(GpuCcooConvert, NoChunkATableCouldCoverStoresNoTable) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto a = mostly_distinct(0);
  ASSERT_GT(a.nnz(), std::int64_t{1} << 21);
  check_both_types(a, {256, 4}, ctx);
  EXPECT_TRUE(cpu::csr_to_ccoo(a, {256, 4}).table.empty());
}

// With its first 300 rows of the frequent values only, those chunks are covered by the
// table, so its exact order matters; the patterns overflow the global hash table: the
// radix-sort route counts them and must give the CPU's table.
TEST(GpuCcooConvert, ManyDistinctValuesTakeTheSortRoute) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto a = mostly_distinct(300);
  check_conversions(a, {256, 4}, ctx);
  EXPECT_FALSE(cpu::csr_to_ccoo(a, {256, 4}).table.empty());
}

namespace {

// Chunks of 1024 value fields (rows of 4 entries, chunk 256 x 4, no padding), then
// `extra_rows` rows in a last, partial chunk; chunk c cycles through 257 patterns
// 1000 (c + 1) + 0, 1, ..., chunk 0 through `chunk0_distinct` patterns 1, 2, ... (the smallest
// patterns, 4 of each). 8K chunks of 257 patterns: too many to count at once.
csr<double, std::int32_t> chunks_of_patterns(std::int64_t chunks, std::int64_t extra_rows, int chunk0_distinct) {
  csr<double, std::int32_t> a;
  a.rows = chunks * 256 + extra_rows;
  a.cols = 1 << 16;
  a.row_ptr.resize(static_cast<std::size_t>(a.rows) + 1);
  for (std::int64_t r = 0; r <= a.rows; ++r) a.row_ptr[r] = static_cast<std::int32_t>(4 * r);
  a.col_idx.resize(static_cast<std::size_t>(4 * a.rows));
  a.values.resize(a.col_idx.size());
  for (std::int64_t e = 0; e < 4 * a.rows; ++e) {
    const std::int64_t c = e / 1024, i = e % 1024;
    a.col_idx[e] = static_cast<std::int32_t>(e / 4 * 28 % (a.cols - 4) + e % 4);  // increasing in a row
    a.values[e] = c == 0 ? static_cast<double>(1 + i % chunk0_distinct) : static_cast<double>(1000 * (c + 1) + i % 257);
  }
  return a;
}

}  // namespace

// The bounds of find_coverable_chunk: chunks of 257 distinct patterns, one more than a table
// holds, are never covered (no table, no count); chunk 0 with 256 of the smallest patterns, as
// frequent as any, is covered by the exact table (counted on the sort route); a last chunk of
// 64 rows (256 value fields) could be covered whatever its values, so the table is counted
// (sort route), and comes out unused.
TEST(GpuCcooConvert, ChunksOf256And257DistinctPatterns) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  using want = std::tuple<int, std::int64_t, std::size_t>;  // chunk 0's patterns, rows more, table size
  for (const auto& [first, extra, table] : {want{257, 0, 0}, want{256, 0, 256}, want{257, 64, 0}}) {
    SCOPED_TRACE("chunk 0 with " + std::to_string(first) + " patterns, " + std::to_string(extra) + " rows more");
    const auto a = chunks_of_patterns(8192, extra, first);
    check_both_types(a, {256, 4}, ctx);
    EXPECT_EQ(cpu::csr_to_ccoo(a, {256, 4}).table.size(), table);
  }
}

namespace {

// Values cycling through `cycle` distinct patterns (1, 2, ...), with one entry in 7 taking one
// of 5 frequent values (0..4), and the first `table_rows` rows made of frequent values only:
// their chunks are covered by the value table only if its order, which depends on every
// exact count (ties among the cycling values go by pattern), comes out right.
csr<double, std::int32_t> cycling_values(std::int64_t n, std::uint64_t seed, std::int64_t cycle,
                                         std::int64_t table_rows) {
  auto a = test::random_csr(n, n, 800.0, seed);
  for (std::size_t k = 0; k < a.values.size(); ++k)
    a.values[k] = k % 7 == 0 ? static_cast<double>(k % 5) : 1.0 + static_cast<double>(k % cycle);
  for (std::size_t k = 0; k < static_cast<std::size_t>(a.row_ptr[table_rows]); ++k)
    a.values[k] = static_cast<double>(k % 5);
  return a;
}

}  // namespace

// Every counting block (one per multiprocessor, 8192-value tiles) meets ~24K of 60K distinct
// patterns, more than its shared table takes (2^14 slots on an H100): the count is redone in
// partitions of the patterns.
TEST(GpuCcooConvert, ManyDistinctValuesAreCountedInPartitions) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto a = cycling_values(4000, 5, 60000, 300);
  ASSERT_GT(a.nnz(), 2500000);
  check_both_types(a, {256, 4}, ctx);
}

// ~270K distinct patterns per counting block (one per multiprocessor), beyond even 16
// partitions of its table, though the whole matrix holds only 1M: the sort route counts.
TEST(GpuCcooConvert, DistinctValuesBeyondEveryPartitionTakeTheSortRoute) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto a = cycling_values(50000, 7, 1000000, 2000);
  ASSERT_GT(a.nnz(), 35000000);
  check_conversions(a, {256, 4}, ctx);
}

// One chunk per row with 8-, 16- and 32-bit column offsets.
TEST(GpuCcooConvert, ColumnOffsetWidths) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto a = from_rows(200000, {{{7, 1.0}, {207, 2.0}}, {{0, 3.0}, {60000, 4.0}}, {{0, 5.0}, {199999, 6.0}}});
  const auto m = cpu::csr_to_ccoo(a, {1, 2});
  ASSERT_EQ(m.chunk_format.size(), 3u);
  for (int c = 0; c < 3; ++c) ASSERT_EQ(ccoo_code::width_code(m.chunk_format[c]), c);
  check_both_types(a, {1, 2}, ctx);
  check_both_types(a, {3, 2}, ctx);
}

// 300 empty rows, one padding group each: the first chunk of 256 groups spans rows 0..255,
// the largest row offset one byte holds; the table holds only +0.0, from padding alone.
TEST(GpuCcooConvert, ChunkOfEmptyRowsReachesRowOffset255) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto a = from_rows(3, row_list(300));
  const auto m = cpu::csr_to_ccoo(a, {256, 1});
  ASSERT_EQ(m.blob[m.chunk_ptr[0] + 255], 255);
  check_both_types(a, {256, 1}, ctx);
  check_both_types(a, {256, 4}, ctx);
}

TEST(GpuCcooConvert, RefusesPaddedEntriesBeyondInt32WithTheCpuMessage) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  // 2^21 + 1 empty rows padded to groups of 1024: 2^31 + 1024 entries.
  csr<double, std::int32_t> a;
  a.rows = (std::int64_t{1} << 21) + 1;
  a.cols = 1;
  a.row_ptr.assign(static_cast<std::size_t>(a.rows + 1), 0);
  std::string cpu_what;
  try {
    cpu::csr_to_ccoo(a, {256, 1024});
    ADD_FAILURE() << "the CPU accepted the input";
  } catch (const error& e) {
    cpu_what = e.what();
  }
  test::expect_error([&] { gpu::csr_to_ccoo(to_device(a), {256, 1024}, ctx); }, errc::unsupported, cpu_what);
}

TEST(GpuCcooConvert, RequiresResolvedParameters) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto d = to_device(test::random_csr(20, 20, 3.0, 5));
  test::expect_error([&] { gpu::csr_to_ccoo(d, {0, 4}, ctx); }, errc::usage, "chunk_b = 0 is out of range [1, 256]");
  test::expect_error([&] { gpu::csr_to_ccoo(d, {256, 1025}, ctx); }, errc::usage, "chunk_k = 1025 is out of range [1, 1024]");
}

// ---- SpMV -------------------------------------------------------------------------------

TEST(GpuCcooSpmv, MatchesTheCpuReferenceOnGeneratedMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  for (const auto& g : test::generator_set()) {
    if (g.name == huge_cols) continue;
    SCOPED_TRACE(g.name);
    const auto f = test::cast_values<float>(g.a);
    for (const auto& p : requests) {
      check_spmv(g.a, cpu::csr_to_ccoo(g.a, p), ctx);
      check_spmv(f, cpu::csr_to_ccoo(f, p), ctx);
    }
  }
}

TEST(GpuCcooSpmv, MatchesTheCpuReferenceOnRealMatrices) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  ASSERT_FALSE(test::real_set().empty()) << "no matrices under " << test::shared_dir();
  gpu_context ctx;
  for (const auto& in : test::real_set()) {
    SCOPED_TRACE(in.name);
    const auto f = test::cast_values<float>(in.a);
    for (const auto& p : real_requests) {
      check_spmv(in.a, cpu::csr_to_ccoo(in.a, p), ctx);
      check_spmv(f, cpu::csr_to_ccoo(f, p), ctx);
    }
  }
}

// Row 1 is empty: its padding entries have column 0 (the baseline), where x is Inf. A
// multiplied pad would give 0 * Inf = NaN; the CSR product gives 0. The kernels compiled for
// K = 1, 2, 4 read a group's pad bits as one byte, the others (3, 8) bit by bit.
TEST(GpuCcooSpmv, PaddingDoesNotTouchInfinitiesInX) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto a = from_rows(2, {{{0, 1.0}}, {}});
  const std::vector<double> x = {std::numeric_limits<double>::infinity(), 1.0};
  device_array<double> dx, dy;
  dx.upload(x.data(), x.size());
  for (const int k : {1, 2, 3, 4, 8}) {
    const auto m = cpu::csr_to_ccoo(a, {256, k});
    ASSERT_TRUE(m.chunk_format[0] & ccoo_code::lut);  // a table chunk: table warps take it
    const auto d = to_device(m);
    for (const auto kernel : kernels_for(256, k)) {
      SCOPED_TRACE("K = " + std::to_string(k) + ", " + kernel_name(kernel));
      const std::vector<double> y0(2, 5.0);
      dy.upload(y0.data(), y0.size());
      gpu::spmv(d, 1.0, dx.data(), 0.0, dy.data(), ctx, kernel);
      ctx.synchronize();
      const auto y = test::download(dy);
      EXPECT_EQ(y[0], std::numeric_limits<double>::infinity());
      EXPECT_EQ(y[1], 0.0);
    }
  }
}

// One row of 1000 entries across 250 chunks of 2 x 2 between short rows: the segment sums
// of many blocks meet in one element of y.
TEST(GpuCcooSpmv, RowAcrossManyChunks) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  row_list rows(3);
  rows[0] = {{5, 3.0}};
  for (int c = 0; c < 1000; ++c) rows[1].push_back({c, 1.0 / (1 + c % 7)});
  rows[2] = {{999, -2.0}};
  const auto a = from_rows(1000, rows);
  check_spmv(a, cpu::csr_to_ccoo(a, {2, 2}), ctx);
  check_spmv(a, cpu::csr_to_ccoo(a, {256, 1}), ctx);
}

// Table warps: a lane takes K consecutive groups a step, so rows end inside lanes, continue
// across lanes, steps and chunks, and fill whole chunks (one row of 3000 entries: single-row
// chunks); empty rows are groups of padding; rows 600-639 hold unique values, so their chunks
// are direct (the block kernel's) between table chunks, and the last chunk is partial. Every
// K the kernel is compiled for, both value types, both kernels.
TEST(GpuCcooSpmv, TableWarpsJoinRowsAcrossLanesStepsAndChunks) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  row_list rows(1000);
  for (int r = 0; r < 1000; ++r) {
    const int len = r == 300 ? 3000 : r % 11 == 5 ? 0 : 1 + (r * 7) % 37;
    for (int j = 0; j < len; ++j) {
      const int c = (r * 13 + j * (r == 300 ? 1 : 17)) % 3000;
      rows[r].push_back({c, r >= 600 && r < 640 ? 1.0 + r * 1000 + j : 1.0 + (r + j) % 3});
    }
    std::sort(rows[r].begin(), rows[r].end());
    rows[r].erase(std::unique(rows[r].begin(), rows[r].end(),
                              [](const auto& u, const auto& v) { return u.first == v.first; }),
                  rows[r].end());
  }
  const auto a = from_rows(3000, rows);
  const auto f = test::cast_values<float>(a);
  for (const int k : {1, 2, 4}) {
    const auto m = cpu::csr_to_ccoo(a, {256, k});
    const auto& code = m.chunk_format;
    ASSERT_TRUE(std::any_of(code.begin(), code.end(), [](auto c) { return (c & ccoo_code::lut) != 0; }));
    ASSERT_TRUE(std::any_of(code.begin(), code.end(), [](auto c) { return (c & ccoo_code::lut) == 0; }));
    ASSERT_TRUE(std::any_of(code.begin(), code.end(), [](auto c) { return (c & ccoo_code::single_row) != 0; }));
    ASSERT_NE(m.counts[0] % (256 * k), 0);  // a partial last chunk
    check_spmv(a, m, ctx);
    check_spmv(f, cpu::csr_to_ccoo(f, {256, k}), ctx);
  }
}

// Shapes the table-warp kernel is not compiled for are refused when asked for by name.
TEST(GpuCcooSpmv, TableWarpsRefuseOtherChunkShapes) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  const auto a = from_rows(2, {{{0, 1.0}}, {{1, 2.0}}});
  device_array<double> dx, dy;
  dx.upload(std::vector<double>(2, 1.0).data(), 2);
  dy.upload(std::vector<double>(2, 0.0).data(), 2);
  for (const ccoo_params p : {ccoo_params{128, 4}, ccoo_params{256, 8}}) {
    const auto d = to_device(cpu::csr_to_ccoo(a, p));
    test::expect_error([&] { gpu::spmv(d, 1.0, dx.data(), 0.0, dy.data(), ctx, gpu::ccoo_kernel::table_warps); },
                       errc::usage, "the ccoo table-warp kernel takes chunks of 256 x 1, 2 or 4");
  }
  EXPECT_TRUE(gpu::ccoo_table_warps_fit(256, 4));
  EXPECT_FALSE(gpu::ccoo_table_warps_fit(256, 3));
  EXPECT_TRUE(gpu::ccoo_table_warps_pay(7000, 256, 4 * 256 * 1000, 7000));  // 1.75 groups a row
  EXPECT_FALSE(gpu::ccoo_table_warps_pay(7000, 256, 4 * 256 * 1000 + 1, 7000));
  EXPECT_FALSE(gpu::ccoo_table_warps_pay(6999, 256, 1, 7000));  // fewer chunks than warps
  EXPECT_TRUE(gpu::ccoo_every_chunk_in_table(255));
  EXPECT_FALSE(gpu::ccoo_every_chunk_in_table(256));
  EXPECT_FALSE(gpu::ccoo_every_chunk_in_table(0));
}
