// The counter-based random numbers of the generators (io/generate.cpp) as host and device
// functions, so that a generator run on the GPU (io/generate_gpu.cu) gives the host's bits.
#pragma once
#include <cstdint>

#include "formats/host_device.hpp"

namespace spconv::gen::detail {

// splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014):
// the golden-ratio increment and the finaliser that turns a counter into 64 random bits.
inline constexpr std::uint64_t golden = 0x9e3779b97f4a7c15ULL;
SPCONV_HOST_DEVICE inline constexpr std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// 64 random bits for the position (a, b) of the stream `seed`: a function of its arguments
// only, so any thread computes the same value for the same entry.
SPCONV_HOST_DEVICE inline constexpr std::uint64_t hash(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0) {
  return mix(mix(mix(seed + golden) + (a + 1) * golden) + (b + 1) * golden);
}

// Independent streams of one seed for the independent choices of a generator (which
// columns, which values), so that changing how one is drawn leaves the other as it was.
enum class purpose : std::uint64_t { structure = 1, values = 2, scramble = 3 };
SPCONV_HOST_DEVICE inline constexpr std::uint64_t stream_seed(std::uint64_t seed, purpose p) {
  return hash(seed, static_cast<std::uint64_t>(p));
}

// [0, 1) from the top 53 bits.
SPCONV_HOST_DEVICE inline constexpr double unit(std::uint64_t h) { return static_cast<double>(h >> 11) * 0x1p-53; }

// The value of stencil entry (i, j) (gen::stencil): the diagonal in [points - 1, points), an
// off-diagonal in (-1, -0.5] keyed by the unordered pair, so a_ij == a_ji bit for bit. 0.5 * u
// is exact, so a fused multiply-add rounds as the separate operations do.
SPCONV_HOST_DEVICE inline double stencil_value(std::uint64_t values_seed, int points, std::int64_t i, std::int64_t j) {
  if (j == i) return points - 1 + unit(hash(values_seed, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(i)));
  const auto lo = static_cast<std::uint64_t>(i < j ? i : j), hi = static_cast<std::uint64_t>(i < j ? j : i);
  return -(0.5 + 0.5 * unit(hash(values_seed, lo, hi)));
}

}  // namespace spconv::gen::detail
