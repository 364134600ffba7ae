// Synthetic matrices for benchmarks and tests (`spconv gen`): stencils, R-MAT graphs,
// uniform random rows, bands and dense blocks, each returned as canonical host CSR with
// 32-bit indices. Deterministic: the same kind, parameters and seed give the same arrays
// bit for bit, on any machine and for any thread count, because every random number comes
// from a counter-based hash (splitmix64's finaliser) of the seed and the position it is for
// (row, entry or edge), never from a shared generator state or a std:: distribution whose
// output differs between standard libraries. Shapes or entry counts beyond 32-bit indices
// are errc::unsupported; parameters out of range are errc::usage naming the kind.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/any_matrix.hpp"

namespace spconv::gen {

// Finite-difference stencils on an n x n grid (dims 2; points 5 or 9) or an n x n x n grid
// (dims 3; points 7 or 27): grid point (x, y[, z]) is row x + n*y [+ n*n*z]; 5 and 7 points
// couple the axis neighbours, 9 and 27 the whole 3 x 3 [x 3] box; grid edges are not
// wrapped. Symmetric values: off-diagonal entries in (-1, -0.5], a hash of the unordered
// pair (i, j), and a diagonal in [points - 1, points), so the matrix is strictly
// diagonally dominant (symmetric positive definite), a model Laplacian.
template <class V>
csr<V, std::int32_t> stencil(int dims, int points, std::int64_t n, std::uint64_t seed);

// R-MAT (Chakrabarti, Zhan, Faloutsos 2004) with the Graph500 parameters a = 0.57,
// b = 0.19, c = 0.19, d = 0.05: 2^scale vertices, edge_factor * 2^scale directed edges
// (row = source), each placed by `scale` quadrant choices. As in the Graph500 generator the
// vertex numbers are scrambled by a seeded bijection of [0, 2^scale), so that the heavy
// rows are spread over the matrix instead of sitting at its top; the per-level noise of the
// Graph500 reference code is left out. Each edge weighs (0.5, 1]; duplicate edges are summed
// (in edge order, so the sums do not depend on the thread count); self-loops are kept.
template <class V>
csr<V, std::int32_t> rmat(int scale, std::int64_t edge_factor, std::uint64_t seed);

// rows x cols, every row with exactly `row_length` distinct columns drawn uniformly, values
// in (-1, 1) without zeros.
template <class V>
csr<V, std::int32_t> uniform(std::int64_t rows, std::int64_t cols, std::int64_t row_length, std::uint64_t seed);

// n x n, every entry with |i - j| <= bandwidth stored (a dense band), values in (-1, 1)
// without zeros; structurally symmetric, values general.
template <class V>
csr<V, std::int32_t> banded(std::int64_t n, std::int64_t bandwidth, std::uint64_t seed);

// rows x cols cut into r x c blocks; each block row holds `per_block_row` dense blocks at
// distinct block columns drawn uniformly (blocks on the last block row or column are
// clipped to the matrix), every entry of a block stored, values in (-1, 1) without zeros.
template <class V>
csr<V, std::int32_t> blocks(std::int64_t rows, std::int64_t cols, std::int64_t r, std::int64_t c,
                            std::int64_t per_block_row, std::uint64_t seed);

// The kinds `spconv gen` offers, their positional parameters in order, and a parameter's
// value when left out (none: required).
struct param_info {
  std::string_view name, meaning;
  std::optional<std::int64_t> fallback;
};
struct kind_info {
  std::string_view name, summary;
  std::vector<param_info> params;
  bool symmetric;  // the values are symmetric (A == A^T bit for bit)
};
const std::vector<kind_info>& kinds();

// The kind by name with its positional parameters (trailing optional ones may be left out),
// as a matrix of `values` (f32 or f64). errc::usage for an unknown kind or a wrong count.
any_matrix generate(std::string_view kind, const std::vector<std::int64_t>& params, value_type values,
                    std::uint64_t seed);

// "kind p1 p2 ... --seed S": how to make the same matrix again (stored as the container's
// source_name by `spconv gen`).
std::string describe(std::string_view kind, const std::vector<std::int64_t>& params, std::uint64_t seed);

}  // namespace spconv::gen

namespace spconv {

// kron(I_copies, a): `copies` copies of `a` along the diagonal (copy b's row r is row
// b*rows + r, its columns shifted by b*cols), built as CSR directly, in parallel over the
// copies. Used by `spconv bench --scale-to` to give small collection matrices the size of a
// GPU's working set. copies >= 1 (errc::usage otherwise); a result whose shape or entry
// count exceeds I is errc::unsupported.
template <class V, class I>
csr<V, I> replicate_diagonal(const csr<V, I>& a, std::int64_t copies);

}  // namespace spconv
