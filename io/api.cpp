#include "io/api.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "formats/instantiate.hpp"
#include "io/hdf5/device_load.hpp"
#include "io/hdf5/h5.hpp"

namespace spconv {
namespace fs = std::filesystem;
namespace {

bool holds(const any_matrix& m, std::string_view name, value_type vt, index_type it) {
  return format_name(m) == name && value_type_of(m) == vt && index_type_of(m) == it;
}

std::string describe_request(std::string_view name, value_type vt, index_type it) {
  return std::string(name) + " with " + std::string(to_string(vt)) + " values and " + std::string(to_string(it)) +
         " indices";
}

// The matrix of `path` as the any_matrix alternative (name, vt, it): loaded when the file
// holds it, else converted (read<Fmt>'s contract in io/api.hpp). Not a template, so that
// read<Fmt> instantiates nothing but a variant access.
any_matrix read_as(const fs::path& path, std::string_view name, value_type vt, index_type it,
                   const read_as_options& opt) {
  read_options ro;
  bool direct = false;  // the file holds the alternative: no conversion
  std::string held;     // what the file holds, for the refusal below
  if (detect_file_kind(path) == file_kind::hdf5) {
    const container_info info = read_container_info(path);
    std::string names;
    bool stored = false;
    for (const auto& f : info.formats) {
      names += (names.empty() ? "" : ", ") + f.name;
      stored = stored || f.name == name;
    }
    direct = stored && info.values == vt && info.index == it;
    // A conversion starts from the group read() picks: csr when stored (the hub: one
    // conversion step), else the first.
    if (direct) ro.format = std::string(name);
    held = "holds " + (names.empty() ? std::string("no format") : names) + " (" + std::string(to_string(info.values)) +
           " values, " + std::string(to_string(info.index)) + " indices)";
  } else {
    // Parsed straight into the value type asked for: decimal -> float rounds once, where
    // decimal -> double -> float could round twice.
    ro.values = vt;
    direct = name == "csr" && it == index_type::i32;
    held = "is a Matrix Market file (read as canonical csr with int32 indices)";
  }
  auto refuse = [&] {
    fail(errc::unsupported, path.string() + " " + held + ", not " + describe_request(name, vt, it) +
                                ", and conversion is disabled (read_as_options::allow_convert)");
  };
  if (!direct && !opt.allow_convert) refuse();
  any_matrix m = read_matrix_file(path, ro).matrix;
  if (holds(m, name, vt, it)) return m;
  // Only reached without `direct`, or when the file was replaced between the two reads.
  if (!opt.allow_convert) refuse();
  convert_options co = opt.conversion;
  co.values = vt;
  co.index = it;
  return convert(m, name, co);
}

}  // namespace

any_matrix read(const fs::path& path, const read_options& opt) { return read_matrix_file(path, opt).matrix; }

template <class Fmt>
Fmt read(const fs::path& path, const read_as_options& opt) {
  // read_as returns exactly this alternative (loaded or converted) or throws.
  return std::get<Fmt>(read_as(path, Fmt::name, value_type_of<typename Fmt::value_type>(),
                               index_type_of<typename Fmt::index_type>(), opt));
}

#ifdef SPCONV_HAVE_CUDA
namespace {

// The group `name` with these value and index types, loaded straight from the container into
// device memory (load_container_to_device: specs/container.md, "Loading to the device"), when
// `path` is a container that holds it; nullopt otherwise, and when the file was replaced by
// one without it between the two reads: then the host path decides.
std::optional<any_device_matrix> load_stored(const fs::path& path, std::string_view name, value_type vt,
                                             index_type it, gpu_context& ctx) {
  if (detect_file_kind(path) != file_kind::hdf5) return std::nullopt;
  const container_info info = read_container_info(path);
  const bool stored =
      std::any_of(info.formats.begin(), info.formats.end(), [&](const stored_format& f) { return f.name == name; });
  if (!stored || info.values != vt || info.index != it) return std::nullopt;
  any_device_matrix d = load_container_to_device(path, std::string(name), ctx);
  if (format_name(d) != name || value_type_of(d) != vt || index_type_of(d) != it) return std::nullopt;
  return d;
}

}  // namespace

// A container holding Fmt goes straight to the device; anything else (a conversion, a Matrix
// Market file) is the host read, then whole-array copies. The synchronous copies of to_device
// run on the legacy default stream, which ctx's blocking stream is ordered with, and the
// direct load synchronises ctx's stream: either way the matrix is complete for anything queued
// on ctx afterwards.
template <class Fmt>
with_space_t<Fmt, device> load(const fs::path& path, gpu_context& ctx, const read_as_options& opt) {
  if (auto d = load_stored(path, Fmt::name, value_type_of<typename Fmt::value_type>(),
                           index_type_of<typename Fmt::index_type>(), ctx))
    return std::get<with_space_t<Fmt, device>>(std::move(*d));
  return to_device(read<Fmt>(path, opt));
}

any_device_matrix load(const fs::path& path, gpu_context& ctx, const read_options& opt) {
  // A container's stored format as stored goes straight to the device, unless its values
  // are to be cast (read() converts them on the host).
  if (detect_file_kind(path) == file_kind::hdf5 && (!opt.values || *opt.values == read_container_info(path).values))
    return load_container_to_device(path, opt.format, ctx);
  return to_device(read(path, opt));
}
#endif

void write(const fs::path& path, const any_matrix& m, const write_options& opt, const container_meta& meta) {
  write_matrix_file(path, {m}, meta, opt);
}

void write(const fs::path& path, const std::vector<any_matrix>& formats, const write_options& opt,
           const container_meta& meta) {
  write_matrix_file(path, formats, meta, opt);
}

std::unique_lock<std::recursive_mutex> hdf5_lock() { return h5::lock(); }

// Every any_matrix alternative (formats/any_matrix.hpp): 2 x 2 csr and coo, 2 of each other
// format. A format added there is added here too, or this fails to compile.
static_assert(std::variant_size_v<any_matrix> == 2 * 4 + 6 * 2);
#ifdef SPCONV_HAVE_CUDA
#define SPCONV_API_LOAD(...) \
  template with_space_t<__VA_ARGS__, device> load<__VA_ARGS__>(const fs::path&, gpu_context&, const read_as_options&);
#else
#define SPCONV_API_LOAD(...)
#endif
#define SPCONV_API_FORMAT(...)                                                   \
  template __VA_ARGS__ read<__VA_ARGS__>(const fs::path&, const read_as_options&); \
  SPCONV_API_LOAD(__VA_ARGS__)
#define SPCONV_API_VI(V, I)    \
  SPCONV_API_FORMAT(csr<V, I>) \
  SPCONV_API_FORMAT(coo<V, I>)
#define SPCONV_API_V(V)        \
  SPCONV_API_FORMAT(cmrs<V>) \
  SPCONV_API_FORMAT(mbr<V>)  \
  SPCONV_API_FORMAT(csr5<V>) \
  SPCONV_API_FORMAT(bcsr<V>) \
  SPCONV_API_FORMAT(hyb<V>)  \
  SPCONV_API_FORMAT(ccoo<V>)
SPCONV_FOR_VALUE_INDEX(SPCONV_API_VI)
SPCONV_FOR_VALUE(SPCONV_API_V)

}  // namespace spconv
