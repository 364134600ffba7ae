// CSR <-> HYB on the CPU (formats/hyb.hpp; shared/papers/liu-thesis-csr5.txt, sec. 5.3.1).
#pragma once
#include <cstdint>

#include "formats/csr.hpp"
#include "formats/hyb.hpp"

namespace spconv::cpu {

// The automatic ELL width, Bell and Garland's rule as CUSP implements it
// (compute_optimal_entries_per_row, relative_speed 3, breakeven_threshold 4096): a full
// ELL column is about hyb_relative_speed times faster per entry than COO, so the k-th ELL
// column pays off while at least 1/hyb_relative_speed of the rows have k or more entries
// (fewer, and its padding costs more than moving those entries to COO saves); and an ELL
// column of fewer than hyb_breakeven_rows occupied rows cannot fill a GPU, so it is never
// worth it. Hence:
//   width = the largest w >= 0 such that, for w >= 1,
//           #{rows with >= w entries} >= max(hyb_breakeven_rows, rows / hyb_relative_speed).
// Matrices with fewer than 4096 rows thus get width 0 (all COO).
inline constexpr std::int64_t hyb_relative_speed = 3;
inline constexpr std::int64_t hyb_breakeven_rows = 4096;

template <class V>
std::int64_t hyb_auto_ell_width(const csr<V, std::int32_t>& a);

// Fills ell_width = 0 by hyb_auto_ell_width. Refuses: ell_width < 0 (errc::usage); an ELL part
// larger than the container cap, rows * width > 64 * (nnz + rows + 1) + 2^20 (errc::usage:
// such a width is mostly padding); rows * width beyond 2^31 - 1 slots (errc::unsupported: the
// slot index is 32-bit).
template <class V>
hyb_params resolve_hyb_params(const csr<V, std::int32_t>& a, hyb_params requested);

// `a` canonical (validate(a) holds). The first ell_width entries of each row go to ELL in CSR
// order, padded with (-1, +0); the rest go to the COO tail in CSR order.
template <class V>
hyb<V> csr_to_hyb(const csr<V, std::int32_t>& a, const hyb_params& requested);

// `a` valid (validate(a) holds). Row r of the result is row r's ELL entries then its tail
// entries: exactly the CSR that went into csr_to_hyb.
template <class V>
csr<V, std::int32_t> hyb_to_csr(const hyb<V>& a);

}  // namespace spconv::cpu
