// Matrix Market I/O (https://math.nist.gov/MatrixMarket/formats.html, and the format report
// "The Matrix Market Exchange Formats: Initial Design", Boisvert, Pozo, Remington, 1996).
// Split in the stages fast_matrix_market uses: header (io/mtx_header.cpp), chunking, body
// parsing and value conversion (io/mtx_read.cpp), writing (io/mtx_write.cpp).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "formats/any_matrix.hpp"

namespace spconv {

struct mtx_header {
  std::string format;    // "coordinate" or "array"
  std::string field;     // "real", "integer", "pattern" ("complex" is refused)
  std::string symmetry;  // "general", "symmetric", "skew-symmetric", "hermitian"
  std::int64_t rows = 0, cols = 0;
  std::int64_t entries = 0;       // stored entries the file declares (array: values stored)
  std::int64_t header_lines = 0;  // lines up to and including the size line
};

struct mtx_read_options {
  value_type values = value_type::f64;
  // int32 unless the matrix needs more (rows or cols beyond 2^31-1, or an expanded nnz
  // that may exceed it: for symmetric files the bound 2 * entries decides, as the count of
  // diagonal entries is only known after parsing), then int64. Forcing int32 on a matrix
  // that does not fit is an errc::unsupported error.
  bool force_index = false;
  index_type index = index_type::i32;
};

struct mtx_data {
  mtx_header header;
  any_matrix matrix;         // COO: the stored entries in file order, then (symmetric,
                             // skew-symmetric, hermitian) the mirrored off-diagonal entries
                             // in file order; duplicates kept
  std::uint32_t crc32 = 0;   // zlib crc32 of the file's bytes as stored (compressed for .gz)
  std::uint64_t file_bytes = 0;
};

// Reads .mtx or .mtx.gz (detected by the gzip magic bytes, not the name). Array files give
// every stored value as a COO entry (zeros included). Body lines may be blank or comments.
// Errors are spconv::error: errc::bad_input for malformed content ("FILE:LINE: what was
// expected"), errc::unsupported for complex values or an object other than 'matrix'
// ("FILE:1: ..."), errc::io when the file cannot be opened or read ("FILE: ...").
mtx_data read_mtx(const std::filesystem::path& path, const mtx_read_options& opt = {});

// Reads the header only (banner, comments, size line), stopping after the size line.
// Array files report entries as the count of stored values.
mtx_header read_mtx_header(const std::filesystem::path& path);

// Writes CSR or COO as "matrix coordinate real general" with values in the shortest form
// that reads back to the same bits (std::to_chars); NaN is written "nan"/"-nan", so a NaN
// payload comes back as the default quiet NaN of that sign. Written to a temporary file
// ".NAME.tmp*" in the target directory, fsync'd and renamed into place; on failure the
// temporary is removed and an errc::io error names the file. Other formats: errc::usage.
void write_mtx(const std::filesystem::path& path, const any_matrix& m);

}  // namespace spconv
