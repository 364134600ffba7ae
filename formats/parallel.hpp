// The one threading primitive spconv uses on the CPU: split [0, n) into contiguous
// blocks, one per worker. Deterministic partition (results never depend on timing).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <thread>
#include <vector>

namespace spconv {

// Worker count: SPCONV_THREADS if set (>= 1), else the hardware concurrency.
inline int thread_count() {
  static const int n = [] {
    if (const char* s = std::getenv("SPCONV_THREADS")) {
      int v = std::atoi(s);
      if (v >= 1) return v;
    }
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return n;
}

// Number of blocks to use for n items when each block should hold at least `grain`.
inline int block_count(std::int64_t n, std::int64_t grain) {
  if (n <= 0) return 1;
  return static_cast<int>(std::clamp<std::int64_t>(n / std::max<std::int64_t>(grain, 1), 1, thread_count()));
}

// Calls f(block, begin, end) for `blocks` contiguous blocks of [0, n), in parallel.
// Exceptions from any block are rethrown (the first one) after all blocks finish.
template <class F>
void parallel_blocks(std::int64_t n, int blocks, F&& f) {
  if (blocks <= 1 || n <= 1) {
    f(0, std::int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errs(blocks);
  auto run = [&](int b) {
    std::int64_t lo = n * b / blocks, hi = n * (b + 1) / blocks;
    try {
      f(b, lo, hi);
    } catch (...) {
      errs[b] = std::current_exception();
    }
  };
  pool.reserve(blocks - 1);
  for (int b = 1; b < blocks; ++b) pool.emplace_back(run, b);
  run(0);
  for (auto& t : pool) t.join();
  for (auto& e : errs)
    if (e) std::rethrow_exception(e);
}

// parallel_for over [0, n) with at least `grain` items per block.
template <class F>
void parallel_for(std::int64_t n, std::int64_t grain, F&& f) {
  parallel_blocks(n, block_count(n, grain), [&](int, std::int64_t lo, std::int64_t hi) { f(lo, hi); });
}

}  // namespace spconv
