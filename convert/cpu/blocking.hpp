// Helpers shared by the block-structured CPU conversions (BCSR, MBR): integer division by
// a block side without a divide per entry, the cut of rows into worker ranges, and a block
// row's height as a compile-time constant for the merges.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace spconv::cpu::blocking {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// floor(j / d) for 0 <= j < 2^31 and 1 <= d <= 2^31 by one multiplication: with
// l = ceil(log2 d) and m = ceil(2^(31+l) / d) = (2^(31+l) + e) / d, e < d <= 2^l, the error
// j * e / (d * 2^(31+l)) stays below 1 / d (Granlund and Montgomery, PLDI 1994, sec. 4).
// Block sides need not be powers of two, and a column division per entry would dominate.
struct divider {
  divider() = default;
  std::uint32_t mul = 0;  // < 2^32: 2^(31+l) / d < 2^32 as d > 2^(l-1)
  int shift = 0;
  explicit divider(std::int64_t d) {
    int l = 0;
    while ((std::int64_t{1} << l) < d) ++l;
    shift = 31 + l;
    mul = static_cast<std::uint32_t>(((std::uint64_t{1} << shift) + static_cast<std::uint64_t>(d) - 1) /
                                     static_cast<std::uint64_t>(d));
  }
  std::int32_t operator()(std::int32_t j) const {
    return static_cast<std::int32_t>((std::uint64_t{static_cast<std::uint32_t>(j)} * mul) >> shift);
  }
};

// Rows cut into `units` of `unit` rows (a multiple of every candidate r, so no block row
// straddles two units), the units into `workers` contiguous ranges (parallel_blocks).
struct partition {
  std::int64_t unit = 1, units = 0;
  int workers = 1;
  std::int64_t first_row(std::int64_t u, std::int64_t rows) const { return std::min(rows, u * unit); }
};

// Calls f(std::integral_constant<int, h>{}) when h is one of Heights, else
// f(std::integral_constant<int, 0>{}), the merges' form for a height known only at run time.
// With the height a constant the merges over a block row's rows unroll and keep their cursors
// in registers; the common heights get that form, any other height the general loop.
template <int... Heights, class F>
void with_known_height(int h, F&& f) {
  const bool known = ((h == Heights && (f(std::integral_constant<int, Heights>{}), true)) || ...);
  if (!known) f(std::integral_constant<int, 0>{});
}

}  // namespace spconv::cpu::blocking
