// The spconv HDF5 container, version 1. specs/container.md is the contract; "section N"
// below refers to it. Nothing here knows a particular format: groups, datasets and
// attributes all come from each format's name, version, for_each_array and
// for_each_param, and the C++ type to read into is picked among any_matrix's
// alternatives by name, value type and index type.
#include "io/hdf5/container.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "io/atomic_file.hpp"
#include "io/hdf5/container_read.hpp"
#include "io/hdf5/h5.hpp"
#include "io/hdf5/zstd_filter.hpp"
#include "io/physical_memory.hpp"

namespace spconv {
namespace fs = std::filesystem;
namespace {

using namespace container_detail;

constexpr hsize_t chunk_elements = hsize_t{1} << 20;
constexpr int zstd_max_level = 22;

std::int64_t nnz_of(const any_matrix& m) {
  return std::visit([](const auto& x) { return x.nnz(); }, m);
}

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

// ---- section 1: the root ----------------------------------------------------------------

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

// ---- section 2: the groups (reading: the checks are container_read's) ---------------------

// One dataset into `arr`: every check of section 2 (open_dataset), then read. `held` counts the
// bytes of the format's arrays read so far: they are all kept, so their sum is refused before
// allocating once it passes the machine's memory (a few-KB file with a compressed or never
// written dataset can declare billions of elements).
template <class T, class A>
void read_array(const source& s, hid_t group, const std::string& gobj, const std::string& rel, A& arr,
                std::int64_t limit, double& held) {
  const checked_dataset d = open_dataset<T>(s, group, gobj, rel, limit);
  held += static_cast<double>(d.elements) * sizeof(T);
  if (held > physical_memory_bytes())
    s.lie(gobj + "/" + rel, "has " + std::to_string(d.elements) + " elements: the format's arrays need " +
                                gigabytes(held) + ", more than this machine's " + gigabytes(physical_memory_bytes()) +
                                " of memory");
  arr.resize(d.elements);
  if (d.elements > 0)
    h5::check(H5Dread(d.dataset, h5::native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, arr.data()),
              gobj + "/" + rel + ": reading");
}

template <class Fmt>
Fmt read_format(const source& s, hid_t file, const container_info& info) {
  const std::string obj = "/" + std::string(Fmt::name);
  Fmt m;
  auto group = open_format(s, file, info, m);
  const std::int64_t limit = container_array_cap(info.nnz, info.rows);
  double held = 0;
  Fmt::for_each_array(m, [&](std::string_view rel, auto& arr) {
    read_array<element_t<decltype(arr)>>(s, group, obj, std::string(rel), arr, limit, held);
  });
  check_contents(s, obj, m, info.nnz, read_binsparse(s, group, obj));
  return m;
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
//
// The file is written in the HDF5 1.10 file format (specs/container.md, "HDF5 file format"):
// its superblock, object headers, link and attribute heaps and chunk indexes all carry
// checksums, which HDF5 verifies on reading. HDF5's default, the 1.0 format, has none, and
// libhdf5 parses damaged metadata of such files out of bounds (fuzzing found reads past a
// buffer in H5Aexists); with the checksums a damaged block is an error instead.
h5::handle create_temporary(const atomic_file& tmp) {
  auto fapl = h5::own_plist(H5Pcreate(H5P_FILE_ACCESS), tmp.target().string() + ": file access properties");
  h5::check(H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110),
            tmp.target().string() + ": HDF5 1.10 file format");
  const hid_t id = H5Fcreate(tmp.path().c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl);
  if (id < 0)
    fail(errc::io, tmp.target().string() + ": cannot create the temporary file " + tmp.path().string() + " (" +
                       h5::innermost_error() + ")");
  return h5::handle(id, H5Fclose);
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

  // Step 2: the target. HDF5 from here on: the checks above (validate() is a pass over
  // every array) ran without the library lock, so concurrent writers only queue for the
  // HDF5 part, which also compresses.
  const auto held = h5::lock();
  h5::quiet_errors quiet;
  h5::register_zstd_filter();
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

void quiet_hdf5_errors() {
  const auto held = h5::lock();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

container_info read_container_info(const fs::path& path) {
  const auto held = h5::lock();
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
  // Held for the whole read: decompression runs inside H5Dread, and read_format's
  // validate() sits between HDF5 calls on the open file (the binsparse check follows it).
  const auto held = h5::lock();
  h5::quiet_errors quiet;
  h5::register_zstd_filter();
  const source s{path.string()};
  try {
    h5::handle file = open_for_read(s);
    const container_info info = read_info(s, file);
    const std::string name = choose_format(s, info, format);
    std::optional<any_matrix> m;
    visit_alternative(info, name, [&]<class Fmt>(std::type_identity<Fmt>) { m.emplace(read_format<Fmt>(s, file, info)); });
    if (!m) refuse_unbuilt(s, info, name);
    return std::move(*m);
  } catch (const h5::failure& f) {
    fail(errc::bad_input, s.path + ": " + f.what());
  }
}

}  // namespace spconv
