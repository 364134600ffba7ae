// The zstd filter callback and its in-process registration. Buffers handed to and
// returned from a filter belong to the HDF5 library, hence H5allocate_memory /
// H5free_memory rather than malloc/free (HDF5 may be built with its own allocator).
#include "io/hdf5/zstd_filter.hpp"

#include <zstd.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "formats/error.hpp"
#include "io/hdf5/h5.hpp"

namespace spconv::h5 {
namespace {

// HDF5 1.10 limits a chunk to 2^32 - 1 bytes; a frame claiming more is a lie, and
// trusting it would allocate without bound.
constexpr unsigned long long max_chunk_bytes = 0xFFFFFFFFull;

// Reports why the filter failed; HDF5 adds its own "filter returned failure" above it.
std::size_t failed(const char* why, const char* detail = nullptr) {
  std::string msg = std::string("zstd filter: ") + why;
  if (detail) msg += std::string(": ") + detail;
  H5Epush2(H5E_DEFAULT, __FILE__, "zstd_filter", __LINE__, H5E_ERR_CLS, H5E_PLINE, H5E_CANTFILTER, "%s",
           msg.c_str());
  return 0;
}

// cd_values[1], when present, is the chunk's size in bytes (set_local below): HDF5 1.10
// does not check a filter's output size, and a frame shorter than the chunk would leave
// the rest of the chunk buffer undefined.
std::size_t decompress(std::size_t cd_nelmts, const unsigned cd_values[], std::size_t nbytes, std::size_t* buf_size,
                       void** buf) {
  const void* src = *buf;
  const unsigned long long size = ZSTD_getFrameContentSize(src, nbytes);
  if (size == ZSTD_CONTENTSIZE_ERROR) return failed("the chunk is not a zstd frame");
  if (size == ZSTD_CONTENTSIZE_UNKNOWN) return failed("the frame does not record its decompressed size");
  if (size > max_chunk_bytes) return failed("the frame claims more than 4 GiB, beyond any HDF5 chunk");
  // One frame exactly: trailing bytes would be a second frame or garbage, both foreign
  // to the public plugin's layout.
  const std::size_t framed = ZSTD_findFrameCompressedSize(src, nbytes);
  if (ZSTD_isError(framed)) return failed("truncated or corrupt frame", ZSTD_getErrorName(framed));
  if (framed != nbytes) return failed("the chunk holds bytes beyond its zstd frame");
  if (cd_nelmts >= 2 && size != cd_values[1])
    return failed("the frame decodes to a size other than the chunk's",
                  (std::to_string(size) + " bytes, the chunk holds " + std::to_string(cd_values[1])).c_str());

  const std::size_t n = static_cast<std::size_t>(size);
  void* out = H5allocate_memory(n > 0 ? n : 1, false);
  if (!out) return failed("out of memory");
  const std::size_t got = ZSTD_decompress(out, n, src, nbytes);
  if (ZSTD_isError(got) || got != n) {
    H5free_memory(out);
    return failed("corrupt frame", ZSTD_isError(got) ? ZSTD_getErrorName(got) : "decoded size differs from the frame's");
  }
  H5free_memory(*buf);
  *buf = out;
  *buf_size = n > 0 ? n : 1;
  return got;
}

std::size_t compress(std::size_t cd_nelmts, const unsigned cd_values[], std::size_t nbytes, std::size_t* buf_size,
                     void** buf) {
  // Levels are stored as unsigned; the cast keeps zstd's negative (fast) levels usable.
  const int level = cd_nelmts > 0 ? static_cast<int>(cd_values[0]) : ZSTD_CLEVEL_DEFAULT;
  const std::size_t bound = ZSTD_compressBound(nbytes);
  void* out = H5allocate_memory(bound, false);
  if (!out) return failed("out of memory");
  const std::size_t n = ZSTD_compress(out, bound, *buf, nbytes, level);
  if (ZSTD_isError(n)) {
    H5free_memory(out);
    return failed("compression failed", ZSTD_getErrorName(n));
  }
  H5free_memory(*buf);
  *buf = out;
  *buf_size = bound;
  return n;
}

// Called by H5Dcreate: records the chunk's byte size as cd_values[1], after the level.
herr_t set_local(hid_t dcpl, hid_t type, hid_t) {
  hsize_t dims[H5S_MAX_RANK];
  const int rank = H5Pget_chunk(dcpl, H5S_MAX_RANK, dims);
  if (rank < 0) return -1;
  unsigned long long bytes = H5Tget_size(type);
  for (int d = 0; d < rank; ++d) bytes *= dims[d];
  if (bytes == 0 || bytes > max_chunk_bytes) {
    failed("chunks must hold 1 byte to 4 GiB - 1");
    return -1;
  }
  unsigned flags = 0;
  std::size_t n = 2;
  unsigned values[2] = {static_cast<unsigned>(ZSTD_CLEVEL_DEFAULT), 0};
  if (H5Pget_filter_by_id2(dcpl, zstd_filter_id, &flags, &n, values, 0, nullptr, nullptr) < 0) return -1;
  const unsigned out[2] = {n >= 1 ? values[0] : static_cast<unsigned>(ZSTD_CLEVEL_DEFAULT), static_cast<unsigned>(bytes)};
  return H5Pmodify_filter(dcpl, zstd_filter_id, flags, 2, out);
}

}  // namespace

std::size_t zstd_filter(unsigned flags, std::size_t cd_nelmts, const unsigned cd_values[], std::size_t nbytes,
                        std::size_t* buf_size, void** buf) {
  if (flags & H5Z_FLAG_REVERSE) return decompress(cd_nelmts, cd_values, nbytes, buf_size, buf);
  return compress(cd_nelmts, cd_values, nbytes, buf_size, buf);
}

const H5Z_class2_t zstd_filter_class = {
    H5Z_CLASS_T_VERS,
    zstd_filter_id,
    1,  // encoder present
    1,  // decoder present
    "zstd (spconv); https://github.com/facebook/zstd",
    nullptr,  // can_apply: any type, any chunk
    set_local,
    zstd_filter,
};

void register_zstd_filter() {
  // The library lock first, then the once flag: a caller already holding the lock (every
  // container call does) and one that does not can never wait on each other in reverse.
  const auto held = lock();
  static std::once_flag once;
  std::call_once(once, [] {
    if (H5Zregister(&zstd_filter_class) < 0)
      fail(errc::io, "HDF5 refused to register the zstd filter (id " + std::to_string(zstd_filter_id) + ")");
  });
}

}  // namespace spconv::h5
