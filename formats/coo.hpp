// COO triplets. The reader produces COO in file order (possibly with duplicates);
// CSR -> COO produces the sorted, duplicate-free form. validate() accepts both:
// duplicates and order are legal in COO, indices out of range are not.
#pragma once
#include <cstdint>
#include <limits>
#include <string_view>

#include "formats/format.hpp"

namespace spconv {

template <class V, class I = std::int32_t, class Space = host>
struct coo {
  using value_type = V;
  using index_type = I;
  using space = Space;
  using params_type = no_params;
  static constexpr std::string_view name = "coo";
  static constexpr int version = 1;

  std::int64_t rows = 0, cols = 0;
  no_params params;
  array<I, Space> row_idx;  // nnz row indices
  array<I, Space> col_idx;  // nnz column indices
  array<V, Space> values;   // nnz values

  std::int64_t nnz() const { return static_cast<std::int64_t>(values.size()); }

  template <class Self, class F>
  static void for_each_array(Self& m, F&& f) {
    f("indices_0", m.row_idx);
    f("indices_1", m.col_idx);
    f("values", m.values);
  }
};

template <class V, class I>
void validate(const coo<V, I, host>& m) {
  constexpr std::string_view n = "coo";
  check_shape(n, m.rows, m.cols, std::numeric_limits<I>::max());
  check_length(n, "col_idx", m.col_idx, m.row_idx.size());
  check_length(n, "values", m.values, m.row_idx.size());
  check_indices(n, "row_idx", m.row_idx, m.rows);
  check_indices(n, "col_idx", m.col_idx, m.cols);
}

}  // namespace spconv
