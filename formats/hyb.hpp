// HYB (Bell and Garland; shared/papers/liu-thesis-csr5.txt, sec. 5.3.1): the first
// `ell_width` entries of every row in an ELL part (sec. 5.2.2, formats/ell.hpp), the rest of
// the long rows in a COO tail (sec. 5.2.3, formats/coo.hpp). ELL keeps the regular bulk
// padded and coalesced; the tail absorbs the few long rows that would make pure ELL mostly
// padding. Composed as CUSP composes it: hyb holds an ell and a coo member.
//
// Invariants (validate()): the parts have the matrix's shape and the ELL width is
// params.ell_width; the COO tail is sorted by (row, column) without duplicates; a row has
// tail entries only when its ELL slots are all used, and its tail columns come after its last
// ELL column. So a row's entries, read as its ELL slots then its tail entries, are the CSR row.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "formats/coo.hpp"
#include "formats/ell.hpp"
#include "formats/format.hpp"

namespace spconv {

struct hyb_params {
  // Slots per row in the ELL part. Request: 0 = automatic (convert/cpu/hyb.hpp,
  // hyb_auto_ell_width), >= 1 = this width. Stored: the width used (0 = everything in COO).
  std::int64_t ell_width = 0;

  template <class Self, class F>
  static void for_each_param(Self& p, F&& f) {
    f("ell_width", p.ell_width);
  }
};

template <class V, class I = std::int32_t, class Space = host>
struct hyb {
  static_assert(std::is_same_v<I, std::int32_t>, "hyb uses 32-bit indices");
  using value_type = V;
  using index_type = I;
  using space = Space;
  using params_type = hyb_params;
  static constexpr std::string_view name = "hyb";
  static constexpr int version = 1;

  std::int64_t rows = 0, cols = 0;
  hyb_params params;
  spconv::ell<V, I, Space> ell;  // the first params.ell_width entries of each row
  spconv::coo<V, I, Space> coo;  // each row's entries beyond those, row-sorted

  std::int64_t nnz() const { return ell.nnz() + coo.nnz(); }

  // The parts' arrays under "ell/" and "coo/" (a '/' is an HDF5 subgroup in the container).
  template <class Self, class F>
  static void for_each_array(Self& m, F&& f) {
    std::string full;
    auto under = [&](std::string_view prefix) {
      return [&f, &full, prefix](std::string_view part_name, auto& arr) {
        full.assign(prefix);
        full.append(part_name);
        f(std::string_view(full), arr);
      };
    };
    std::remove_cvref_t<decltype(m.ell)>::for_each_array(m.ell, under("ell/"));
    std::remove_cvref_t<decltype(m.coo)>::for_each_array(m.coo, under("coo/"));
  }

  // The parts' shape and the ELL width are not stored separately (the container keeps only
  // hyb's shape, params and arrays); generic readers call this after filling those and
  // before validate().
  static void sync_parts(hyb& m) {
    m.ell.rows = m.coo.rows = m.rows;
    m.ell.cols = m.coo.cols = m.cols;
    m.ell.params.width = m.params.ell_width;
  }
};

// Throws errc::bad_input naming the broken invariant (the list is in the comment above and
// in specs/formats/hyb.md), including the ELL part's own invariants (formats/ell.hpp).
template <class V, class I>
void validate(const hyb<V, I, host>& m);

}  // namespace spconv
