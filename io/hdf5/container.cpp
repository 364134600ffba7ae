// The spconv HDF5 container, version 1. specs/container.md is the contract; "section N"
// below refers to it. Nothing here knows a particular format: groups, datasets and
// attributes all come from each format's name, version, for_each_array and
// for_each_param, and the C++ type to read into is picked among any_matrix's
// alternatives by name, value type and index type.
#include "io/hdf5/container.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "io/atomic_file.hpp"
#include "io/hdf5/h5.hpp"
#include "io/hdf5/zstd_filter.hpp"

namespace spconv {
namespace fs = std::filesystem;
namespace {

constexpr std::int64_t container_version = 1;
constexpr hsize_t chunk_elements = hsize_t{1} << 20;
constexpr int zstd_max_level = 22;
constexpr std::string_view symmetries[] = {"", "general", "symmetric", "skew-symmetric", "hermitian"};

bool known_symmetry(std::string_view s) {
  return std::find(std::begin(symmetries), std::end(symmetries), s) != std::end(symmetries);
}

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

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

std::int64_t nnz_of(const any_matrix& m) {
  return std::visit([](const auto& x) { return x.nnz(); }, m);
}

template <class A>
using element_t = typename std::remove_cvref_t<A>::value_type;

// ---- attributes -----------------------------------------------------------------------
// `obj` is the object's path in the file, for messages ("/", "/csr").

// Scalar when n == 0, else 1-D of n.
void write_ints(hid_t loc, const std::string& obj, const std::string& name, const std::int64_t* v, hsize_t n) {
  const std::string what = obj + ": attribute '" + name + "'";
  auto space = n == 0 ? h5::own_space(H5Screate(H5S_SCALAR), what) : h5::own_space(H5Screate_simple(1, &n, nullptr), what);
  auto attr = h5::own_attr(H5Acreate2(loc, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT),
                           what + ": creating");
  h5::check(H5Awrite(attr, H5T_NATIVE_INT64, v), what + ": writing");
}

void write_int(hid_t loc, const std::string& obj, const std::string& name, std::int64_t v) {
  write_ints(loc, obj, name, &v, 0);
}

// Fixed-length, NUL-terminated UTF-8 (section 1: what binsparse readers expect).
void write_string(hid_t loc, const std::string& obj, const std::string& name, const std::string& value) {
  const std::string what = obj + ": attribute '" + name + "'";
  auto type = h5::own_type(H5Tcopy(H5T_C_S1), what);
  h5::check(H5Tset_size(type, value.size() + 1), what);
  h5::check(H5Tset_strpad(type, H5T_STR_NULLTERM), what);
  h5::check(H5Tset_cset(type, H5T_CSET_UTF8), what);
  auto space = h5::own_space(H5Screate(H5S_SCALAR), what);
  auto attr = h5::own_attr(H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), what + ": creating");
  h5::check(H5Awrite(attr, type, value.c_str()), what + ": writing");
}

// The file being read, for messages and for refusing lies (errc::bad_input).
struct source {
  std::string path;
  [[noreturn]] void lie(const std::string& obj, const std::string& what) const {
    fail(errc::bad_input, path + ": " + obj + ": " + what);
  }
};

h5::handle open_attr(const source& s, hid_t loc, const std::string& obj, const std::string& name) {
  const htri_t exists = H5Aexists(loc, name.c_str());
  h5::check(exists, obj + ": looking up attribute '" + name + "'");
  if (exists == 0) s.lie(obj, "attribute '" + name + "' is missing");
  return h5::own_attr(H5Aopen(loc, name.c_str(), H5P_DEFAULT), obj + ": opening attribute '" + name + "'");
}

// `count` integers (any HDF5 integer type, converted to int64).
std::vector<std::int64_t> read_ints(const source& s, hid_t loc, const std::string& obj, const std::string& name,
                                    hssize_t count) {
  auto attr = open_attr(s, loc, obj, name);
  const std::string what = obj + ": attribute '" + name + "'";
  auto type = h5::own_type(H5Aget_type(attr), what);
  if (H5Tget_class(type) != H5T_INTEGER) s.lie(obj, "attribute '" + name + "' is " + h5::describe_type(type) + ", expected an integer");
  auto space = h5::own_space(H5Aget_space(attr), what);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n != count)
    s.lie(obj, "attribute '" + name + "' has " + std::to_string(n) + " values, expected " + std::to_string(count));
  std::vector<std::int64_t> v(static_cast<std::size_t>(count));
  h5::check(H5Aread(attr, H5T_NATIVE_INT64, v.data()), what + ": reading");
  return v;
}

std::int64_t read_int(const source& s, hid_t loc, const std::string& obj, const std::string& name) {
  return read_ints(s, loc, obj, name, 1)[0];
}

// A scalar string, fixed-length (what spconv writes) or variable-length (what h5py writes).
std::string read_string(const source& s, hid_t loc, const std::string& obj, const std::string& name) {
  // Strings are short metadata; a lying type size must not drive an allocation.
  constexpr std::size_t max_bytes = std::size_t{1} << 20;
  auto attr = open_attr(s, loc, obj, name);
  const std::string what = obj + ": attribute '" + name + "'";
  auto type = h5::own_type(H5Aget_type(attr), what);
  if (H5Tget_class(type) != H5T_STRING) s.lie(obj, "attribute '" + name + "' is " + h5::describe_type(type) + ", expected a string");
  auto space = h5::own_space(H5Aget_space(attr), what);
  if (H5Sget_simple_extent_npoints(space) != 1) s.lie(obj, "attribute '" + name + "' is not a single string");
  auto mem = h5::own_type(H5Tcopy(H5T_C_S1), what);
  h5::check(H5Tset_cset(mem, H5Tget_cset(type)), what);
  const htri_t variable = H5Tis_variable_str(type);
  h5::check(variable, what);
  if (variable) {
    h5::check(H5Tset_size(mem, H5T_VARIABLE), what);
    char* p = nullptr;
    h5::check(H5Aread(attr, mem, &p), what + ": reading");
    std::string out = p ? p : "";
    H5free_memory(p);
    return out;
  }
  const std::size_t size = H5Tget_size(type);
  if (size > max_bytes) s.lie(obj, "attribute '" + name + "' is a string of " + std::to_string(size) + " bytes");
  // One more byte than stored and NUL-terminated, whatever padding the file used.
  h5::check(H5Tset_size(mem, size + 1), what);
  h5::check(H5Tset_strpad(mem, H5T_STR_NULLTERM), what);
  std::string buf(size + 1, '\0');
  h5::check(H5Aread(attr, mem, buf.data()), what + ": reading");
  buf.resize(std::strlen(buf.c_str()));
  return buf;
}

// ---- links ------------------------------------------------------------------------------

// Names of the hard links directly in `group`, or (recursive) anywhere below it, in name
// order. Soft and external links are not followed: an external link would make the
// reader open another file.
std::vector<std::string> hard_links(hid_t group, const std::string& obj, bool recursive) {
  struct state {
    std::vector<std::string> names;
    std::exception_ptr error;
  } st;
  auto collect = [](hid_t, const char* name, const H5L_info_t* info, void* data) -> herr_t {
    auto* s = static_cast<state*>(data);
    if (info->type != H5L_TYPE_HARD) return 0;
    try {
      s->names.emplace_back(name);
    } catch (...) {  // nothing may unwind through HDF5's C frames
      s->error = std::current_exception();
      return -1;
    }
    return 0;
  };
  const herr_t r = recursive ? H5Lvisit(group, H5_INDEX_NAME, H5_ITER_INC, collect, &st)
                             : H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &st);
  if (st.error) std::rethrow_exception(st.error);
  h5::check(r, obj + ": listing members");
  return st.names;
}

// Whether `rel` (may contain '/') exists below `loc` through hard links only; a soft or
// external link on the way is a lie (the layout has none).
bool hard_path_exists(const source& s, hid_t loc, const std::string& obj, const std::string& rel) {
  for (std::size_t pos = 0;; ++pos) {
    pos = rel.find('/', pos);
    const std::string prefix = rel.substr(0, pos);
    const htri_t e = H5Lexists(loc, prefix.c_str(), H5P_DEFAULT);
    if (e <= 0) {
      H5Eclear2(H5E_DEFAULT);  // a missing parent makes H5Lexists fail rather than say 0
      return false;
    }
    H5L_info_t info;
    h5::check(H5Lget_info(loc, prefix.c_str(), &info, H5P_DEFAULT), obj + "/" + prefix + ": link");
    if (info.type != H5L_TYPE_HARD) s.lie(obj + "/" + prefix, "is a soft or external link");
    if (pos == std::string::npos) return true;
  }
}

// ---- section 1: the root ----------------------------------------------------------------

container_info read_root(const source& s, hid_t file) {
  const std::string root = "/";
  container_info info;
  const std::int64_t version = read_int(s, file, root, "container_version");
  if (version != container_version)
    s.lie(root, "container_version " + std::to_string(version) + " is not known (this spconv reads version " +
                    std::to_string(container_version) + ")");
  info.container_version = static_cast<int>(version);

  const auto shape = read_ints(s, file, root, "shape", 2);
  info.rows = shape[0];
  info.cols = shape[1];
  if (info.rows < 0 || info.cols < 0)
    s.lie(root, "negative shape " + std::to_string(info.rows) + " x " + std::to_string(info.cols));
  info.nnz = read_int(s, file, root, "nnz");
  if (info.nnz < 0) s.lie(root, "negative nnz " + std::to_string(info.nnz));
  std::int64_t cells = 0;
  if (!__builtin_mul_overflow(info.rows, info.cols, &cells) && info.nnz > cells)
    s.lie(root, "nnz " + std::to_string(info.nnz) + " exceeds rows x cols = " + std::to_string(cells));

  const std::string vt = read_string(s, file, root, "value_type");
  if (vt == "float32") info.values = value_type::f32;
  else if (vt == "float64") info.values = value_type::f64;
  else s.lie(root, "value_type '" + vt + "' is not float32 or float64");
  const std::string it = read_string(s, file, root, "index_type");
  if (it == "int32") info.index = index_type::i32;
  else if (it == "int64") info.index = index_type::i64;
  else s.lie(root, "index_type '" + it + "' is not int32 or int64");

  info.meta.source_symmetry = read_string(s, file, root, "source_symmetry");
  if (!known_symmetry(info.meta.source_symmetry))
    s.lie(root, "source_symmetry '" + info.meta.source_symmetry + "' is not one of general, symmetric, skew-symmetric, hermitian");
  info.meta.source_name = read_string(s, file, root, "source_name");
  info.meta.source_checksum = read_string(s, file, root, "source_checksum");
  info.meta.creator = read_string(s, file, root, "creator");
  return info;
}

void write_root(hid_t file, std::int64_t rows, std::int64_t cols, std::int64_t nnz, value_type vt, index_type it,
                const container_meta& meta) {
  const std::string root = "/";
  write_int(file, root, "container_version", container_version);
  const std::int64_t shape[2] = {rows, cols};
  write_ints(file, root, "shape", shape, 2);
  write_int(file, root, "nnz", nnz);
  write_string(file, root, "value_type", std::string(to_string(vt)));
  write_string(file, root, "index_type", std::string(to_string(it)));
  write_string(file, root, "source_symmetry", meta.source_symmetry);
  write_string(file, root, "source_name", meta.source_name);
  write_string(file, root, "source_checksum", meta.source_checksum);
  write_string(file, root, "creator", meta.creator);
}

// ---- section 2: the groups ----------------------------------------------------------------

std::vector<stored_format> read_groups(const source& s, hid_t file) {
  std::vector<stored_format> out;
  for (const auto& name : hard_links(file, "/", false)) {
    const std::string obj = "/" + name;
    auto group = h5::own_object(H5Oopen(file, name.c_str(), H5P_DEFAULT), obj + ": opening");
    if (H5Iget_type(group) != H5I_GROUP) continue;  // not part of the container
    stored_format f;
    f.name = name;
    const std::string declared = read_string(s, group, obj, "format");
    if (declared != name) s.lie(obj, "attribute 'format' is '" + declared + "', expected the group's name");
    const std::int64_t version = read_int(s, group, obj, "format_version");
    if (version < 0 || version > std::numeric_limits<int>::max())
      s.lie(obj, "format_version " + std::to_string(version) + " is out of range");
    f.version = static_cast<int>(version);
    for (const auto& rel : hard_links(group, obj, true)) {
      auto member = h5::own_object(H5Oopen(group, rel.c_str(), H5P_DEFAULT), obj + "/" + rel + ": opening");
      if (H5Iget_type(member) != H5I_DATASET) continue;
      auto type = h5::own_type(H5Dget_type(member), obj + "/" + rel);
      auto space = h5::own_space(H5Dget_space(member), obj + "/" + rel);
      const hssize_t points = H5Sget_simple_extent_npoints(space);
      if (points < 0) h5::raise(obj + "/" + rel + ": extent");
      f.raw_bytes += static_cast<std::uint64_t>(points) * H5Tget_size(type);
      f.stored_bytes += H5Dget_storage_size(member);
    }
    out.push_back(std::move(f));
  }
  return out;
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

// A group carries the descriptor exactly when it is a binsparse instance, and the
// descriptor agrees with the group and the root (section 3).
template <class Fmt>
void check_binsparse(const source& s, hid_t group, const std::string& obj, const Fmt& m, std::int64_t nnz) {
  const std::string_view format = binsparse_format(m);
  const htri_t present = H5Aexists(group, "binsparse");
  h5::check(present, obj + ": looking up attribute 'binsparse'");
  if (!present && format.empty()) return;
  if (!present) s.lie(obj, "attribute 'binsparse' is missing");
  if (format.empty())
    s.lie(obj, "attribute 'binsparse' describes entries that are not in binsparse's order "
               "(sorted by row, then column, without duplicates)");
  const std::string text = read_string(s, group, obj, "binsparse");
  const auto doc = nlohmann::json::parse(text, nullptr, false);
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

// A zstd dataset must record its true chunk size as cd_values[1] (section 4): the filter
// checks every frame against it, which is what keeps a frame shorter than its chunk from
// leaving part of the chunk buffer undefined (HDF5 1.10 does not check).
void check_zstd_chunk_size(const source& s, hid_t dset, hid_t type, const std::string& obj) {
  auto dcpl = h5::own_plist(H5Dget_create_plist(dset), obj + ": properties");
  const int filters = H5Pget_nfilters(dcpl);
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0, values[2] = {0, 0};
    std::size_t n = 2;
    char name[64];
    const H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &n, values, sizeof name, name, &config);
    if (id < 0) h5::raise(obj + ": filters");
    if (id != h5::zstd_filter_id) continue;
    hsize_t chunk = 0;
    if (H5Pget_chunk(dcpl, 1, &chunk) != 1) h5::raise(obj + ": chunking");
    const std::uint64_t bytes = chunk * H5Tget_size(type);
    if (n < 2 || values[1] != bytes)
      s.lie(obj, "the zstd filter's chunk size (cd_values[1]) is " + (n < 2 ? std::string("absent") : std::to_string(values[1])) +
                     ", expected " + std::to_string(bytes) + " bytes");
  }
}

// One dataset into `arr`: exact element type, 1-D, within the limit, then read.
template <class T, class A>
void read_array(const source& s, hid_t group, const std::string& gobj, const std::string& rel, A& arr,
                std::int64_t limit) {
  const std::string obj = gobj + "/" + rel;
  if (!hard_path_exists(s, group, gobj, rel)) s.lie(obj, "dataset is missing");
  auto dset = h5::own_object(H5Oopen(group, rel.c_str(), H5P_DEFAULT), obj + ": opening");
  if (H5Iget_type(dset) != H5I_DATASET) s.lie(obj, "is not a dataset");
  auto type = h5::own_type(H5Dget_type(dset), obj);
  if (H5Tequal(type, h5::file_type<T>()) <= 0 && H5Tequal(type, h5::file_type_be<T>()) <= 0)
    s.lie(obj, "element type " + h5::describe_type(type) + ", expected " + std::string(type_name<T>()));
  auto space = h5::own_space(H5Dget_space(dset), obj);
  if (H5Sget_simple_extent_type(space) != H5S_SIMPLE || H5Sget_simple_extent_ndims(space) != 1)
    s.lie(obj, "is not a 1-D dataset");
  hsize_t n = 0;
  h5::check(H5Sget_simple_extent_dims(space, &n, nullptr), obj + ": extent");
  if (n > static_cast<hsize_t>(limit))
    s.lie(obj, "has " + std::to_string(n) + " elements, beyond the container limit of " + std::to_string(limit) +
                   " (64 * (nnz + rows + 1) + 2^20)");
  check_zstd_chunk_size(s, dset, type, obj);
  arr.resize(n);
  if (n > 0) h5::check(H5Dread(dset, h5::native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, arr.data()), obj + ": reading");
}

template <class Fmt>
Fmt read_format(const source& s, hid_t file, const container_info& info) {
  const std::string name(Fmt::name), obj = "/" + name;
  auto group = h5::own_group(H5Gopen2(file, name.c_str(), H5P_DEFAULT), obj + ": opening");
  const std::int64_t version = read_int(s, group, obj, "format_version");
  if (version != Fmt::version)
    s.lie(obj, "format_version " + std::to_string(version) + " is not known (this spconv reads " + name + " version " +
                   std::to_string(Fmt::version) + ")");
  Fmt m;
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
  const std::int64_t limit = container_array_cap(info.nnz, info.rows);
  Fmt::for_each_array(m, [&](std::string_view rel, auto& arr) {
    read_array<element_t<decltype(arr)>>(s, group, obj, std::string(rel), arr, limit);
  });
  // A format with derived members that are not stored (a composite's parts' shapes)
  // restores them from what was read (section 2).
  if constexpr (requires { Fmt::sync_parts(m); }) Fmt::sync_parts(m);
  try {
    validate(m);
  } catch (const error& e) {
    s.lie(obj, e.what());
  }
  if (m.nnz() != info.nnz)
    s.lie(obj, "holds " + std::to_string(m.nnz()) + " entries, the root attribute nnz says " + std::to_string(info.nnz));
  check_binsparse(s, group, obj, m, info.nnz);
  return m;
}

// Reads group `name` into the any_matrix alternative of that name and the root's value
// and index types; nullopt if this build has none.
template <std::size_t... K>
std::optional<any_matrix> read_alternative(const source& s, hid_t file, const container_info& info,
                                           const std::string& name, std::index_sequence<K...>) {
  std::optional<any_matrix> out;
  auto attempt = [&]<class Fmt>(std::type_identity<Fmt>) {
    if (out || Fmt::name != name || type_name<typename Fmt::value_type>() != to_string(info.values) ||
        type_name<typename Fmt::index_type>() != to_string(info.index))
      return;
    out.emplace(read_format<Fmt>(s, file, info));
  };
  (attempt(std::type_identity<std::variant_alternative_t<K, any_matrix>>{}), ...);
  return out;
}

// One dataset (section 2: chunking, filters, checksum).
template <class T>
void write_array(hid_t group, const std::string& gobj, const std::string& rel, const T* data, std::size_t n,
                 const compression& comp, hid_t lcpl) {
  const std::string obj = gobj + "/" + rel;
  const hsize_t dims = n;
  // A chunk holds at least one element and may not exceed a fixed maximum extent.
  const hsize_t maxdims = n > 0 ? dims : H5S_UNLIMITED;
  auto space = h5::own_space(H5Screate_simple(1, &dims, &maxdims), obj + ": dataspace");
  auto dcpl = h5::own_plist(H5Pcreate(H5P_DATASET_CREATE), obj + ": properties");
  const hsize_t chunk = std::clamp<hsize_t>(dims, 1, chunk_elements);
  h5::check(H5Pset_chunk(dcpl, 1, &chunk), obj + ": chunking");
  if (comp.zstd) {
    const unsigned level = static_cast<unsigned>(comp.level);
    h5::check(H5Pset_shuffle(dcpl), obj + ": shuffle filter");
    h5::check(H5Pset_filter(dcpl, h5::zstd_filter_id, H5Z_FLAG_MANDATORY, 1, &level), obj + ": zstd filter");
  }
  h5::check(H5Pset_fletcher32(dcpl), obj + ": Fletcher32 filter");
  auto dset = h5::own_dataset(H5Dcreate2(group, rel.c_str(), h5::file_type<T>(), space, lcpl, dcpl, H5P_DEFAULT),
                              obj + ": creating dataset");
  if (n > 0) h5::check(H5Dwrite(dset, h5::native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), obj + ": writing");
  dset.close(obj + ": closing");
}

template <class Fmt>
void write_format(hid_t file, const Fmt& m, const compression& comp) {
  const std::string name(Fmt::name), obj = "/" + name;
  auto group = h5::own_group(H5Gcreate2(file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), obj + ": creating group");
  write_string(group, obj, "format", name);
  write_int(group, obj, "format_version", Fmt::version);
  std::remove_cvref_t<decltype(m.params)>::for_each_param(m.params, [&](std::string_view pname, const auto& v) {
    write_int(group, obj, std::string(pname), static_cast<std::int64_t>(v));
  });
  if (const std::string_view bs = binsparse_format(m); !bs.empty())
    write_string(group, obj, "binsparse", binsparse_descriptor(m, bs, m.nnz()).dump());
  // Array names may hold '/': their subgroups are created on the way.
  auto lcpl = h5::own_plist(H5Pcreate(H5P_LINK_CREATE), obj + ": link properties");
  h5::check(H5Pset_create_intermediate_group(lcpl, 1), obj + ": link properties");
  Fmt::for_each_array(m, [&](std::string_view rel, const auto& arr) {
    write_array(group, obj, std::string(rel), arr.data(), arr.size(), comp, lcpl);
  });
}

// ---- section 5: the temporary file and its atomic rename ------------------------------------

// Creates the temporary file exclusively (HDF5's H5F_ACC_EXCL is O_EXCL), so an existing
// file is never truncated; the usual 0666 & ~umask permissions follow. A half-created file
// goes with `tmp`.
h5::handle create_temporary(const atomic_file& tmp) {
  const hid_t id = H5Fcreate(tmp.path().c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
  if (id < 0)
    fail(errc::io, tmp.target().string() + ": cannot create the temporary file " + tmp.path().string() + " (" +
                       h5::innermost_error() + ")");
  return h5::handle(id, H5Fclose);
}

h5::handle open_for_read(const source& s) {
  // Distinguishes "cannot open" (I/O) from "not HDF5" (bad input), which HDF5 conflates.
  const int fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(errc::io, s.path + ": cannot open: " + errno_text(errno));
  struct stat st {};
  const bool is_dir = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
  ::close(fd);
  if (is_dir) fail(errc::io, s.path + ": is a directory");
  const hid_t id = H5Fopen(s.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) fail(errc::bad_input, s.path + ": not an HDF5 file (" + h5::innermost_error() + ")");
  return h5::handle(id, H5Fclose);
}

container_info read_info(const source& s, hid_t file) {
  container_info info = read_root(s, file);
  info.formats = read_groups(s, file);
  return info;
}

std::string describe(const any_matrix& m) {
  return std::string(format_name(m)) + " " + std::to_string(rows_of(m)) + " x " + std::to_string(cols_of(m)) + ", " +
         std::to_string(nnz_of(m)) + " entries, " + std::string(to_string(value_type_of(m))) + "/" +
         std::string(to_string(index_type_of(m)));
}

}  // namespace

compression parse_compression(const std::string& s) {
  if (s == "none") return {false, 3};
  if (s == "zstd") return {true, 3};
  if (s.starts_with("zstd:")) {
    int level = 0;
    const char* b = s.data() + 5;
    const char* e = s.data() + s.size();
    const auto [p, ec] = std::from_chars(b, e, level);
    if (ec == std::errc() && p == e && b != e && level >= 1 && level <= zstd_max_level) return {true, level};
  }
  fail(errc::usage, "unknown compression '" + s + "' (expected none, zstd or zstd:LEVEL with LEVEL 1.." +
                        std::to_string(zstd_max_level) + ")");
}

void write_container(const fs::path& path, const std::vector<any_matrix>& formats, const container_meta& meta,
                     const write_options& opt) {
  h5::quiet_errors quiet;
  h5::register_zstd_filter();
  const std::string p = path.string();

  // Step 1: the request, before anything touches the disk.
  if (formats.empty()) fail(errc::usage, p + ": no format to write");
  const any_matrix& first = formats.front();
  const std::int64_t rows = rows_of(first), cols = cols_of(first), nnz = nnz_of(first);
  const value_type vt = value_type_of(first);
  const index_type it = index_type_of(first);
  std::vector<std::string> names;
  for (const auto& m : formats) {
    const std::string name(format_name(m));
    if (std::find(names.begin(), names.end(), name) != names.end()) fail(errc::usage, p + ": format " + name + " given twice");
    names.push_back(name);
    if (rows_of(m) != rows || cols_of(m) != cols || nnz_of(m) != nnz || value_type_of(m) != vt || index_type_of(m) != it)
      fail(errc::usage, p + ": the formats do not hold the same matrix: " + describe(first) + " but " + describe(m));
    try {
      validate(m);
    } catch (const error& e) {
      fail(e.code(), p + ": " + e.what());
    }
    const std::int64_t limit = container_array_cap(nnz, rows);
    std::visit(
        [&](const auto& x) {
          std::remove_cvref_t<decltype(x)>::for_each_array(x, [&](std::string_view rel, const auto& arr) {
            if (static_cast<std::int64_t>(arr.size()) > limit)
              fail(errc::unsupported, p + ": " + name + "/" + std::string(rel) + " has " + std::to_string(arr.size()) +
                                          " elements, beyond the container limit of " + std::to_string(limit) +
                                          " (64 * (nnz + rows + 1) + 2^20)");
          });
        },
        m);
  }
  if (!known_symmetry(meta.source_symmetry))
    fail(errc::usage, p + ": source symmetry '" + meta.source_symmetry +
                          "' is not one of general, symmetric, skew-symmetric, hermitian (or empty)");
  if (opt.comp.zstd && (opt.comp.level < 1 || opt.comp.level > zstd_max_level))
    fail(errc::usage, p + ": zstd level " + std::to_string(opt.comp.level) + " is not in 1.." + std::to_string(zstd_max_level));

  // Step 2: the target.
  container_meta root = meta;
  if (root.creator.empty()) root.creator = "spconv " SPCONV_VERSION;
  std::vector<std::string> keep;  // groups of the existing file copied as stored
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (exists && opt.add) {
    const container_info old = read_container_info(path);
    if (old.rows != rows || old.cols != cols || old.nnz != nnz || old.values != vt || old.index != it)
      fail(errc::usage, p + " holds a different matrix (" + std::to_string(old.rows) + " x " + std::to_string(old.cols) +
                            ", " + std::to_string(old.nnz) + " entries, " + std::string(to_string(old.values)) + "/" +
                            std::string(to_string(old.index)) + ") than the one to add (" + describe(first) +
                            "); write it to another file or use --force");
    if (root.source_symmetry.empty()) root.source_symmetry = old.meta.source_symmetry;
    if (root.source_name.empty()) root.source_name = old.meta.source_name;
    if (root.source_checksum.empty()) root.source_checksum = old.meta.source_checksum;
    for (const auto& f : old.formats)
      if (std::find(names.begin(), names.end(), f.name) == names.end()) keep.push_back(f.name);
  } else if (exists && !opt.force) {
    fail(errc::usage, p + " exists (use --force)");
  }

  // Step 3: write beside the target, then rename; the temp file goes on any failure.
  atomic_file tmp(path);
  try {
    h5::handle file = create_temporary(tmp);
    write_root(file, rows, cols, nnz, vt, it, root);
    if (!keep.empty()) {
      h5::handle src = h5::own_file(H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "reopening to copy its groups");
      for (const auto& name : keep)
        h5::check(H5Ocopy(src, name.c_str(), file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT), "/" + name + ": copying");
      src.close("closing the existing file");
    }
    for (const auto& m : formats) std::visit([&](const auto& x) { write_format(file, x, opt.comp); }, m);
    h5::check(H5Fflush(file, H5F_SCOPE_LOCAL), "flushing");
    file.close("closing");
    tmp.commit(opt.force || opt.add);
  } catch (const h5::failure& f) {
    fail(errc::io, p + ": " + f.what());
  }
}

container_info read_container_info(const fs::path& path) {
  h5::quiet_errors quiet;
  h5::register_zstd_filter();
  const source s{path.string()};
  try {
    h5::handle file = open_for_read(s);
    return read_info(s, file);
  } catch (const h5::failure& f) {
    fail(errc::bad_input, s.path + ": " + f.what());
  }
}

any_matrix read_container(const fs::path& path, const std::string& format) {
  h5::quiet_errors quiet;
  h5::register_zstd_filter();
  const source s{path.string()};
  try {
    h5::handle file = open_for_read(s);
    const container_info info = read_info(s, file);
    auto stored = [&](const std::string& n) {
      return std::any_of(info.formats.begin(), info.formats.end(), [&](const stored_format& f) { return f.name == n; });
    };
    std::string name = format;
    if (name.empty()) {
      if (info.formats.empty()) s.lie("/", "no stored format");
      name = stored("csr") ? "csr" : info.formats.front().name;
    } else if (!stored(name)) {
      std::string list;
      for (const auto& f : info.formats) list += (list.empty() ? "" : ", ") + f.name;
      fail(errc::usage, s.path + " has no '" + name + "' format (stored: " + (list.empty() ? "none" : list) + ")");
    }
    auto m = read_alternative(s, file, info, name, std::make_index_sequence<std::variant_size_v<any_matrix>>{});
    if (!m) {
      if (!is_format_name(name))
        fail(errc::unsupported, s.path + ": format '" + name + "' is not known to this spconv (known: " +
                                    format_names_joined(", ") + ")");
      fail(errc::unsupported, s.path + ": format '" + name + "' with " + std::string(to_string(info.values)) +
                                  " values and " + std::string(to_string(info.index)) +
                                  " indices is not built into this spconv");
    }
    return std::move(*m);
  } catch (const h5::failure& f) {
    fail(errc::bad_input, s.path + ": " + f.what());
  }
}

}  // namespace spconv
