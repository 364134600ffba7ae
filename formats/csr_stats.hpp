// Structure statistics of a CSR matrix: what `spconv info` prints and what automatic
// format choices look at.
#pragma once
#include <cstdint>

#include "formats/csr.hpp"

namespace spconv {

struct csr_stats {
  std::int64_t rows = 0, cols = 0, nnz = 0;
  std::int64_t row_min = 0, row_max = 0;  // entries per row
  double row_mean = 0, row_stddev = 0;
  std::int64_t empty_rows = 0;
  std::int64_t explicit_zeros = 0;  // stored entries whose value is zero
};

template <class V, class I>
csr_stats compute_stats(const csr<V, I>& a);

}  // namespace spconv
