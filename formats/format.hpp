// What every format shares, written once and driven by each format's own lists:
//   Fmt::name, Fmt::version, rows/cols, params (with Params::for_each_param) and
//   Fmt::for_each_array(self, f) calling f(stored_name, array) for every array.
// Generic code (HDF5 I/O, equality, byte counts, device copies) only uses these lists.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "formats/array.hpp"
#include "formats/error.hpp"
#include "formats/types.hpp"

namespace spconv {

// Formats without parameters (CSR, COO) use this.
struct no_params {
  template <class Self, class F>
  static void for_each_param(Self&, F&&) {}
};

template <class Fmt>
concept sparse_format = requires(Fmt m) {
  { Fmt::name } -> std::convertible_to<std::string_view>;
  { Fmt::version } -> std::convertible_to<int>;
  m.rows;
  m.cols;
  m.params;
};

template <class Params>
bool params_equal(const Params& a, const Params& b) {
  // Parameters are integers or bools (so that they are exact in files and on the CLI).
  std::vector<std::int64_t> va, vb;
  Params::for_each_param(a, [&](std::string_view, const auto& v) { va.push_back(static_cast<std::int64_t>(v)); });
  Params::for_each_param(b, [&](std::string_view, const auto& v) { vb.push_back(static_cast<std::int64_t>(v)); });
  return va == vb;
}

// Bit-exact equality of shape, parameters and every array (values compared as bytes,
// so -0.0 != 0.0 and NaNs compare by payload: "the same arrays" means the same bits).
template <sparse_format Fmt>
bool equal(const Fmt& a, const Fmt& b) {
  if (a.rows != b.rows || a.cols != b.cols || !params_equal(a.params, b.params)) return false;
  bool same = true;
  std::vector<std::pair<const void*, std::size_t>> bufs;
  Fmt::for_each_array(a, [&](std::string_view, const auto& arr) {
    bufs.emplace_back(arr.data(), arr.size() * sizeof(arr[0]));
  });
  std::size_t k = 0;
  Fmt::for_each_array(b, [&](std::string_view, const auto& arr) {
    const auto& [p, n] = bufs[k++];
    if (n != arr.size() * sizeof(arr[0]) || (n && std::memcmp(p, arr.data(), n) != 0)) same = false;
  });
  return same;
}

// Bytes of the arrays for which keep(stored name) holds, host or device twin (elements are
// counted by type: a device array's cannot be read from the host).
template <sparse_format Fmt, class Keep>
std::size_t array_bytes(const Fmt& m, Keep keep) {
  std::size_t total = 0;
  Fmt::for_each_array(m, [&](std::string_view name, const auto& arr) {
    if (keep(name)) total += arr.size() * sizeof(typename std::remove_cvref_t<decltype(arr)>::value_type);
  });
  return total;
}

// Bytes held by the format's arrays: what it costs in memory (spmv_bytes below: what an SpMV
// reads of them).
template <sparse_format Fmt>
std::size_t bytes(const Fmt& m) {
  return array_bytes(m, [](std::string_view) { return true; });
}

// Whether an SpMV reads the array stored under `name`: every array, except those a format
// lists in Fmt::spmv_skips (arrays kept only so that the round trip to CSR is exact, such as
// BCSR's stored_zeros).
template <class Fmt>
constexpr bool spmv_reads(std::string_view name) {
  if constexpr (requires { Fmt::spmv_skips; })
    return std::find(Fmt::spmv_skips.begin(), Fmt::spmv_skips.end(), name) == Fmt::spmv_skips.end();
  else
    return true;
}

// Bytes of the arrays an SpMV reads (spmv_reads), host or device twin: what benchmarks count
// as the format's traffic.
template <sparse_format Fmt>
std::size_t spmv_bytes(const Fmt& m) {
  return array_bytes(m, spmv_reads<Fmt>);
}

// The container's limit on any array's length (specs/container.md, section 2):
// 64 * (nnz + rows + 1) + 2^20 elements, saturating instead of overflowing on the huge
// shapes a lying file may declare. Readers enforce it before allocating; formats whose
// padding or fill could pass it refuse such conversions, so every valid matrix can be
// written and read back.
inline std::int64_t container_array_cap(std::int64_t nnz, std::int64_t rows) {
  std::int64_t sum = 0, scaled = 0, cap = 0;
  if (__builtin_add_overflow(nnz, rows, &sum) || __builtin_add_overflow(sum, std::int64_t{1}, &sum) ||
      __builtin_mul_overflow(sum, std::int64_t{64}, &scaled) ||
      __builtin_add_overflow(scaled, std::int64_t{1} << 20, &cap))
    return std::numeric_limits<std::int64_t>::max();
  return cap;
}

// ---- helpers for validate(): one message shape for every format -----------------
// "<format>: <array>[<i>] = <v> ..." so that the user sees what and where.

[[noreturn]] inline void invalid(std::string_view fmt, const std::string& what) {
  fail(errc::bad_input, std::string(fmt) + ": " + what);
}

inline void check_shape(std::string_view fmt, std::int64_t rows, std::int64_t cols, std::int64_t max_dim) {
  if (rows < 0 || cols < 0)
    invalid(fmt, "negative shape " + std::to_string(rows) + " x " + std::to_string(cols));
  if (rows > max_dim || cols > max_dim)
    invalid(fmt, "shape " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " does not fit the index type (max " + std::to_string(max_dim) + ")");
}

template <class A>
void check_length(std::string_view fmt, std::string_view name, const A& arr, std::size_t expected) {
  if (arr.size() != expected)
    invalid(fmt, std::string(name) + " has " + std::to_string(arr.size()) + " elements, expected " +
                     std::to_string(expected));
}

// ptr[0] == 0, non-decreasing, ptr.back() == last.
template <class A>
void check_pointers(std::string_view fmt, std::string_view name, const A& ptr, std::int64_t last) {
  if (ptr.empty()) invalid(fmt, std::string(name) + " is empty (needs at least one element)");
  if (ptr[0] != 0) invalid(fmt, std::string(name) + "[0] = " + std::to_string(ptr[0]) + ", expected 0");
  for (std::size_t i = 1; i < ptr.size(); ++i)
    if (ptr[i] < ptr[i - 1])
      invalid(fmt, std::string(name) + " decreases at " + std::to_string(i) + ": " + std::to_string(ptr[i - 1]) +
                       " then " + std::to_string(ptr[i]));
  if (static_cast<std::int64_t>(ptr.back()) != last)
    invalid(fmt, std::string(name) + " ends at " + std::to_string(ptr.back()) + ", expected " + std::to_string(last));
}

// Every element in [0, bound).
template <class A>
void check_indices(std::string_view fmt, std::string_view name, const A& idx, std::int64_t bound) {
  for (std::size_t i = 0; i < idx.size(); ++i)
    if (idx[i] < 0 || static_cast<std::int64_t>(idx[i]) >= bound)
      invalid(fmt, std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(idx[i]) +
                       " is out of range [0, " + std::to_string(bound) + ")");
}

}  // namespace spconv
