// Reading and writing a matrix whatever the file kind: the layer the CLI and the API
// share. Matrix Market input becomes canonical CSR; containers give the stored format.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "formats/any_matrix.hpp"
#include "io/hdf5/container.hpp"

namespace spconv {

enum class file_kind { mtx, mtx_gz, hdf5 };

// By the first bytes (gzip magic, HDF5 signature), not by the name. errc::io if unreadable.
file_kind detect_file_kind(const std::filesystem::path& path);

struct read_options {
  std::optional<value_type> values;  // MTX: value type to parse into (default double);
                                     // containers: cast after loading
  std::string format;                // container: the stored format to load ("" = csr if stored)
  bool mtx_triplets = false;         // MTX: return the COO triplets as read (file order,
                                     // duplicates kept) instead of canonical CSR, for a
                                     // COO -> CSR conversion elsewhere (e.g. on the GPU)
};

struct matrix_file {
  any_matrix matrix;
  container_meta meta;  // for MTX input: file name, crc32 checksum, symmetry
};

matrix_file read_matrix_file(const std::filesystem::path& path, const read_options& opt = {});

// Output kind by extension: .h5/.hdf5/.hdf -> container (several formats allowed);
// .mtx -> Matrix Market (one CSR or COO matrix). Anything else: errc::usage.
bool is_container_path(const std::filesystem::path& path);
bool is_mtx_path(const std::filesystem::path& path);
void write_matrix_file(const std::filesystem::path& path, const std::vector<any_matrix>& formats,
                       const container_meta& meta, const write_options& opt);

}  // namespace spconv
