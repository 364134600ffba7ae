// Small RAII wrappers over the HDF5 C API: every hid_t spconv opens is owned by an
// h5::handle that closes it on every path, exceptions included. HDF5 failures become
// h5::failure carrying what was attempted and HDF5's innermost message; the container
// code, which knows the file and whether it was reading or writing, turns them into
// spconv::error (specs/container.md, section 6).
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace spconv::h5 {

// The one process-wide lock over the HDF5 library. An HDF5 built without
// --enable-threadsafe (HDF5's default configuration) keeps global state (open-object tables,
// the error stack and its printer, the filter registry) without any locking of its own: two
// threads inside it at once corrupt that state. A thread-safe build (Debian 12's is one)
// runs one call at a time behind its own global lock, so holding ours as well costs no
// parallelism there. Every spconv path that calls HDF5 holds this lock from its first HDF5
// call until its last identifier is closed (a handle declared after the lock is destroyed
// before it), which also keeps a sequence of calls (set the error printer, fail, read the
// error stack) from interleaving with another thread's. Recursive: a container write reads
// the existing file's info (--add), and the filter registration runs inside either.
inline std::recursive_mutex& library_mutex() {
  static std::recursive_mutex m;
  return m;
}
[[nodiscard]] inline std::unique_lock<std::recursive_mutex> lock() { return std::unique_lock(library_mutex()); }

struct failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The innermost (most specific) message of the calling thread's HDF5 error stack,
// e.g. "file signature not found" or "Fletcher32 checksum failure"; "" if empty.
inline std::string innermost_error() {
  std::string msg;
  auto walk = [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
    // Walking upward, record 0 is the innermost one.
    if (n == 0 && e->desc) *static_cast<std::string*>(data) = e->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk, &msg);
  H5Eclear2(H5E_DEFAULT);
  return msg;
}

[[noreturn]] inline void raise(const std::string& what) {
  std::string detail = innermost_error();
  throw failure(detail.empty() ? what : what + " (" + detail + ")");
}

inline herr_t check(herr_t r, const std::string& what) {
  if (r < 0) raise(what);
  return r;
}

// Owns one HDF5 identifier and the function that closes it.
class handle {
 public:
  using closer = herr_t (*)(hid_t);
  handle() = default;
  handle(hid_t id, closer close_fn) : id_(id), close_(close_fn) {}
  handle(const handle&) = delete;
  handle& operator=(const handle&) = delete;
  handle(handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  handle& operator=(handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      close_ = o.close_;
    }
    return *this;
  }
  ~handle() { reset(); }

  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }  // so that handles pass straight to the C API

  // Closes now and reports failure (a file's close flushes: it can fail, unlike the
  // destructor's close on an error path, whose result has nowhere to go).
  void close(const std::string& what) {
    hid_t id = std::exchange(id_, H5I_INVALID_HID);
    if (id >= 0) check(close_(id), what);
  }

 private:
  void reset() {
    if (id_ >= 0) close_(std::exchange(id_, H5I_INVALID_HID));
  }
  hid_t id_ = H5I_INVALID_HID;
  closer close_ = nullptr;
};

// Takes ownership of an identifier an HDF5 call returned, or raises if it failed.
inline handle own(hid_t id, handle::closer close, const std::string& what) {
  if (id < 0) raise(what);
  return handle(id, close);
}

inline handle own_file(hid_t id, const std::string& what) { return own(id, H5Fclose, what); }
inline handle own_group(hid_t id, const std::string& what) { return own(id, H5Gclose, what); }
inline handle own_dataset(hid_t id, const std::string& what) { return own(id, H5Dclose, what); }
inline handle own_space(hid_t id, const std::string& what) { return own(id, H5Sclose, what); }
inline handle own_type(hid_t id, const std::string& what) { return own(id, H5Tclose, what); }
inline handle own_plist(hid_t id, const std::string& what) { return own(id, H5Pclose, what); }
inline handle own_attr(hid_t id, const std::string& what) { return own(id, H5Aclose, what); }
inline handle own_object(hid_t id, const std::string& what) { return own(id, H5Oclose, what); }

// Silences HDF5's automatic error-stack printing for the calling thread while alive and
// restores the previous handler afterwards (a program embedding spconv keeps its own).
class quiet_errors {
 public:
  quiet_errors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  quiet_errors(const quiet_errors&) = delete;
  quiet_errors& operator=(const quiet_errors&) = delete;
  ~quiet_errors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// ---- element types: total over the integer and floating types formats may use ------

template <class T>
inline constexpr bool is_element_type =
    std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int16_t> ||
    std::is_same_v<T, std::uint16_t> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::uint32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t> || std::is_same_v<T, float> ||
    std::is_same_v<T, double>;

// The type in memory (what H5Dread/H5Dwrite convert from/to).
template <class T>
hid_t native_type() {
  static_assert(is_element_type<T>, "no HDF5 type for this element type");
  if constexpr (std::is_same_v<T, float>) return H5T_NATIVE_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else if constexpr (std::is_same_v<T, std::int8_t>) return H5T_NATIVE_INT8;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return H5T_NATIVE_UINT8;
  else if constexpr (std::is_same_v<T, std::int16_t>) return H5T_NATIVE_INT16;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return H5T_NATIVE_UINT16;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return H5T_NATIVE_UINT32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_NATIVE_INT64;
  else return H5T_NATIVE_UINT64;
}

// The type in the file: little-endian standard types (the spec's fixed byte order).
template <class T>
hid_t file_type() {
  static_assert(is_element_type<T>, "no HDF5 type for this element type");
  if constexpr (std::is_same_v<T, float>) return H5T_IEEE_F32LE;
  else if constexpr (std::is_same_v<T, double>) return H5T_IEEE_F64LE;
  else if constexpr (std::is_same_v<T, std::int8_t>) return H5T_STD_I8LE;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return H5T_STD_U8LE;
  else if constexpr (std::is_same_v<T, std::int16_t>) return H5T_STD_I16LE;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return H5T_STD_U16LE;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_STD_I32LE;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return H5T_STD_U32LE;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_STD_I64LE;
  else return H5T_STD_U64LE;
}

// The big-endian twin of file_type<T>(): accepted on read, HDF5 swaps bytes losslessly.
template <class T>
hid_t file_type_be() {
  static_assert(is_element_type<T>, "no HDF5 type for this element type");
  if constexpr (std::is_same_v<T, float>) return H5T_IEEE_F32BE;
  else if constexpr (std::is_same_v<T, double>) return H5T_IEEE_F64BE;
  else if constexpr (std::is_same_v<T, std::int8_t>) return H5T_STD_I8BE;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return H5T_STD_U8BE;
  else if constexpr (std::is_same_v<T, std::int16_t>) return H5T_STD_I16BE;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return H5T_STD_U16BE;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_STD_I32BE;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return H5T_STD_U32BE;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_STD_I64BE;
  else return H5T_STD_U64BE;
}

// A short name of a stored type for messages: "int32", "uint8", "float64", "string", ...
inline std::string describe_type(hid_t t) {
  const std::size_t bits = 8 * H5Tget_size(t);
  switch (H5Tget_class(t)) {
    case H5T_INTEGER: return (H5Tget_sign(t) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(bits);
    case H5T_FLOAT: return "float" + std::to_string(bits);
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ARRAY: return "array";
    case H5T_ENUM: return "enum";
    default: return "an HDF5 type of class " + std::to_string(static_cast<int>(H5Tget_class(t)));
  }
}

}  // namespace spconv::h5
