#include "formats/csr_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv {

template <class V, class I>
csr_stats compute_stats(const csr<V, I>& a) {
  csr_stats s;
  s.rows = a.rows;
  s.cols = a.cols;
  s.nnz = a.nnz();
  if (a.rows == 0) return s;
  struct part {
    std::int64_t mn = std::numeric_limits<std::int64_t>::max(), mx = 0, empty = 0, zeros = 0;
    double sq = 0;
  };
  const int blocks = block_count(a.rows, 1 << 14);
  std::vector<part> parts(blocks);
  const double mean = static_cast<double>(s.nnz) / static_cast<double>(a.rows);
  parallel_blocks(a.rows, blocks, [&](int b, std::int64_t r0, std::int64_t r1) {
    part& p = parts[b];
    for (std::int64_t r = r0; r < r1; ++r) {
      std::int64_t len = a.row_ptr[r + 1] - a.row_ptr[r];
      p.mn = std::min(p.mn, len);
      p.mx = std::max(p.mx, len);
      p.empty += len == 0;
      p.sq += (static_cast<double>(len) - mean) * (static_cast<double>(len) - mean);
      for (I k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) p.zeros += a.values[k] == V(0);
    }
  });
  s.row_min = std::numeric_limits<std::int64_t>::max();
  double sq = 0;
  for (const auto& p : parts) {  // block order: the result does not depend on timing
    s.row_min = std::min(s.row_min, p.mn);
    s.row_max = std::max(s.row_max, p.mx);
    s.empty_rows += p.empty;
    s.explicit_zeros += p.zeros;
    sq += p.sq;
  }
  s.row_mean = mean;
  s.row_stddev = std::sqrt(sq / static_cast<double>(a.rows));
  return s;
}

#define SPCONV_INST(V, I) template csr_stats compute_stats<V, I>(const csr<V, I>&);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv
