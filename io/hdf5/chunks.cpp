#include "io/hdf5/chunks.hpp"

#include <zstd.h>

#include <cstring>
#include <new>

#include "io/hdf5/h5.hpp"
#include "io/hdf5/zstd_filter.hpp"

namespace spconv::h5 {
namespace {

constexpr std::uint64_t modulus = 65535;

// Words per block: with 32-bit lanes, sum(words) <= 256 * 65535 and the weighted sum
// sum((256 - i) * word_i) <= 65535 * 256 * 257 / 2 < 2^32, so a block never overflows.
constexpr std::size_t block_words = 256;
// The bulk of the input goes in wide blocks of 16 interleaved running sums (lanes), 256 words
// each, held in 4 x 32-bit vectors: only shifts, masks and additions, which every x86-64 has
// (SSE2 has no 32-bit multiply, which the weighted sum of the narrow blocks needs). Each lane's
// sums stay below 2^32 for the same reason as above (256 steps). GCC/Clang vector extensions.
typedef std::uint32_t u32x4 __attribute__((vector_size(16)));
constexpr std::size_t lanes = 16;
constexpr std::size_t lane_steps = 256;
constexpr std::size_t wide_words = lanes * lane_steps;

// The big-endian 16-bit word at p (Fletcher32 in HDF5 reads words most significant byte first).
inline std::uint32_t be_word(const unsigned char* p) { return (std::uint32_t{p[0]} << 8) | p[1]; }

template <std::size_t S>
void unshuffle_fixed(const unsigned char* src, std::size_t elements, std::size_t first, std::size_t last,
                     unsigned char* out) {
  // S known at compile time: the inner loop unrolls into S loads from S streams and one
  // S-byte store, several times faster than the run-time-size loop below.
  for (std::size_t i = first; i < last; ++i)
    for (std::size_t j = 0; j < S; ++j) out[(i - first) * S + j] = src[j * elements + i];
}

}  // namespace

void fletcher32::update(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t words = bytes / 2;
  std::uint64_t s1 = sum1_, s2 = sum2_;
  std::uint32_t any = 0;
  while (words >= wide_words) {
    // Per step 32 bytes = 16 words, loaded as two vectors of four little-endian 32-bit values,
    // each holding two big-endian words: the even words (0, 2, 4, 6 of a vector) and the odd
    // ones are separate lanes. Lane j sums words j, j + 16, ...: after M = 256 steps s1[j] =
    // sum_m w(m, j) and s2[j] = sum_m (M - m) w(m, j). Word i = 16 m + j of the block has
    // weight wide_words - i = 16 (M - m) - j in sum2, so b = sum_j (16 s2[j] - j s1[j]).
    u32x4 s1v[4] = {}, s2v[4] = {}, anyv = {};
    for (std::size_t m = 0; m < lane_steps; ++m) {
      u32x4 x[2];
      std::memcpy(x, p + 32 * m, 32);
      const u32x4 w[4] = {((x[0] << 8) & 0xff00) | ((x[0] >> 8) & 0xff), ((x[0] >> 8) & 0xff00) | (x[0] >> 24),
                          ((x[1] << 8) & 0xff00) | ((x[1] >> 8) & 0xff), ((x[1] >> 8) & 0xff00) | (x[1] >> 24)};
      for (int v = 0; v < 4; ++v) {
        s1v[v] += w[v];
        s2v[v] += s1v[v];
      }
      anyv |= x[0] | x[1];
    }
    std::uint64_t a = 0, b = 0;
    for (int v = 0; v < 4; ++v)
      for (int k = 0; k < 4; ++k) {
        // Vector v holds the even (v = 0, 2) or odd (v = 1, 3) words of the first (v < 2) or
        // second half of the step: lane j = 8 (v / 2) + 2 k + v % 2.
        const std::uint64_t j = 8 * (v / 2) + 2 * k + v % 2;
        a += s1v[v][k];
        b += lanes * std::uint64_t{s2v[v][k]} - j * std::uint64_t{s1v[v][k]};
        any |= anyv[k];
      }
    s2 = (s2 + wide_words * s1 + b) % modulus;
    s1 = (s1 + a) % modulus;
    p += 2 * wide_words;
    words -= wide_words;
  }
  while (words > 0) {
    const std::size_t n = words < block_words ? words : block_words;
    // Over one block of n words, sum1 grows by a = sum(w_i) and sum2 by n * sum1 + b, with
    // b = sum((n - i) * w_i) (i from 0): each word enters sum2 once per later prefix.
    std::uint32_t a = 0, b = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t w = be_word(p + 2 * i);
      a += w;
      b += w * static_cast<std::uint32_t>(n - i);
      any |= w;
    }
    s2 = (s2 + n * s1 + b) % modulus;
    s1 = (s1 + a) % modulus;
    p += 2 * n;
    words -= n;
  }
  if (bytes % 2 == 1) {  // the last byte, high half of a last word
    const std::uint32_t w = std::uint32_t{*p} << 8;
    s1 = (s1 + w) % modulus;
    s2 = (s2 + s1) % modulus;
    any |= w;
  }
  sum1_ = s1;
  sum2_ = s2;
  nonzero_ = nonzero_ || any != 0;
}

std::uint32_t fletcher32::value() const {
  if (!nonzero_) return 0;
  const auto fold = [](std::uint64_t s) { return static_cast<std::uint32_t>(s == 0 ? modulus : s); };
  return (fold(sum2_) << 16) | fold(sum1_);
}

std::uint32_t fletcher32_of(const void* data, std::size_t bytes) {
  fletcher32 f;
  f.update(data, bytes);
  return f.value();
}

bool fletcher32_matches(std::uint32_t computed, const unsigned char stored[4]) {
  const std::uint32_t s = std::uint32_t{stored[0]} | std::uint32_t{stored[1]} << 8 | std::uint32_t{stored[2]} << 16 |
                          std::uint32_t{stored[3]} << 24;
  const std::uint32_t swapped = ((computed & 0x00ff00ffu) << 8) | ((computed >> 8) & 0x00ff00ffu);
  return s == computed || s == swapped;
}

void unshuffle(const unsigned char* shuffled, std::size_t elements, std::size_t size, std::size_t first,
               std::size_t last, unsigned char* out) {
  switch (size) {
    case 1: std::memcpy(out, shuffled + first, last - first); return;
    case 2: unshuffle_fixed<2>(shuffled, elements, first, last, out); return;
    case 4: unshuffle_fixed<4>(shuffled, elements, first, last, out); return;
    case 8: unshuffle_fixed<8>(shuffled, elements, first, last, out); return;
    default:
      for (std::size_t i = first; i < last; ++i)
        for (std::size_t j = 0; j < size; ++j) out[(i - first) * size + j] = shuffled[j * elements + i];
  }
}

std::string checksum_length_refusal(std::size_t stored_bytes) {
  return stored_bytes < 4 ? "stored as " + std::to_string(stored_bytes) + " bytes, too short for its checksum" : "";
}

std::string fletcher32_refusal(std::uint32_t computed, const unsigned char stored[4]) {
  return fletcher32_matches(computed, stored) ? "" : "Fletcher32 checksum mismatch (the stored bytes are corrupted)";
}

std::optional<raw_filters> decodable_filters(hid_t dcpl, std::size_t element_size) {
  const int count = H5Pget_nfilters(dcpl);
  if (count < 0) raise("reading the filter pipeline");
  raw_filters f;
  int previous = -1;  // rank of the previous filter: shuffle 0, zstd 1, Fletcher32 2
  for (int i = 0; i < count; ++i) {
    unsigned flags = 0, values[8] = {};
    std::size_t n = 8;
    const H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &n, values, 0, nullptr, nullptr);
    if (id < 0) raise("reading the filter pipeline");
    int rank = 0;
    if (id == H5Z_FILTER_SHUFFLE) {
      // HDF5 shuffles by its parameter, which set_local makes the element size; the
      // decoder unshuffles whole elements of the dataset's type.
      if (n != 1 || values[0] != element_size) return std::nullopt;
      f.shuffle = i;
      rank = 0;
    } else if (id == zstd_filter_id) {
      f.zstd = i;
      rank = 1;
    } else if (id == H5Z_FILTER_FLETCHER32) {
      f.fletcher32 = i;
      rank = 2;
    } else {
      return std::nullopt;
    }
    if (rank <= previous) return std::nullopt;
    previous = rank;
  }
  return f;
}

std::optional<std::vector<chunk_location>> locate_chunks(hid_t dset, std::uint64_t elements,
                                                         std::uint64_t chunk_elements) {
  std::vector<chunk_location> out;
  if (elements == 0) return out;
  const std::uint64_t count = (elements - 1) / chunk_elements + 1;
  out.reserve(count);
  for (std::uint64_t k = 0; k < count; ++k) {
    hsize_t offset = k * chunk_elements;
    unsigned mask = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t size = 0;
    if (H5Dget_chunk_info_by_coord(dset, &offset, &mask, &address, &size) < 0)
      raise("locating chunk " + std::to_string(k));
    if (address == HADDR_UNDEF) return std::nullopt;
    out.push_back({offset, address, size, mask});
  }
  return out;
}

std::size_t max_stored_bytes(const raw_filters& f, unsigned filter_mask, std::size_t chunk_bytes) {
  const std::size_t checksum = applied(f.fletcher32, filter_mask) ? 4 : 0;
  return (applied(f.zstd, filter_mask) ? ZSTD_compressBound(chunk_bytes) : chunk_bytes) + checksum;
}

chunk_decoder::chunk_decoder() : zstd_(ZSTD_createDCtx()) {
  if (!zstd_) throw std::bad_alloc();
}

chunk_decoder::~chunk_decoder() { ZSTD_freeDCtx(zstd_); }

std::string chunk_decoder::decode(const raw_filters& f, unsigned filter_mask, const unsigned char* stored,
                                  std::size_t stored_bytes, unsigned char* out, std::size_t chunk_bytes) {
  std::size_t body = stored_bytes;
  // Fletcher32 is the last filter: it covers the bytes as stored, so corruption is found
  // before decompression (specs/container.md, section 2).
  if (applied(f.fletcher32, filter_mask)) {
    if (std::string why = checksum_length_refusal(body); !why.empty()) return why;
    body -= 4;
    if (std::string why = fletcher32_refusal(fletcher32_of(stored, body), stored + body); !why.empty()) return why;
  }
  if (!applied(f.zstd, filter_mask)) {
    if (body != chunk_bytes)
      return "stored as " + std::to_string(body) + " bytes, the chunk holds " + std::to_string(chunk_bytes);
    std::memcpy(out, stored, body);
    return "";
  }
  // The zstd filter's rules (specs/container.md, section 4), with cd_values[1] = chunk_bytes
  // (checked on the dataset before any chunk is read).
  const unsigned long long size = ZSTD_getFrameContentSize(stored, body);
  if (size == ZSTD_CONTENTSIZE_ERROR) return "zstd: the chunk is not a zstd frame";
  if (size == ZSTD_CONTENTSIZE_UNKNOWN) return "zstd: the frame does not record its decompressed size";
  if (size != chunk_bytes)
    return "zstd: the frame decodes to " + std::to_string(size) + " bytes, the chunk holds " + std::to_string(chunk_bytes);
  const std::size_t framed = ZSTD_findFrameCompressedSize(stored, body);
  if (ZSTD_isError(framed)) return std::string("zstd: truncated or corrupt frame (") + ZSTD_getErrorName(framed) + ")";
  if (framed != body) return "zstd: the chunk holds bytes beyond its zstd frame";
  const std::size_t got = ZSTD_decompressDCtx(zstd_, out, chunk_bytes, stored, body);
  if (ZSTD_isError(got)) return std::string("zstd: corrupt frame (") + ZSTD_getErrorName(got) + ")";
  if (got != chunk_bytes) return "zstd: the frame decodes to fewer bytes than it records";
  return "";
}

}  // namespace spconv::h5
