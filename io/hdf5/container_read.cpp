// The container reader's checks (specs/container.md, sections 1, 2 and 6): see
// io/hdf5/container_read.hpp.
#include "io/hdf5/container_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <system_error>
#include <vector>

#include "io/hdf5/zstd_filter.hpp"

namespace spconv::container_detail {
namespace {

constexpr std::string_view symmetries[] = {"", "general", "symmetric", "skew-symmetric", "hermitian"};

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

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

}  // namespace

bool known_symmetry(std::string_view s) {
  return std::find(std::begin(symmetries), std::end(symmetries), s) != std::end(symmetries);
}

void source::lie(const std::string& obj, const std::string& what) const {
  fail(errc::bad_input, path + ": " + obj + ": " + what);
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

namespace {

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

}  // namespace

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

std::string choose_format(const source& s, const container_info& info, const std::string& format) {
  auto stored = [&](const std::string& n) {
    return std::any_of(info.formats.begin(), info.formats.end(), [&](const stored_format& f) { return f.name == n; });
  };
  if (format.empty()) {
    if (info.formats.empty()) s.lie("/", "no stored format");
    return stored("csr") ? "csr" : info.formats.front().name;
  }
  if (!stored(format)) {
    std::string list;
    for (const auto& f : info.formats) list += (list.empty() ? "" : ", ") + f.name;
    fail(errc::usage, s.path + " has no '" + format + "' format (stored: " + (list.empty() ? "none" : list) + ")");
  }
  return format;
}

void refuse_unbuilt(const source& s, const container_info& info, const std::string& name) {
  if (!is_format_name(name))
    fail(errc::unsupported, s.path + ": format '" + name + "' is not known to this spconv (known: " +
                                format_names_joined(", ") + ")");
  fail(errc::unsupported, s.path + ": format '" + name + "' with " + std::string(to_string(info.values)) +
                              " values and " + std::string(to_string(info.index)) +
                              " indices is not built into this spconv");
}

checked_dataset open_dataset(const source& s, hid_t group, const std::string& gobj, const std::string& rel,
                             hid_t file_type, hid_t file_type_be, std::string_view type_name, std::int64_t limit) {
  const std::string obj = gobj + "/" + rel;
  if (!hard_path_exists(s, group, gobj, rel)) s.lie(obj, "dataset is missing");
  checked_dataset out;
  out.dataset = h5::own_object(H5Oopen(group, rel.c_str(), H5P_DEFAULT), obj + ": opening");
  if (H5Iget_type(out.dataset) != H5I_DATASET) s.lie(obj, "is not a dataset");
  auto type = h5::own_type(H5Dget_type(out.dataset), obj);
  out.big_endian = H5Tequal(type, file_type) <= 0;
  if (out.big_endian && H5Tequal(type, file_type_be) <= 0)
    s.lie(obj, "element type " + h5::describe_type(type) + ", expected " + std::string(type_name));
  auto space = h5::own_space(H5Dget_space(out.dataset), obj);
  if (H5Sget_simple_extent_type(space) != H5S_SIMPLE || H5Sget_simple_extent_ndims(space) != 1)
    s.lie(obj, "is not a 1-D dataset");
  h5::check(H5Sget_simple_extent_dims(space, &out.elements, nullptr), obj + ": extent");
  if (out.elements > static_cast<hsize_t>(limit))
    s.lie(obj, "has " + std::to_string(out.elements) + " elements, beyond the container limit of " +
                   std::to_string(limit) + " (64 * (nnz + rows + 1) + 2^20)");
  check_zstd_chunk_size(s, out.dataset, type, obj);
  return out;
}

binsparse_attribute read_binsparse(const source& s, hid_t group, const std::string& obj) {
  binsparse_attribute attr;
  const htri_t present = H5Aexists(group, "binsparse");
  h5::check(present, obj + ": looking up attribute 'binsparse'");
  attr.present = present > 0;
  if (attr.present) {
    try {
      attr.text = read_string(s, group, obj, "binsparse");
    } catch (...) {
      attr.unreadable = std::current_exception();
    }
  }
  return attr;
}

}  // namespace spconv::container_detail
