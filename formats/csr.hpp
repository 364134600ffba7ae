// CSR, the hub of the converter graph. Canonical form (what every X -> CSR returns):
// column indices strictly increasing within each row, so no duplicates.
// Stored arrays use the binsparse names (specs/container.md) so that binsparse readers
// and h5py read our CSR groups as they are.
#pragma once
#include <cstdint>
#include <limits>
#include <string_view>

#include "formats/format.hpp"

namespace spconv {

template <class V, class I = std::int32_t, class Space = host>
struct csr {
  using value_type = V;
  using index_type = I;
  using space = Space;
  using params_type = no_params;
  static constexpr std::string_view name = "csr";
  static constexpr int version = 1;

  std::int64_t rows = 0, cols = 0;
  no_params params;
  array<I, Space> row_ptr;  // rows + 1 offsets into col_idx/values
  array<I, Space> col_idx;  // nnz column indices, sorted within each row
  array<V, Space> values;   // nnz values

  std::int64_t nnz() const { return static_cast<std::int64_t>(values.size()); }

  template <class Self, class F>
  static void for_each_array(Self& m, F&& f) {
    f("pointers_to_1", m.row_ptr);
    f("indices_1", m.col_idx);
    f("values", m.values);
  }
};

// Throws errc::bad_input naming the broken invariant.
template <class V, class I>
void validate(const csr<V, I, host>& m) {
  constexpr std::string_view n = "csr";
  check_shape(n, m.rows, m.cols, std::numeric_limits<I>::max());
  check_length(n, "row_ptr", m.row_ptr, static_cast<std::size_t>(m.rows) + 1);
  check_pointers(n, "row_ptr", m.row_ptr, static_cast<std::int64_t>(m.col_idx.size()));
  check_length(n, "values", m.values, m.col_idx.size());
  check_indices(n, "col_idx", m.col_idx, m.cols);
  for (std::int64_t r = 0; r < m.rows; ++r)
    for (I k = m.row_ptr[r] + 1; k < m.row_ptr[r + 1]; ++k)
      if (m.col_idx[k] <= m.col_idx[k - 1])
        invalid(n, "row " + std::to_string(r) + " is not sorted or has a duplicate: col_idx[" + std::to_string(k - 1) +
                       "] = " + std::to_string(m.col_idx[k - 1]) + ", col_idx[" + std::to_string(k) +
                       "] = " + std::to_string(m.col_idx[k]));
}

}  // namespace spconv
