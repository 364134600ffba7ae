// Test inputs: the shared SuiteSparse/Matrix Market files and a generator of
// structured matrices (canonical CSR) covering the shapes that break formats.
#pragma once
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "formats/csr.hpp"

namespace spconv::test {

std::filesystem::path shared_dir();              // ../shared
std::filesystem::path source_dir();              // the repository root
std::filesystem::path binary_dir();              // the build tree (spconv, plugins/)
std::vector<std::filesystem::path> real_matrices();   // shared/matrices/real/*.mtx
std::vector<std::filesystem::path> small_matrices();  // shared/matrices/small/*.mtx

// A fresh empty directory under the system temp dir, removed by the destructor.
struct temp_dir {
  std::filesystem::path path;
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  std::filesystem::path operator/(const std::string& name) const { return path / name; }
};

struct generated {
  std::string name;
  csr<double, std::int32_t> a;
};

// Deterministic structured matrices: 0x0, 5x0, 0x5, 1x1, all rows empty, one dense
// row, tall, wide, diagonal, banded, power-law, rows longer than 256 entries, sizes
// not divisible by common block/tile sizes, columns near the CMRS 2^28 limit.
std::vector<generated> generator_set();

// Every shared real matrix spconv reads (the complex one is refused), as double CSR, parsed
// once per test binary: the set the GPU tests run every kernel and conversion on.
const std::vector<generated>& real_set();

// The longest row.
template <class V, class I>
std::int64_t max_row_length(const csr<V, I>& a) {
  std::int64_t m = 0;
  for (std::int64_t r = 0; r < a.rows; ++r) m = std::max<std::int64_t>(m, a.row_ptr[r + 1] - a.row_ptr[r]);
  return m;
}

// Deterministic, varied, exactly representable in float: errors come from the kernels only.
template <class V>
std::vector<V> test_vector(std::int64_t n, int salt) {
  std::vector<V> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<V>(((i * 37 + salt * 11) % 101) - 50) / V(16);
  return v;
}

// Random canonical CSR: rows x cols with about `per_row` entries per row.
csr<double, std::int32_t> random_csr(std::int64_t rows, std::int64_t cols, double per_row, std::uint64_t seed);

// Canonical CSR from each row's columns (row_cols(r, cs) appends them in any order, repeats
// allowed: they are sorted and made unique) and a value per entry.
csr<double, std::int32_t> csr_from_columns(std::int64_t rows, std::int64_t cols,
                                           const std::function<void(std::int64_t, std::vector<std::int64_t>&)>& row_cols,
                                           const std::function<double(std::int64_t, std::int64_t)>& value);

// Block rows for each ordering pass of convert/gpu/block_rows.cuh (the GPU CSR -> MBR and
// CSR -> BCSR converters), 64 rows each: a band (counted); three entries a row in block columns
// far apart and shared by the rows (wide, few entries: sorted); twelve a row so, under a row
// of 600 (wide, many: merged where rows hold at most 32 entries and 8 rows or fewer form a block
// row, else searched); and twenty a row, one row of 32 and one of 33, over 640K columns (merged
// by 4 or 8 slots, or searched past the merge's 33rd entry or span). Blocks hold entries of
// several rows; every 97th value is +0.0 (BCSR's stored zeros).
csr<double, std::int32_t> block_order_passes();

template <class V>
csr<V, std::int32_t> cast_values(const csr<double, std::int32_t>& a) {
  csr<V, std::int32_t> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr = a.row_ptr;
  out.col_idx = a.col_idx;
  out.values.assign(a.values.begin(), a.values.end());
  return out;
}

}  // namespace spconv::test
