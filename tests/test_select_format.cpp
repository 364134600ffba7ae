// select_format (convert/select_format.hpp, specs/select_format.md): generated matrices of
// each kind get the format the decision lists promise on the GPU and on the CPU, the reason
// names the deciding statistic, every stored format of a matrix gets the same choice as its
// CSR, and `spconv info` prints the recommendation.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/graph.hpp"
#include "convert/select_format.hpp"
#include "formats/describe.hpp"
#include "io/matrix_file.hpp"
#include "tests/support/matrices.hpp"
#include "tests/support/process.hpp"

using namespace spconv;

namespace {

using C = csr<double, std::int32_t>;
using row_columns = std::function<void(std::int64_t, std::vector<std::int64_t>&)>;
using entry_value = std::function<double(std::int64_t, std::int64_t)>;

C make(std::int64_t rows, std::int64_t cols, const row_columns& row_cols, const entry_value& value) {
  return test::csr_from_columns(rows, cols, row_cols, value);
}

// 4093 distinct values: far beyond CCOO's 256-value table.
double varied(std::int64_t r, std::int64_t c) { return 1.0 + static_cast<double>((r * 131 + c * 7) % 4093) / 4096.0; }

// A Laplacian's values: 2 * dims on the diagonal, -1 elsewhere (2 distinct values).
entry_value laplacian(int dims) {
  return [dims](std::int64_t r, std::int64_t c) { return r == c ? 2.0 * dims : -1.0; };
}

// 5-point stencil on an n x n grid.
C stencil2d(std::int64_t n, const entry_value& value) {
  return make(n * n, n * n, [n](std::int64_t r, std::vector<std::int64_t>& cs) {
    const std::int64_t i = r / n, j = r % n;
    cs.push_back(r);
    if (i > 0) cs.push_back(r - n);
    if (i + 1 < n) cs.push_back(r + n);
    if (j > 0) cs.push_back(r - 1);
    if (j + 1 < n) cs.push_back(r + 1);
  }, value);
}

// 7-point stencil on an n x n x n grid.
C stencil3d(std::int64_t n, const entry_value& value) {
  return make(n * n * n, n * n * n, [n](std::int64_t r, std::vector<std::int64_t>& cs) {
    const std::int64_t i = r / (n * n), j = r / n % n, k = r % n;
    cs.push_back(r);
    if (i > 0) cs.push_back(r - n * n);
    if (i + 1 < n) cs.push_back(r + n * n);
    if (j > 0) cs.push_back(r - n);
    if (j + 1 < n) cs.push_back(r + n);
    if (k > 0) cs.push_back(r - 1);
    if (k + 1 < n) cs.push_back(r + 1);
  }, value);
}

// Power-law row lengths: row r of `rows` has about `scale / (1 + rank)` entries, the rank a
// scrambled r, so that long and short rows are interleaved; random columns.
C power_law(std::int64_t rows, std::int64_t scale, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> col(0, rows - 1);
  return make(rows, rows, [&](std::int64_t r, std::vector<std::int64_t>& cs) {
    const std::int64_t rank = (r * 7919) % rows;
    const std::int64_t len = 1 + scale / (1 + rank);
    for (std::int64_t k = 0; k < len; ++k) cs.push_back(col(rng));
  }, varied);
}

// Two row lengths: 40% of the rows (interleaved) have `long_len` random entries, the others
// `short_len`, so that HYB's ELL part is as wide as the long rows and mostly padding.
C two_row_lengths(std::int64_t rows, std::int64_t long_len, std::int64_t short_len) {
  std::mt19937_64 rng(13);
  std::uniform_int_distribution<std::int64_t> col(0, rows - 1);
  return make(rows, rows, [&](std::int64_t r, std::vector<std::int64_t>& cs) {
    const std::int64_t len = r % 5 < 2 ? long_len : short_len;
    for (std::int64_t k = 0; k < len; ++k) cs.push_back(col(rng));
  }, varied);
}

// Block-banded: block row q holds `per_row` full b x b blocks at block columns q - 1, q, q + 1, ...
C dense_blocks(std::int64_t block_rows, std::int64_t b, std::int64_t per_row) {
  return make(block_rows * b, block_rows * b, [=](std::int64_t r, std::vector<std::int64_t>& cs) {
    const std::int64_t q = r / b;
    for (std::int64_t t = 0; t < per_row; ++t) {
      const std::int64_t qc = q - per_row / 2 + t;
      if (qc < 0 || qc >= block_rows) continue;
      for (std::int64_t j = 0; j < b; ++j) cs.push_back(qc * b + j);
    }
  }, varied);
}

// dense_blocks' layout with 2 x 2 blocks holding only their diagonal: blocks of any size
// carry as much fill as entries, so BCSR's rule keeps 1 x 1.
C half_filled_blocks(std::int64_t block_rows, std::int64_t per_row) {
  return make(block_rows * 2, block_rows * 2, [=](std::int64_t r, std::vector<std::int64_t>& cs) {
    const std::int64_t q = r / 2;
    for (std::int64_t t = 0; t < per_row; ++t) {
      const std::int64_t qc = q - per_row / 2 + t;
      if (qc >= 0 && qc < block_rows) cs.push_back(qc * 2 + r % 2);
    }
  }, varied);
}

// Random pattern, 3 distinct values.
C few_values(std::int64_t rows, double per_row, std::uint64_t seed) {
  C a = test::random_csr(rows, rows, per_row, seed);
  for (std::size_t k = 0; k < a.values.size(); ++k) a.values[k] = 0.5 * static_cast<double>(1 << (k % 3));
  return a;
}

// `len` random columns in every row (one fewer in row 0 when `ragged`): scattered columns,
// so that CCOO's column offsets take 4 bytes.
C scattered_rows(std::int64_t rows, std::int64_t len, bool ragged, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> col(0, rows - 1);
  return make(rows, rows, [&](std::int64_t r, std::vector<std::int64_t>& cs) {
    const std::int64_t want = len - (ragged && r == 0 ? 1 : 0);
    while (static_cast<std::int64_t>(cs.size()) < want) {
      cs.push_back(col(rng));
      std::sort(cs.begin(), cs.end());
      cs.erase(std::unique(cs.begin(), cs.end()), cs.end());
    }
  }, varied);
}

// One or two entries per row.
C short_rows(std::int64_t rows, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> col(0, rows - 1);
  return make(rows, rows, [&](std::int64_t r, std::vector<std::int64_t>& cs) {
    cs.push_back(col(rng));
    if (r % 2 == 0) cs.push_back(col(rng));
  }, varied);
}

// Arrowhead: row 0 and column 0 full, plus the diagonal.
C arrow(std::int64_t n) {
  return make(n, n, [n](std::int64_t r, std::vector<std::int64_t>& cs) {
    if (r == 0) {
      for (std::int64_t c = 0; c < n; ++c) cs.push_back(c);
      return;
    }
    cs.push_back(0);
    cs.push_back(r);
  }, varied);
}

bool large(const C& a) {
  return csr_bytes(a.rows, a.nnz(), value_type::f64, index_type::i32) >= selection::gpu_launch_bound_bytes;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The pick of `a` on `d` is `format` by step `step`, and its reason names `statistic`.
void expect_pick(const std::string& name, const any_matrix& a, spmv_device d, const std::string& format,
                 const std::string& step, const std::string& statistic) {
  SCOPED_TRACE(name + " on " + std::string(to_string(d)));
  const format_choice c = select_format(a, d);
  EXPECT_EQ(c.format, format) << c.reason;
  EXPECT_EQ(c.step, step) << c.reason;
  EXPECT_TRUE(contains(c.reason, statistic)) << "reason '" << c.reason << "' does not name '" << statistic << "'";
  EXPECT_EQ(c.device, d);
  EXPECT_TRUE(contains(describe_choice(c), std::string(to_string(d)) + ": " + format + " (")) << describe_choice(c);
}

struct expectation {
  std::string format, step, statistic;
};

struct kind {
  std::string name;
  std::function<C()> make;
  bool large;  // CSR at or above gpu_launch_bound_bytes
  expectation gpu, cpu;
};

const expectation cpu_csr{"csr", "cpu-blocks", "block size is 1 x 1"};

// The decision lists of specs/select_format.md, one matrix of each kind.
std::vector<kind> kinds() {
  return {
      // Short rows whose values the table covers: the table decides (since stop 31).
      {"stencil2d_few_values", [] { return stencil2d(600, laplacian(2)); }, true,
       {"ccoo", "gpu-value-table", "2 distinct values"}, cpu_csr},
      {"stencil2d_varied", [] { return stencil2d(600, varied); }, true,
       {"csr", "gpu-short-rows", "mean 5.0 < 5.5"}, cpu_csr},
      {"stencil3d_few_values", [] { return stencil3d(64, laplacian(3)); }, true,
       {"ccoo", "gpu-value-table", "2 distinct values"}, cpu_csr},
      {"stencil3d_varied", [] { return stencil3d(64, varied); }, true,
       {"ccoo", "gpu-narrow-offsets", "2.00 bytes per entry"}, cpu_csr},
      {"stencil3d_small", [] { return stencil3d(12, varied); }, false,
       {"csr", "gpu-small", "launch-bound"}, cpu_csr},
      {"power_law", [] { return power_law(400000, 100000, 3); }, true,
       {"csr5", "gpu-rows", "COO tail"}, cpu_csr},
      {"two_row_lengths", [] { return two_row_lengths(200000, 40, 4); }, true,
       {"csr5", "gpu-rows", "% padding"}, cpu_csr},
      {"dense_blocks", [] { return dense_blocks(40000, 4, 3); }, true,
       {"ccoo", "gpu-narrow-offsets", "1.00 bytes per entry"},
       {"bcsr", "cpu-blocks", "block size is 4 x 4, 100.0% full"}},
      {"dense_blocks_small", [] { return dense_blocks(500, 3, 5); }, false,
       {"csr", "gpu-small", "launch-bound"}, {"bcsr", "cpu-blocks", "block size is 3 x 3, 100.0% full"}},
      {"half_filled_blocks", [] { return half_filled_blocks(400000, 3); }, true,
       {"csr", "gpu-short-rows", "mean 3.0"}, cpu_csr},
      {"few_distinct_values", [] { return few_values(200000, 8.0, 5); }, true,
       {"ccoo", "gpu-value-table", "3 distinct values"}, cpu_csr},
      {"very_short_rows", [] { return short_rows(1200000, 7); }, true,
       {"csr", "gpu-short-rows", "mean 1.5"}, cpu_csr},
      {"uniform_rows", [] { return scattered_rows(250000, 8, false, 17); }, true,
       {"hyb", "gpu-uniform-rows", "every row holds 8 entries"}, cpu_csr},
      {"scattered_rows", [] { return scattered_rows(250000, 8, true, 19); }, true,
       {"hyb", "gpu-rows", "even enough for HYB"}, cpu_csr},
      {"arrow_small", [] { return arrow(5000); }, false,
       {"csr5", "gpu-small-long-row", "longest row 5000 entries"}, cpu_csr},
      {"arrow_large", [] { return arrow(700000); }, true,
       {"hyb", "gpu-rows", "COO tail"}, cpu_csr},
  };
}

}  // namespace

TEST(SelectFormat, EachKindGetsThePromisedFormat) {
  for (const kind& k : kinds()) {
    const C a = k.make();
    ASSERT_EQ(large(a), k.large) << k.name << ": resize the generator";
    expect_pick(k.name, a, spmv_device::gpu, k.gpu.format, k.gpu.step, k.gpu.statistic);
    expect_pick(k.name, a, spmv_device::cpu, k.cpu.format, k.cpu.step, k.cpu.statistic);
  }
}

TEST(SelectFormat, EmptyMatricesPickCsr) {
  std::vector<test::generated> empty;
  for (auto& g : test::generator_set())
    if (g.a.nnz() == 0) empty.push_back(g);
  empty.push_back({"no_entries_1000x1000", make(1000, 1000, [](std::int64_t, std::vector<std::int64_t>&) {}, varied)});
  ASSERT_GE(empty.size(), 3u);
  for (const auto& g : empty)
    for (const spmv_device d : {spmv_device::gpu, spmv_device::cpu}) {
      expect_pick(g.name, g.a, d, "csr", "empty", "no entries");
      EXPECT_FALSE(select_format(g.a, d).stats.table_share.has_value()) << "the rule stops before the value table";
    }
}

TEST(SelectFormat, GeneratorSetOnTheGpuIsLaunchBound) {
  // Every generator matrix is small: CSR's kernel unless a row is long.
  for (const auto& g : test::generator_set()) {
    if (g.a.nnz() == 0) continue;
    SCOPED_TRACE(g.name);
    const format_choice c = select_format(g.a, spmv_device::gpu);
    const bool long_row = c.stats.row_max >= selection::gpu_long_row_min_entries &&
                          static_cast<double>(c.stats.row_max) >= selection::gpu_long_row_over_mean * c.stats.row_mean;
    EXPECT_EQ(c.format, long_row ? "csr5" : "csr") << c.reason;
    EXPECT_TRUE(contains(c.reason, "launch-bound")) << c.reason;
  }
  // one_dense_row: 1000 entries against a mean of about 16.
  for (const auto& g : test::generator_set())
    if (g.name == "one_dense_row") expect_pick(g.name, g.a, spmv_device::gpu, "csr5", "gpu-small-long-row", "long row");
}

TEST(SelectFormat, LaunchBoundCountsBytesNotEntries) {
  // The same matrix is launch-bound in float (8 bytes per entry) and not in double (12).
  const C a = stencil3d(60, laplacian(3));
  ASSERT_TRUE(large(a));
  ASSERT_LT(csr_bytes(a.rows, a.nnz(), value_type::f32, index_type::i32), selection::gpu_launch_bound_bytes);
  expect_pick("double", a, spmv_device::gpu, "ccoo", "gpu-value-table", "distinct values");
  expect_pick("float", test::cast_values<float>(a), spmv_device::gpu, "csr", "gpu-small", "launch-bound");
}

TEST(SelectFormat, StatisticsAreTheRulesOwn) {
  // 7 scattered entries per row (6 in row 0): neither short nor uniform rows, no value table,
  // 4-byte CCOO offsets, so the rule reaches the HYB / CSR5 estimates.
  const C a = scattered_rows(400000, 7, true, 23);
  const format_choice g = select_format(a, spmv_device::gpu);
  EXPECT_EQ(g.stats.nnz, a.nnz());
  EXPECT_EQ(g.stats.row_max, 7);
  EXPECT_EQ(g.stats.empty_rows, 0);
  ASSERT_TRUE(g.stats.table_values && g.stats.table_share && g.stats.ccoo_offset_bytes && g.stats.hyb_ell_width &&
              g.stats.hyb_bytes);
  EXPECT_EQ(*g.stats.table_values, 256);  // the table is full: more distinct values than it holds
  EXPECT_LT(*g.stats.table_share, selection::gpu_ccoo_min_table_share);
  EXPECT_GT(*g.stats.ccoo_offset_bytes, selection::gpu_ccoo_max_offset_bytes);
  EXPECT_EQ(*g.stats.hyb_ell_width, 7);
  EXPECT_EQ(*g.stats.hyb_tail, 0);
  // HYB holds rows * 7 slots: its estimate counts them, CSR5's the entries.
  EXPECT_EQ(*g.stats.hyb_bytes, static_cast<std::uint64_t>(a.rows * 7 * 12 + 8 * (a.rows + a.cols)));
  EXPECT_GT(*g.stats.csr5_bytes, csr_bytes(a.rows, a.nnz(), value_type::f64, index_type::i32));
  EXPECT_FALSE(g.stats.bcsr_block.has_value()) << "the GPU rule does not look at blocks";

  const format_choice c = select_format(dense_blocks(1000, 4, 3), spmv_device::cpu);
  ASSERT_TRUE(c.stats.bcsr_block && c.stats.bcsr_fill && c.stats.bcsr_bytes && c.stats.bcsr_blocks);
  EXPECT_EQ(c.stats.bcsr_block->block_rows, 4);
  EXPECT_EQ(c.stats.bcsr_block->block_cols, 4);
  EXPECT_EQ(*c.stats.bcsr_blocks, 3 * 1000 - 2);
  EXPECT_DOUBLE_EQ(*c.stats.bcsr_fill, 1.0);
  EXPECT_FALSE(c.stats.table_share.has_value()) << "the CPU rule does not look at values";

  // choice_statistics lists exactly the computed ones.
  std::vector<std::string> names;
  for (const auto& [n, v] : choice_statistics(c)) names.push_back(n);
  EXPECT_NE(std::find(names.begin(), names.end(), "bcsr_fill"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "table_share"), names.end());
}

TEST(SelectFormat, TableShareCountsTheCoveredEntries) {
  // 300 distinct values: the 256 most frequent hold all but the entries of 44 rare ones.
  C a = test::random_csr(200000, 200000, 8.0, 9);
  const std::int64_t n = a.nnz();
  for (std::int64_t k = 0; k < n; ++k) a.values[k] = k < 44 ? 1000.0 + static_cast<double>(k) : static_cast<double>(k % 256);
  const format_choice c = select_format(a, spmv_device::gpu);
  ASSERT_TRUE(c.stats.table_share.has_value());
  EXPECT_DOUBLE_EQ(*c.stats.table_share, static_cast<double>(n - 44) / static_cast<double>(n));
  // 44 uncovered entries out of ~1.6M are within the rule's 1e-4: still CCOO.
  EXPECT_EQ(c.format, "ccoo") << c.reason;
  EXPECT_TRUE(contains(c.reason, "256 most frequent values cover")) << c.reason;
}

TEST(SelectFormat, StoredFormatsGetTheChoiceOfTheirCsr) {
  const std::vector<std::pair<std::string, C>> cases = {
      {"stencil3d_varied", stencil3d(60, varied)},
      {"arrow_small", arrow(3000)},
      {"dense_blocks_small", dense_blocks(300, 3, 5)},
      {"few_distinct_values", few_values(2000, 6.0, 11)},
  };
  for (const auto& [name, a] : cases) {
    std::vector<any_matrix> stored;
    for (const auto f : format_list) stored.push_back(convert(a, f));
    convert_options wide;
    wide.index = index_type::i64;
    stored.push_back(convert(a, "csr", wide));
    stored.push_back(convert(a, "coo", wide));
    for (const spmv_device d : {spmv_device::gpu, spmv_device::cpu}) {
      const format_choice want = select_format(a, d);
      for (const any_matrix& m : stored) {
        SCOPED_TRACE(name + " as " + std::string(format_name(m)) + " " + std::string(to_string(index_type_of(m))) +
                     " on " + std::string(to_string(d)));
        const format_choice got = select_format(m, d);
        EXPECT_EQ(got.format, want.format);
        EXPECT_EQ(got.step, want.step);
        EXPECT_EQ(got.reason, want.reason);
      }
    }
  }
}

TEST(SelectFormat, SixtyFourBitIndicesKeepCsr) {
  csr<double, std::int64_t> a;
  a.rows = 3;
  a.cols = std::int64_t{1} << 31;
  a.row_ptr = {0, 1, 1, 2};
  a.col_idx = {5, a.cols - 1};
  a.values = {1.0, 2.0};
  for (const spmv_device d : {spmv_device::gpu, spmv_device::cpu}) expect_pick("cols 2^31", a, d, "csr", "64-bit", "64-bit");
}

TEST(SelectFormat, InfoPrintsTheRecommendation) {
  const auto sample = test::source_dir() / "tests" / "data" / "poisson2d_40.mtx";
  const any_matrix m = read_matrix_file(sample).matrix;
  const format_choice gpu = select_format(m, spmv_device::gpu), cpu = select_format(m, spmv_device::cpu);

  const auto text = test::run_spconv({"info", sample.string()});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, describe_choice(gpu))) << text.out;
  EXPECT_TRUE(contains(text.out, describe_choice(cpu))) << text.out;

  const auto json = test::run_spconv({"info", sample.string(), "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_TRUE(j.contains("recommendation")) << json.out;
  for (const auto& [key, c] : {std::pair{"gpu", gpu}, std::pair{"cpu", cpu}}) {
    const auto& r = j["recommendation"][key];
    EXPECT_EQ(r["format"], c.format);
    EXPECT_EQ(r["reason"], c.reason);
    EXPECT_EQ(r["step"], c.step);
    EXPECT_EQ(r["statistics"]["nnz"].get<double>(), static_cast<double>(c.stats.nnz));
  }
}
