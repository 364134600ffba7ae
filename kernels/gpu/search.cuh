// Searches and the warp prefix sum on the device, shared by the GPU converters (convert/gpu)
// and kernels (kernels/gpu) (include from .cu/.cuh files only): binary searches in a sorted
// array, as in std::upper_bound and std::lower_bound, the same search across the 32 lanes of a
// warp by shuffles, the prefix sum over a warp's lanes that such searches run on, and a warp
// walking its lanes' ranges together.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace spconv::gpu {

// The first position p in [lo, hi) of the non-decreasing a with a[p] > v, or hi. With
// a = row_ptr, upper_bound(row_ptr, 0, rows + 1, k) - 1 is the row holding entry k (the last
// row starting at or before k; empty rows share their start with the next row).
template <class T, class U>
__device__ __forceinline__ std::int64_t upper_bound(const T* a, std::int64_t lo, std::int64_t hi, U v) {
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (a[mid] <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The first position p in [lo, hi) of the non-decreasing a with a[p] >= v, or hi.
template <class T, class U>
__device__ __forceinline__ std::int64_t lower_bound(const T* a, std::int64_t lo, std::int64_t hi, U v) {
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (a[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The row holding entry k of a CSR-like pointer array (HOLA's first kernel, the MBR tile
// kernel's block rows) (ptr[r] <= k < ptr[r + 1], 0 <= k < nnz): first the row where k
// would lie were all rows equally long, then a bracket [lo, hi) with ptr[lo] <= k < ptr[hi]
// widened from there by doubling steps, then a binary search inside it. On matrices whose rows
// are alike (the replicated set, stencils) the guess is within a few rows: a handful of
// dependent loads instead of log2(rows).
template <class I>
__device__ inline std::int64_t row_of_entry(const I* ptr, std::int64_t rows, std::int64_t nnz, std::int64_t k) {
  std::int64_t guess = static_cast<std::int64_t>(static_cast<double>(k) / static_cast<double>(nnz) * rows);
  guess = min(max(guess, std::int64_t{0}), rows - 1);
  std::int64_t lo, hi;
  if (ptr[guess] <= k) {
    lo = guess;
    hi = guess + 1;
    for (std::int64_t step = 1; hi < rows && ptr[hi] <= k; step *= 2) {
      lo = hi;
      hi = min(hi + step, rows);  // ptr[rows] = nnz > k
    }
  } else {
    hi = guess;
    lo = guess - 1;
    for (std::int64_t step = 1; lo > 0 && ptr[lo] > k; step *= 2) {
      hi = lo;
      lo = max(lo - step, std::int64_t{0});  // ptr[0] = 0 <= k
    }
  }
  return upper_bound(ptr, lo, hi, k) - 1;  // the last row whose start is <= k: a non-empty row
}

// How many lanes of the warp hold a value <= v (0 to 32), where `value` does not decrease from
// lane 0 to lane 31: a binary search over the lanes by shuffles, five rounds and a look at lane
// 31. Every lane of the warp must call it (full-mask shuffles; each lane may ask for its own v).
template <class T, class U>
__device__ __forceinline__ int warp_count_at_or_below(T value, U v) {
  constexpr unsigned full_warp = 0xffffffffu;
  int n = 0;
  for (int step = 16; step > 0; step /= 2)
    if (__shfl_sync(full_warp, value, n + step - 1) <= v) n += step;
  // Read unconditionally: a shuffle behind `n == 31 &&` would leave out the other lanes.
  const T last = __shfl_sync(full_warp, value, 31);
  return n == 31 && last <= v ? 32 : n;
}

// Inclusive sum of v over this lane's group of `group` lanes (a power of two dividing 32; 32,
// the default, is the whole warp): lane i of the group gets the sum of lanes 0 .. i. Every
// lane of the warp must call it with the same group (full-mask shuffles).
template <class T>
__device__ __forceinline__ T group_inclusive_sum(T v, int group = 32) {
  const int sub = static_cast<int>(threadIdx.x) % group;
  for (int d = 1; d < group; d *= 2) {
    const T other = __shfl_up_sync(0xffffffffu, v, d, group);
    if (sub >= d) v += other;
  }
  return v;
}

// Calls f(v) for every v of the lanes' ranges [lo, lo + len) (len >= 0), the ranges laid end
// to end and dealt out 32 values a round, lane i taking the i-th of each round: a lane's long
// range (a run of empty rows) takes the whole warp rather than that lane alone. A vote first,
// so that a warp without ranges pays one instruction. Every lane of the warp must call it
// (full-mask shuffles).
template <class F>
__device__ __forceinline__ void warp_for_each_in_ranges(long long lo, long long len, F&& f) {
  constexpr unsigned full_warp = 0xffffffffu;
  if (!__any_sync(full_warp, len > 0)) return;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const long long incl = group_inclusive_sum(len);
  const long long total = __shfl_sync(full_warp, incl, 31);
  for (long long i0 = 0; i0 < total; i0 += 32) {
    const long long i = i0 + lane;
    // The lane whose range holds value number i: the lanes whose ranges end at or before it
    // (at most 31 where i < total; lanes past the total only read a valid lane).
    const int from = min(warp_count_at_or_below(incl, i), 31);
    const long long v = __shfl_sync(full_warp, lo, from) + i - __shfl_sync(full_warp, incl - len, from);
    if (i < total) f(v);
  }
}

}  // namespace spconv::gpu
