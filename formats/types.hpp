// Value and index types: the names used in files, on the command line and in the API.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "formats/error.hpp"

namespace spconv {

enum class value_type { f32, f64 };
enum class index_type { i32, i64 };

template <class T>
constexpr std::string_view type_name() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, std::int8_t>) return "int8";
  else if constexpr (std::is_same_v<T, std::uint8_t>) return "uint8";
  else if constexpr (std::is_same_v<T, std::int16_t>) return "int16";
  else if constexpr (std::is_same_v<T, std::uint16_t>) return "uint16";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::uint32_t>) return "uint32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, std::uint64_t>) return "uint64";
  else static_assert(!sizeof(T), "no name for this element type");
}

template <class V>
constexpr value_type value_type_of() {
  static_assert(std::is_same_v<V, float> || std::is_same_v<V, double>);
  return std::is_same_v<V, float> ? value_type::f32 : value_type::f64;
}

template <class I>
constexpr index_type index_type_of() {
  static_assert(std::is_same_v<I, std::int32_t> || std::is_same_v<I, std::int64_t>);
  return std::is_same_v<I, std::int32_t> ? index_type::i32 : index_type::i64;
}

inline std::string_view to_string(value_type t) { return t == value_type::f32 ? "float32" : "float64"; }
inline std::string_view to_string(index_type t) { return t == index_type::i32 ? "int32" : "int64"; }

// Accepts the file names (float32/float64/int32/int64) and the CLI names (float/double).
inline value_type parse_value_type(std::string_view s) {
  if (s == "float" || s == "float32" || s == "f32") return value_type::f32;
  if (s == "double" || s == "float64" || s == "f64") return value_type::f64;
  fail(errc::usage, "unknown value type '" + std::string(s) + "' (expected float or double)");
}
inline index_type parse_index_type(std::string_view s) {
  if (s == "int32" || s == "i32") return index_type::i32;
  if (s == "int64" || s == "i64") return index_type::i64;
  fail(errc::usage, "unknown index type '" + std::string(s) + "' (expected int32 or int64)");
}

}  // namespace spconv
