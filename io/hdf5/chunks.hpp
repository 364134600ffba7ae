// A dataset's chunks as the file stores them, decoded by spconv's own code: the filters the
// container writes (shuffle, zstd, Fletcher32; specs/container.md, section 2). HDF5 may be
// entered by one thread at a time (h5::lock), so the device loader (io/hdf5/device_load.cpp)
// asks HDF5 only where each chunk is, reads the chunks' bytes itself and decodes them on many
// threads with these functions. They are plain host code, tested against HDF5's own filters
// (tests/test_container_chunks.cpp).
#pragma once
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

struct ZSTD_DCtx_s;  // zstd's decompression context (zstd.h: ZSTD_DCtx)

namespace spconv::h5 {

// Fletcher32 as HDF5's filter (H5Z_FILTER_FLETCHER32) defines it: the bytes read as
// big-endian 16-bit words (an odd last byte is the high byte of a last word), sum1 = the
// running sum of the words, sum2 = the running sum of sum1, both starting at 0 and folded to
// 16 bits with end-around carry ((x & 0xffff) + (x >> 16)); the checksum is
// (sum2 << 16) | sum1. A fold keeps a value modulo 65535 and keeps a positive value positive,
// so each final sum is its exact value modulo 65535, written 0xffff for a positive multiple
// of 65535 and 0 only when every word is 0. That is what this computes, in blocks the compiler
// vectorises and in any split of the input (HDF5's own fold points do not matter).
class fletcher32 {
 public:
  // Adds `bytes` bytes; every piece but the last must have an even length.
  void update(const void* data, std::size_t bytes);
  std::uint32_t value() const;

 private:
  std::uint64_t sum1_ = 0, sum2_ = 0;  // modulo 65535
  bool nonzero_ = false;
};

std::uint32_t fletcher32_of(const void* data, std::size_t bytes);

// Whether the 4 bytes HDF5 appended to a chunk (the checksum, little-endian) accept
// `computed` the way HDF5's reader does: equal, or equal with the two bytes of each 16-bit
// half swapped (what HDF5 before 1.6.3 wrote on little-endian machines).
bool fletcher32_matches(std::uint32_t computed, const unsigned char stored[4]);

// Why a chunk is refused by its Fletcher32 checksum, in the words every reader of spconv uses
// ("" when it is accepted): a chunk stored in fewer than the checksum's 4 bytes; a sum over
// the bytes before the stored checksum that does not match it.
std::string checksum_length_refusal(std::size_t stored_bytes);
std::string fletcher32_refusal(std::uint32_t computed, const unsigned char stored[4]);

// Undoes HDF5's shuffle filter (H5Z_FILTER_SHUFFLE) for elements [first, last) of a chunk of
// `elements` elements of `size` bytes: the filter stores byte j of element i at
// j * elements + i. Writes (last - first) * size bytes to `out`.
void unshuffle(const unsigned char* shuffled, std::size_t elements, std::size_t size, std::size_t first,
               std::size_t last, unsigned char* out);

// The position of each filter in a dataset's pipeline, -1 when absent. Position k is bit k
// of a chunk's filter mask, set when that filter was skipped for the chunk.
struct raw_filters {
  int shuffle = -1, zstd = -1, fletcher32 = -1;
};

inline bool applied(int position, unsigned filter_mask) {
  return position >= 0 && (filter_mask & (1u << position)) == 0;
}

// The dataset's pipeline when the decoder below handles all of it: any of shuffle (with its
// parameter, the element size, equal to `element_size`), zstd (id 32015) and Fletcher32, in
// that order. nullopt for any other filter, parameter or order: HDF5 decodes those.
std::optional<raw_filters> decodable_filters(hid_t dcpl, std::size_t element_size);

struct chunk_location {
  std::uint64_t first = 0;         // index of the chunk's first element
  std::uint64_t address = 0;       // of its stored bytes: the file offset when the file has no user block
  std::uint64_t stored_bytes = 0;  // after the filters
  unsigned filter_mask = 0;
};

// Every chunk of a 1-D chunked dataset of `elements` elements, `chunk_elements` per chunk,
// in element order (H5Dget_chunk_info_by_coord). nullopt when a chunk is not allocated:
// HDF5 reads such a chunk as the fill value, which only H5Dread provides.
std::optional<std::vector<chunk_location>> locate_chunks(hid_t dset, std::uint64_t elements,
                                                         std::uint64_t chunk_elements);

// The largest stored size a chunk of `chunk_bytes` bytes may have under its applied filters:
// what zstd's worst case and the checksum add. A larger size in the chunk index is a lie that
// must not size a buffer.
std::size_t max_stored_bytes(const raw_filters& f, unsigned filter_mask, std::size_t chunk_bytes);

// Checks and decompresses chunks; one per thread (it owns a zstd decompression context).
class chunk_decoder {
 public:
  chunk_decoder();
  ~chunk_decoder();
  chunk_decoder(const chunk_decoder&) = delete;
  chunk_decoder& operator=(const chunk_decoder&) = delete;

  // `stored` holds a chunk as the file stores it, `f` applied except the filters in
  // `filter_mask`. Checks the checksum, then writes the chunk's `chunk_bytes` bytes (still
  // shuffled when shuffle applied: see unshuffle) to `out`. Returns "" or why the chunk is
  // refused: a checksum mismatch, or the rules of the zstd filter (specs/container.md,
  // section 4: one frame exactly, recording its size, which is the chunk's), or a stored size
  // that does not fit the chunk.
  std::string decode(const raw_filters& f, unsigned filter_mask, const unsigned char* stored, std::size_t stored_bytes,
                     unsigned char* out, std::size_t chunk_bytes);

 private:
  ZSTD_DCtx_s* zstd_;
};

}  // namespace spconv::h5
