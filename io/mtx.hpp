// Matrix Market I/O (https://math.nist.gov/MatrixMarket/formats.html).
// Split as fast_matrix_market does: header, chunking, body parsing, value conversion.
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
  // int32 unless the matrix needs more (rows, cols or expanded nnz beyond 2^31-1),
  // then int64; forcing int32 on such a matrix is an error.
  bool force_index = false;
  index_type index = index_type::i32;
};

struct mtx_data {
  mtx_header header;
  any_matrix matrix;         // COO in file order, symmetry expanded (duplicates kept)
  std::uint32_t crc32 = 0;   // of the file's bytes as stored (compressed bytes for .gz)
  std::uint64_t file_bytes = 0;
};

// Reads .mtx or .mtx.gz (detected by the gzip magic, not the name). Every error is an
// spconv::error (bad_input / unsupported / io) whose message starts "FILE:LINE: ".
mtx_data read_mtx(const std::filesystem::path& path, const mtx_read_options& opt = {});

// Reads the header only (banner, comments, size line).
mtx_header read_mtx_header(const std::filesystem::path& path);

// Writes CSR or COO as "matrix coordinate real general" with values printed so that
// read_mtx gives back the same bits (shortest round-trip form). Written to a
// temporary file in the target directory and renamed into place.
void write_mtx(const std::filesystem::path& path, const any_matrix& m);

}  // namespace spconv
