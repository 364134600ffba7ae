// ELLPACK (ELL): every row gets the same number of slots, `width`; the slots are stored
// column-major (slot k of row r at k * rows + r) so that consecutive rows' k-th entries are
// adjacent, the layout GPU kernels read with coalesced loads
// (shared/papers/liu-thesis-csr5.txt, sec. 5.2.2: "the ELL data can also be stored in the
// column-major order for aligned memory access").
//
// A row shorter than `width` is padded: padding slots hold column -1 and value +0, and come
// only after the row's real entries (so a reader stops at the first -1, and a stored zero,
// whose column is >= 0, is never mistaken for padding). Real entries keep CSR order:
// columns strictly increasing within a row.
//
// ELL is stored on its own or as the regular part of HYB (formats/hyb.hpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "formats/format.hpp"

namespace spconv {

struct ell_params {
  std::int64_t width = 0;  // slots per row (stored: concrete, >= 0)

  template <class Self, class F>
  static void for_each_param(Self& p, F&& f) {
    f("width", p.width);
  }
};

// The column index that marks a padding slot.
inline constexpr std::int32_t ell_padding = -1;

// The most ELL slots (rows * width) a matrix with `nnz` entries and `rows` rows may have:
// the container-wide dataset cap of specs/container.md, 64 * (nnz + rows + 1) + 2^20
// elements, which readers enforce before allocating. Holding ELL to it means every valid
// ELL/HYB can be written and read back; a wider ELL would be mostly padding anyway.
inline std::int64_t ell_slot_cap(std::int64_t nnz, std::int64_t rows) { return container_array_cap(nnz, rows); }

template <class V, class I = std::int32_t, class Space = host>
struct ell {
  static_assert(std::is_same_v<I, std::int32_t>, "ell uses 32-bit indices (its slot index k * rows + r is 32-bit)");
  using value_type = V;
  using index_type = I;
  using space = Space;
  using params_type = ell_params;
  static constexpr std::string_view name = "ell";
  static constexpr int version = 1;

  std::int64_t rows = 0, cols = 0;
  ell_params params;
  array<I, Space> col_idx;  // rows * width column indices, column-major, -1 = padding
  array<V, Space> values;   // rows * width values, column-major, +0 at padding

  // Entries are the non-padding slots (a pass over the slots; host arrays only).
  std::int64_t nnz() const {
    return static_cast<std::int64_t>(
        std::count_if(col_idx.begin(), col_idx.end(), [](I c) { return c != ell_padding; }));
  }

  template <class Self, class F>
  static void for_each_array(Self& m, F&& f) {
    f("col_idx", m.col_idx);
    f("values", m.values);
  }
};

// Throws errc::bad_input naming the broken invariant: shape, width >= 0, rows * width within
// 32 bits and the container cap, array lengths, columns in [-1, cols), padding value +0,
// padding only after a row's entries, columns strictly increasing within a row.
template <class V, class I>
void validate(const ell<V, I, host>& m);

}  // namespace spconv
