// The container reader's checks (specs/container.md, section 6), shared by read_container
// (io/hdf5/container.cpp) and the direct device loader (io/hdf5/device_load.cpp): one
// implementation of every rule a reader enforces before it allocates, so that both refuse the
// same files with the same messages. Not part of the API. Every function here calls HDF5:
// callers hold h5::lock() and an h5::quiet_errors, and turn h5::failure into
// errc::bad_input naming the file; the refusals themselves are spconv::error already.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "formats/any_matrix.hpp"
#include "io/hdf5/container.hpp"
#include "io/hdf5/h5.hpp"

namespace spconv::container_detail {

inline constexpr std::int64_t container_version = 1;

// Whether `s` is a source_symmetry value of section 1 ("" included: no source).
bool known_symmetry(std::string_view s);

template <class A>
using element_t = typename std::remove_cvref_t<A>::value_type;

// The file being read, for messages and for refusing lies (errc::bad_input).
struct source {
  std::string path;
  [[noreturn]] void lie(const std::string& obj, const std::string& what) const;
};

// ---- the file, its root and its groups (sections 1 and 2) --------------------------------

// Opens read-only: errc::io when the path cannot be opened or is a directory,
// errc::bad_input when it is not HDF5.
h5::handle open_for_read(const source& s);

// Every root attribute checked, and each group's `format` / `format_version`.
container_info read_info(const source& s, hid_t file);

// The group read_container(path, format) reads: `format` when stored (errc::usage naming
// what is stored otherwise), for "" the csr group when stored, else the first.
std::string choose_format(const source& s, const container_info& info, const std::string& format);

// Calls f(std::type_identity<Fmt>{}) for the any_matrix alternative whose name is `name` and
// whose value and index types are the root's; false when this build has none.
template <class F>
bool visit_alternative(const container_info& info, const std::string& name, F&& f) {
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    bool found = false;
    auto attempt = [&]<class Fmt>(std::type_identity<Fmt> t) {
      if (found || Fmt::name != name || type_name<typename Fmt::value_type>() != to_string(info.values) ||
          type_name<typename Fmt::index_type>() != to_string(info.index))
        return;
      found = true;
      f(t);
    };
    (attempt(std::type_identity<std::variant_alternative_t<K, any_matrix>>{}), ...);
    return found;
  }(std::make_index_sequence<std::variant_size_v<any_matrix>>{});
}

// errc::unsupported for a group visit_alternative found no type for.
[[noreturn]] void refuse_unbuilt(const source& s, const container_info& info, const std::string& name);

// ---- attributes -----------------------------------------------------------------------------
// `obj` is the object's path in the file, for messages ("/", "/csr").

// A scalar integer attribute (any HDF5 integer type, converted to int64).
std::int64_t read_int(const source& s, hid_t loc, const std::string& obj, const std::string& name);
// A scalar string, fixed-length (what spconv writes) or variable-length (what h5py writes).
std::string read_string(const source& s, hid_t loc, const std::string& obj, const std::string& name);

// ---- a format's group ------------------------------------------------------------------------

// Opens group /<Fmt::name>, checks its format_version and reads its parameters into m.params
// (each must fit its C++ type); m takes the root's shape. Returns the group.
template <class Fmt>
h5::handle open_format(const source& s, hid_t file, const container_info& info, Fmt& m) {
  const std::string name(Fmt::name), obj = "/" + name;
  auto group = h5::own_group(H5Gopen2(file, name.c_str(), H5P_DEFAULT), obj + ": opening");
  const std::int64_t version = read_int(s, group, obj, "format_version");
  if (version != Fmt::version)
    s.lie(obj, "format_version " + std::to_string(version) + " is not known (this spconv reads " + name + " version " +
                   std::to_string(Fmt::version) + ")");
  m.rows = info.rows;
  m.cols = info.cols;
  std::remove_cvref_t<decltype(m.params)>::for_each_param(m.params, [&](std::string_view pname, auto& v) {
    using P = std::remove_cvref_t<decltype(v)>;
    const std::string attr(pname);
    const std::int64_t x = read_int(s, group, obj, attr);
    const P p = static_cast<P>(x);
    if (static_cast<std::int64_t>(p) != x)
      s.lie(obj, "parameter '" + attr + "' = " + std::to_string(x) + " is out of its type's range");
    v = p;
  });
  return group;
}

// ---- datasets ----------------------------------------------------------------------------------

// One dataset that passed every check of section 2 (reached through hard links, a dataset,
// exactly the element type or its big-endian twin, 1-D, within the length limit, a zstd filter
// carrying the true chunk size): nothing has been read or allocated yet.
struct checked_dataset {
  h5::handle dataset;
  hsize_t elements = 0;
  bool big_endian = false;  // stored as the big-endian twin of the element type
};

checked_dataset open_dataset(const source& s, hid_t group, const std::string& gobj, const std::string& rel,
                             hid_t file_type, hid_t file_type_be, std::string_view type, std::int64_t limit);

template <class T>
checked_dataset open_dataset(const source& s, hid_t group, const std::string& gobj, const std::string& rel,
                             std::int64_t limit) {
  return open_dataset(s, group, gobj, rel, h5::file_type<T>(), h5::file_type_be<T>(), type_name<T>(), limit);
}

// ---- the binsparse descriptor (section 3) -----------------------------------------------------

// Whether (indices_0[k], indices_1[k]) strictly increase, binsparse's COO order; found by
// binsparse's array names, false if the format has no such pair of index arrays.
template <class Fmt>
bool binsparse_sorted_pairs(const Fmt& m) {
  using I = typename Fmt::index_type;
  const array<I>* idx[2] = {nullptr, nullptr};
  Fmt::for_each_array(m, [&](std::string_view name, const auto& arr) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(arr)>, array<I>>) {
      if (name == "indices_0") idx[0] = &arr;
      if (name == "indices_1") idx[1] = &arr;
    }
  });
  if (!idx[0] || !idx[1]) return false;
  const auto &r = *idx[0], &c = *idx[1];
  for (std::size_t k = 1; k < r.size(); ++k)
    if (r[k] < r[k - 1] || (r[k] == r[k - 1] && c[k] <= c[k - 1])) return false;
  return true;
}

// The binsparse format `m` is an instance of (section 3), "" if none: canonical CSR
// always is (validate() enforces binsparse's order); COO only when sorted without
// duplicates, since binsparse's COO (= COOR) requires it and ours may be in file order.
template <class Fmt>
std::string_view binsparse_format(const Fmt& m) {
  if (Fmt::name == "csr") return "CSR";
  if (Fmt::name == "coo" && binsparse_sorted_pairs(m)) return "COO";
  return {};
}

template <class Fmt>
nlohmann::json binsparse_descriptor(const Fmt& m, std::string_view format, std::int64_t nnz) {
  nlohmann::json types = nlohmann::json::object();
  Fmt::for_each_array(m, [&](std::string_view name, const auto& arr) {
    types[std::string(name)] = std::string(type_name<element_t<decltype(arr)>>());
  });
  nlohmann::json d = {{"version", "0.1"},
                      {"format", std::string(format)},
                      {"shape", {m.rows, m.cols}},
                      {"number_of_stored_values", nnz},
                      {"data_types", types}};
  return {{"binsparse", d}};
}

// A group's `binsparse` attribute as read, before the arrays it is checked against: its
// text, or the refusal of reading it (not a single string), which check_binsparse raises
// only where the rules reach the text.
struct binsparse_attribute {
  bool present = false;
  std::string text;
  std::exception_ptr unreadable;
};

binsparse_attribute read_binsparse(const source& s, hid_t group, const std::string& obj);

// The group carries the descriptor exactly when it is a binsparse instance, and the
// descriptor agrees with the group and the root.
template <class Fmt>
void check_binsparse(const source& s, const std::string& obj, const Fmt& m, std::int64_t nnz,
                     const binsparse_attribute& attr) {
  const std::string_view format = binsparse_format(m);
  if (!attr.present && format.empty()) return;
  if (!attr.present) s.lie(obj, "attribute 'binsparse' is missing");
  if (format.empty())
    s.lie(obj, "attribute 'binsparse' describes entries that are not in binsparse's order "
               "(sorted by row, then column, without duplicates)");
  if (attr.unreadable) std::rethrow_exception(attr.unreadable);
  const auto doc = nlohmann::json::parse(attr.text, nullptr, false);
  if (doc.is_discarded()) s.lie(obj, "attribute 'binsparse' is not JSON");
  const auto d = doc.is_object() ? doc.find("binsparse") : doc.end();
  if (d == doc.end() || !d->is_object()) s.lie(obj, "attribute 'binsparse' has no \"binsparse\" object");
  const auto version = d->find("version");
  if (version == d->end() || !version->is_string()) s.lie(obj, "binsparse descriptor has no version string");
  const auto expected = binsparse_descriptor(m, format, nnz)["binsparse"];
  for (const char* key : {"format", "shape", "number_of_stored_values", "data_types"}) {
    const auto got = d->find(key);
    if (got == d->end() || *got != expected[key])
      s.lie(obj, std::string("binsparse descriptor's \"") + key + "\" is " + (got == d->end() ? "missing" : got->dump()) +
                     ", expected " + expected[key].dump());
  }
}

// What is checked once the arrays are in host memory: a format with derived members that are
// not stored (a composite's parts' shapes) restores them (sync_parts), then validate(), nnz()
// against the root's nnz, and the binsparse descriptor. No HDF5 call.
template <class Fmt>
void check_contents(const source& s, const std::string& obj, Fmt& m, std::int64_t nnz,
                    const binsparse_attribute& attr) {
  if constexpr (requires { Fmt::sync_parts(m); }) Fmt::sync_parts(m);
  try {
    validate(m);
  } catch (const error& e) {
    s.lie(obj, e.what());
  }
  if (m.nnz() != nnz)
    s.lie(obj, "holds " + std::to_string(m.nnz()) + " entries, the root attribute nnz says " + std::to_string(nnz));
  check_binsparse(s, obj, m, nnz, attr);
}

}  // namespace spconv::container_detail
