// The summary the benchmark programs print for repeated timings: minimum and median.
#pragma once
#include <algorithm>
#include <vector>

namespace spconv::bench {

struct stats {
  double min = 0, median = 0;
};

inline stats summarize(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  return {t.front(), n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2};
}

}  // namespace spconv::bench
