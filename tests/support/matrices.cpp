#include "tests/support/matrices.hpp"

#include "io/matrix_file.hpp"

#include <algorithm>
#include <cstdlib>
#include <random>
#include <unistd.h>

namespace spconv::test {
namespace fs = std::filesystem;

// The environment overrides the configured paths (SPCONV_SHARED_DIR, SPCONV_SOURCE_DIR,
// SPCONV_BINARY_DIR): the GPU machine runs the test binary in a copy of the tree where
// ../shared and the build tree are absent, the data and the programs travel elsewhere
// (shared/tools/gpu-bundle: .gpu/data, .gpu/bin).
namespace {
fs::path configured(const char* name, const char* fallback) {
  const char* env = std::getenv(name);
  return env && *env ? fs::path(env) : fs::path(fallback);
}
}  // namespace
fs::path shared_dir() { return configured("SPCONV_SHARED_DIR", SPCONV_SHARED_DIR); }
fs::path source_dir() { return configured("SPCONV_SOURCE_DIR", SPCONV_SOURCE_DIR); }
fs::path binary_dir() { return configured("SPCONV_BINARY_DIR", SPCONV_BINARY_DIR); }

static std::vector<fs::path> list_mtx(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".mtx") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}
std::vector<fs::path> real_matrices() { return list_mtx(shared_dir() / "matrices" / "real"); }
std::vector<fs::path> small_matrices() { return list_mtx(shared_dir() / "matrices" / "small"); }

const std::vector<generated>& real_set() {
  static const std::vector<generated> all = [] {
    std::vector<generated> v;
    for (const auto& p : real_matrices()) {
      try {
        v.push_back({p.filename().string(), std::get<csr<double, std::int32_t>>(read_matrix_file(p).matrix)});
      } catch (const error& e) {
        if (e.code() != errc::unsupported) throw;  // only the complex matrix may be refused
      }
    }
    return v;
  }();
  return all;
}

temp_dir::temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "spconv-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path = tmpl;
}
temp_dir::~temp_dir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

csr<double, std::int32_t> csr_from_columns(std::int64_t rows, std::int64_t cols,
                                           const std::function<void(std::int64_t, std::vector<std::int64_t>&)>& row_cols,
                                           const std::function<double(std::int64_t, std::int64_t)>& value) {
  csr<double, std::int32_t> a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.resize(rows + 1);
  a.row_ptr[0] = 0;
  std::vector<std::int64_t> cs;
  for (std::int64_t r = 0; r < rows; ++r) {
    cs.clear();
    row_cols(r, cs);
    std::sort(cs.begin(), cs.end());
    cs.erase(std::unique(cs.begin(), cs.end()), cs.end());
    for (auto c : cs) {
      a.col_idx.push_back(static_cast<std::int32_t>(c));
      a.values.push_back(value(r, c));
    }
    a.row_ptr[r + 1] = static_cast<std::int32_t>(a.col_idx.size());
  }
  return a;
}

csr<double, std::int32_t> block_order_passes() {
  return csr_from_columns(
      256, std::int64_t{1} << 20,
      [](std::int64_t i, std::vector<std::int64_t>& cs) {
        const std::int64_t in_group = i % 64;
        if (i < 64) {
          for (std::int64_t j = std::max<std::int64_t>(0, i - 3); j <= i + 3; ++j) cs.push_back(j);
        } else if (i < 128) {
          for (std::int64_t k = 0; k < 3; ++k) cs.push_back(k * 300000 + in_group % 4);
        } else if (i < 192) {
          for (std::int64_t k = 0; k < 12; ++k) cs.push_back(k * 80000 + (in_group * 7) % 13);
          if (in_group == 0)
            for (std::int64_t k = 0; k < 600; ++k) cs.push_back(k * 1700 + k % 5);
        } else {
          const std::int64_t n = in_group == 9 ? 32 : in_group == 42 ? 33 : 20;
          for (std::int64_t k = 0; k < n; ++k) cs.push_back(k * 20000 + (in_group * 5) % 11);
        }
      },
      [](std::int64_t i, std::int64_t j) {
        const std::int64_t h = (i * 31 + j) % 97;
        return h == 0 ? 0.0 : static_cast<double>(h) - 48.5;
      });
}

namespace {

// Canonical CSR with deterministic, non-zero and varied values (so that a value stored in the
// wrong slot is noticed).
csr<double, std::int32_t> build(std::int64_t rows, std::int64_t cols,
                                const std::function<void(std::int64_t, std::vector<std::int64_t>&)>& row_cols) {
  return csr_from_columns(rows, cols, row_cols, [](std::int64_t r, std::int64_t c) {
    return 1.0 + static_cast<double>((r * 7919 + c * 104729) % 1000) / 64.0 - 7.5;
  });
}

}  // namespace

csr<double, std::int32_t> random_csr(std::int64_t rows, std::int64_t cols, double per_row, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return build(rows, cols, [&](std::int64_t, std::vector<std::int64_t>& cs) {
    if (cols == 0) return;
    std::poisson_distribution<int> len(per_row);
    std::uniform_int_distribution<std::int64_t> col(0, cols - 1);
    for (int k = len(rng); k > 0; --k) cs.push_back(col(rng));
  });
}

std::vector<generated> generator_set() {
  std::vector<generated> g;
  auto none = [](std::int64_t, std::vector<std::int64_t>&) {};
  g.push_back({"empty_0x0", build(0, 0, none)});
  g.push_back({"empty_5x0", build(5, 0, none)});
  g.push_back({"empty_0x5", build(0, 5, none)});
  g.push_back({"all_rows_empty_7x9", build(7, 9, none)});
  g.push_back({"one_1x1", build(1, 1, [](std::int64_t, auto& cs) { cs.push_back(0); })});
  g.push_back({"diagonal_100", build(100, 100, [](std::int64_t r, auto& cs) { cs.push_back(r); })});
  g.push_back({"one_dense_row", build(64, 1000, [](std::int64_t r, auto& cs) {
                 if (r == 17)
                   for (int c = 0; c < 1000; ++c) cs.push_back(c);
                 else if (r % 3 == 0) cs.push_back(r);
               })});
  g.push_back({"banded_333", build(333, 333, [](std::int64_t r, auto& cs) {
                 for (std::int64_t c = r - 3; c <= r + 3; ++c)
                   if (c >= 0 && c < 333) cs.push_back(c);
               })});
  g.push_back({"tall_1001x7", random_csr(1001, 7, 2.0, 11)});
  g.push_back({"wide_5x3001", random_csr(5, 3001, 40.0, 12)});
  g.push_back({"random_517x389", random_csr(517, 389, 6.0, 13)});
  g.push_back({"long_rows_37x5000", random_csr(37, 5000, 700.0, 14)});
  {
    // Power-law row lengths (Zipf-like), columns clustered near the diagonal and spread.
    std::mt19937_64 rng(15);
    g.push_back({"power_law_2000", build(2000, 2000, [&](std::int64_t r, auto& cs) {
                   std::int64_t len = std::min<std::int64_t>(2000, 1 + 1500 / (1 + (r * 37) % 2000));
                   std::uniform_int_distribution<std::int64_t> col(0, 1999);
                   for (std::int64_t k = 0; k < len; ++k) cs.push_back(col(rng));
                 })});
  }
  g.push_back({"empty_rows_interleaved", build(301, 301, [](std::int64_t r, auto& cs) {
                 if (r % 4 == 1 || r % 7 == 0) return;
                 for (std::int64_t c = r % 5; c < 301; c += 37 + r % 11) cs.push_back(c);
               })});
  // Columns at the CMRS limit (28-bit column field, fewer than 2^28 columns): the last ones.
  g.push_back({"cols_near_2pow28", build(9, (std::int64_t{1} << 28) - 1, [](std::int64_t r, auto& cs) {
                 cs.push_back((std::int64_t{1} << 28) - 2 - r);
                 cs.push_back(r * 1000);
               })});
  return g;
}

}  // namespace spconv::test
