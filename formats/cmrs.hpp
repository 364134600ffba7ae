// CMRS, Compressed Multi-Row Storage (Koza et al., shared/papers/cmrs-koza.txt sec. 3-4,
// 6.7; spec: specs/formats/cmrs.md). CSR generalised to strips of `height` rows: one
// offset per strip (StripPtr) and, per entry, a 32-bit word holding the column in its
// high 28 bits and the row within the strip in its low 4 bits (sec. 4: "28 bits of ColInd
// to store a column index and the remaining 4 bits (CMRS_BITS) to store RowInStrip";
// the kernels of appendix 9-10 decode r = c % 16, column = c >> 4).
//
// Two layouts, chosen by params.modulo (M in appendix 10, the kernel's MODULO):
//  * modulo == 32 (one buffer column per warp lane, Algorithm 1): the basic layout of
//    sec. 3, slots are exactly the CSR entries of the strip, in CSR order (row, then
//    column; "Arrays Val and ColInd are the same as in the CRS format"), or, with
//    sort_columns, ordered by column then row (sec. 4, fourth optimisation; sec. 6.3
//    finds it pays on GPUs). No padding, no permutation array.
//  * modulo < 32: the sec. 6.7 transformation for a kernel whose per-warp buffer has
//    only M columns (lane % M). Each strip is cut into chunks of 32 slots (what one warp
//    reads per step); inside a chunk no two slots share (row in strip, lane % M), so the
//    kernel's buffer updates never collide. Where the rows cannot fill a chunk without a
//    collision, and to round every strip up to a multiple of 32 slots (sec. 6.7: "all
//    strips were padded with zeroes"), padding slots hold +0.0. entry_slot maps each CSR
//    entry to its slot: slots it does not name are padding, which is what keeps the
//    round trip exact even for explicitly stored zeros.
//
// Column words are uint32: the paper's kernels use `int`, whose arithmetic shift would
// turn columns >= 2^27 negative; unsigned words give the full 28 bits.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "formats/format.hpp"

namespace spconv {

inline constexpr int cmrs_row_bits = 4;                               // CMRS_BITS, sec. 4
inline constexpr int cmrs_max_height = 1 << cmrs_row_bits;            // 16, sec. 4
// Sec. 4: the 28-bit column field serves "matrices with less than 2^28 columns".
inline constexpr std::int64_t cmrs_max_cols = (std::int64_t{1} << 28) - 1;
inline constexpr int cmrs_warp = 32;                                  // WARP_SIZE: slots per chunk

struct cmrs_params {
  std::int32_t height = 0;    // rows per strip, 1..16 (0 in a request: automatic)
  std::int32_t modulo = 0;    // M: 2, 4, 8, 16 (sec. 6.7 layout) or 32 (basic layout); 0: automatic (32)
  bool sort_columns = false;  // basic layout only: order each strip by column, then row (sec. 4)

  template <class Self, class F>
  static void for_each_param(Self& p, F&& f) {
    f("height", p.height);
    f("modulo", p.modulo);
    f("sort_columns", p.sort_columns);
  }
};

constexpr std::uint32_t cmrs_pack(std::int64_t col, std::int64_t row_in_strip) {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(col) << cmrs_row_bits) |
                                    static_cast<std::uint64_t>(row_in_strip));
}
constexpr std::int64_t cmrs_col(std::uint32_t word) { return word >> cmrs_row_bits; }
constexpr int cmrs_row(std::uint32_t word) { return static_cast<int>(word & (cmrs_max_height - 1)); }
constexpr std::int64_t cmrs_strips(std::int64_t rows, std::int64_t height) { return (rows + height - 1) / height; }

template <class V, class I = std::int32_t, class Space = host>
struct cmrs {
  static_assert(std::is_same_v<I, std::int32_t>, "cmrs is instantiated for 32-bit indices only");
  using value_type = V;
  using index_type = I;
  using space = Space;
  using params_type = cmrs_params;
  static constexpr std::string_view name = "cmrs";
  static constexpr int version = 1;

  std::int64_t rows = 0, cols = 0;
  cmrs_params params;
  array<I, Space> strip_ptr;            // ceil(rows/height) + 1 offsets into col_row/values (slots)
  array<std::uint32_t, Space> col_row;  // per slot: column << 4 | row in strip
  array<V, Space> values;               // per slot: the entry's value (+0.0 for padding)
  array<I, Space> entry_slot;           // modulo < 32: the slot of each CSR entry (nnz); else empty

  std::int64_t nnz() const {
    return static_cast<std::int64_t>(params.modulo < cmrs_warp ? entry_slot.size() : values.size());
  }

  // SpMV reads the slots, not entry_slot (it maps entries to slots for the round trip to CSR).
  static constexpr std::array<std::string_view, 1> spmv_skips = {"entry_slot"};

  template <class Self, class F>
  static void for_each_array(Self& m, F&& f) {
    f("strip_ptr", m.strip_ptr);
    f("col_row", m.col_row);
    f("values", m.values);
    f("entry_slot", m.entry_slot);
  }
};

// Throws errc::bad_input naming the broken invariant (see specs/formats/cmrs.md).
template <class V>
void validate(const cmrs<V, std::int32_t, host>& m);

}  // namespace spconv
