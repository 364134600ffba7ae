#include "io/matrix_file.hpp"

#include <cstring>
#include <fstream>

#include "convert/cpu/csr_coo.hpp"
#include "convert/graph.hpp"
#include "io/mtx.hpp"

namespace spconv {
namespace fs = std::filesystem;

file_kind detect_file_kind(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(errc::io, path.string() + ": cannot open for reading");
  if (fs::is_directory(path)) fail(errc::io, path.string() + ": is a directory");
  char magic[8] = {};
  in.read(magic, sizeof magic);
  if (in.gcount() >= 2 && static_cast<unsigned char>(magic[0]) == 0x1f && static_cast<unsigned char>(magic[1]) == 0x8b)
    return file_kind::mtx_gz;
  if (in.gcount() == 8 && std::memcmp(magic, "\x89HDF\r\n\x1a\n", 8) == 0) return file_kind::hdf5;
  return file_kind::mtx;
}

matrix_file read_matrix_file(const fs::path& path, const read_options& opt) {
  matrix_file out;
  if (detect_file_kind(path) == file_kind::hdf5) {
    const container_info info = read_container_info(path);
    out.meta = info.meta;
    out.matrix = read_container(path, opt.format);
    if (opt.values && *opt.values != value_type_of(out.matrix)) {
      convert_options co;
      co.values = opt.values;
      out.matrix = convert(out.matrix, format_name(out.matrix), co);
    }
    return out;
  }
  mtx_read_options mo;
  mo.values = opt.values.value_or(value_type::f64);
  mtx_data d = read_mtx(path, mo);
  out.meta.source_name = path.filename().string();
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", d.crc32);
  out.meta.source_checksum = std::string("crc32:") + crc;
  out.meta.source_symmetry = d.header.symmetry;
  out.matrix = opt.mtx_triplets ? std::move(d.matrix) : convert(d.matrix, "csr");
  return out;
}

static std::string lower_ext(const fs::path& p) {
  std::string e = p.extension().string();
  for (auto& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}
bool is_container_path(const fs::path& p) {
  auto e = lower_ext(p);
  return e == ".h5" || e == ".hdf5" || e == ".hdf";
}
bool is_mtx_path(const fs::path& p) { return lower_ext(p) == ".mtx"; }

void write_matrix_file(const fs::path& path, const std::vector<any_matrix>& formats, const container_meta& meta,
                       const write_options& opt) {
  if (is_container_path(path)) return write_container(path, formats, meta, opt);
  if (!is_mtx_path(path))
    fail(errc::usage, path.string() + ": unknown output kind (use .h5 for a container or .mtx for Matrix Market)");
  if (formats.size() != 1) fail(errc::usage, path.string() + ": a Matrix Market file holds one matrix");
  if (opt.add) fail(errc::usage, path.string() + ": --add needs a container (.h5) output");
  if (fs::exists(path) && !opt.force) fail(errc::usage, path.string() + " exists (use --force to replace it)");
  const auto name = format_name(formats[0]);
  if (name != "csr" && name != "coo")
    fail(errc::usage, path.string() + ": Matrix Market output holds csr or coo, not " + std::string(name));
  write_mtx(path, formats[0]);
}

}  // namespace spconv
