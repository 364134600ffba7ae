// The spconv HDF5 container, version 1 (specs/container.md is the contract).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "formats/any_matrix.hpp"

namespace spconv {

// Root attributes beyond the shape and types, which come from the matrices themselves.
struct container_meta {
  std::string source_name;      // file name the matrix came from ("" if none)
  std::string source_checksum;  // e.g. "crc32:1a2b3c4d" ("" if none)
  std::string source_symmetry;  // general / symmetric / skew-symmetric / hermitian
  std::string creator;          // "spconv <version>", filled in by write_container if empty
};

struct compression {
  bool zstd = true;
  int level = 3;  // 1..22
};
compression parse_compression(const std::string& s);  // "none", "zstd", "zstd:LEVEL"

struct write_options {
  compression comp;
  bool add = false;    // keep the groups already in `path` (same matrix) and add/replace these
  bool force = false;  // allowed to replace an existing file
};

// Writes every matrix (all of the same shape, value and index type) as one group each.
// Atomic: written to a temporary file beside `path`, renamed into place at the end.
void write_container(const std::filesystem::path& path, const std::vector<any_matrix>& formats,
                     const container_meta& meta, const write_options& opt);

struct stored_format {
  std::string name;
  int version = 0;
  std::uint64_t raw_bytes = 0;     // sum of dataset sizes uncompressed
  std::uint64_t stored_bytes = 0;  // sum of dataset storage sizes on disk
};

struct container_info {
  std::int64_t rows = 0, cols = 0, nnz = 0;
  value_type values = value_type::f64;
  index_type index = index_type::i32;
  int container_version = 0;
  container_meta meta;
  std::vector<stored_format> formats;
};

// Turns HDF5's automatic error printing off for the whole process: for programs that report
// every HDF5 failure through spconv's errors (the spconv tool). spconv's calls silence it
// anyway while they run and restore the caller's handler afterwards; but HDF5 1.10 fails
// internally while shutting down after it has read a damaged metadata block, and with a
// handler set it then prints "HDF5: infinite loop closing library" at exit.
void quiet_hdf5_errors();

// Root attributes and the list of groups, checked but without reading arrays.
container_info read_container_info(const std::filesystem::path& path);

// Reads one stored format (or, if `format` is empty, the CSR group if present, else the
// first one), checking every attribute and array size before allocating and validating
// the result before returning it.
any_matrix read_container(const std::filesystem::path& path, const std::string& format = "");

}  // namespace spconv
