// CSR5 (Weifeng Liu's PhD thesis, liu-thesis-csr5.txt ch. 6.3; SpMV ch. 8.5): the CSR
// nonzeros cut, in CSR order, into 2D tiles of omega lanes x sigma entries. Lane i of tile
// t holds the sigma consecutive CSR entries t*omega*sigma + i*sigma + j (j = 0..sigma-1),
// and col_idx/values of every complete tile are transposed in place so that step j of all
// lanes is contiguous (sec. 6.3.1). The CSR row_ptr is kept as is. Per tile:
//   tile_ptr  the row of the tile's first entry; its bit 31 (the thesis's "negative" sign,
//             sec. 6.3.3, Algorithm 24) marks tiles that span empty rows;
//   tile_desc per lane the bit fields y_offset, seg_offset and bit_flag (sec. 6.3.4-6.3.5),
//             packed into 32-bit words (layout below);
//   tile_desc_offset(_ptr)  the empty_offset array of every tile whose tile_ptr has bit 31
//             set: the row of each segment relative to tile_ptr (Algorithm 26).
// The last nnz % (omega*sigma) entries (the incomplete tile) stay in CSR order and have no
// tile_desc; SpMV handles them CSR-style (sec. 8.5.1). See specs/formats/csr5.md.
#pragma once
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "formats/format.hpp"

namespace spconv {

// omega: tile width (SIMD lanes on a CPU, threads of a warp on a GPU); sigma: tile height
// (entries per lane). Stored values are in [1, 64]; 0 in a conversion request means
// "choose automatically" (cpu::resolve_csr5_params, thesis sec. 6.3.2).
struct csr5_params {
  std::int32_t omega = 0;
  std::int32_t sigma = 0;

  template <class Self, class F>
  static void for_each_param(Self& p, F&& f) {
    f("omega", p.omega);
    f("sigma", p.sigma);
  }
};

// The processor the automatic omega/sigma are chosen for (thesis sec. 6.3.2 tunes them per
// processor). Not a stored parameter: the layout is fully described by omega and sigma, and
// any kernel can run a file made for the other target. Stored files default to gpu.
enum class csr5_target { gpu, cpu };

// omega <= 64: the widest SIMD unit the thesis targets (AMD GPUs, sec. 6.3.2);
// sigma <= 64: a lane's bit_flag then fits one 64-bit register.
inline constexpr std::int32_t csr5_max_omega = 64;
inline constexpr std::int32_t csr5_max_sigma = 64;

// tile_ptr: bit 31 is the thesis's sign (sec. 6.3.3: an unsigned type so that "-0" exists),
// the other 31 bits the row index.
inline constexpr std::uint32_t csr5_empty_rows_bit = 0x80000000u;
inline constexpr std::uint32_t csr5_row_mask = 0x7fffffffu;

// ceil(log2(n)) for n >= 1: the field widths of sec. 6.3.5.
constexpr int csr5_ceil_log2(std::int64_t n) {
  int b = 0;
  while ((std::int64_t{1} << b) < n) ++b;
  return b;
}

// The bit layout of one lane's descriptor (thesis sec. 6.3.5). The three fields are
// concatenated from bit 0 upwards in the thesis's order:
//   y_offset   ceil(log2(omega*sigma)) bits   at bit 0
//   seg_offset ceil(log2(omega)) bits         next
//   bit_flag   sigma bits (bit j = entry j)   next
// and this bit string is cut into `words` 32-bit words. The thesis's example (omega 32,
// sigma 16: 9 + 5 + 16 = 30 bits) needs one word per lane; larger tiles continue in further
// words. Word w of lane i of tile t is tile_desc[(t * words + w) * omega + i], so that the
// omega lanes read each word plane contiguously (coalesced on a GPU). Bits above the
// fields are zero.
struct csr5_layout {
  int omega = 1, sigma = 1;
  int y_offset_bits = 0, seg_offset_bits = 0, words = 1;

  constexpr csr5_layout(int omega_, int sigma_)
      : omega(omega_),
        sigma(sigma_),
        y_offset_bits(csr5_ceil_log2(std::int64_t{omega_} * sigma_)),
        seg_offset_bits(csr5_ceil_log2(omega_)),
        words((y_offset_bits + seg_offset_bits + sigma_ + 31) / 32) {}

  constexpr int seg_offset_pos() const { return y_offset_bits; }
  constexpr int bit_flag_pos() const { return y_offset_bits + seg_offset_bits; }
  constexpr int used_bits() const { return y_offset_bits + seg_offset_bits + sigma; }
  constexpr std::int64_t tile_size() const { return std::int64_t{omega} * sigma; }
  constexpr std::int64_t tile_words() const { return std::int64_t{words} * omega; }

  // Where CSR entry k lives in col_idx/values: transposed inside the complete tiles
  // (sec. 6.3.1), unchanged in the incomplete last tile.
  constexpr std::int64_t stored_pos(std::int64_t k, std::int64_t complete_tiles) const {
    const std::int64_t t = k / tile_size();
    if (t >= complete_tiles) return k;
    const std::int64_t local = k - t * tile_size();
    return t * tile_size() + (local % sigma) * omega + local / sigma;
  }
};

// Bits [pos, pos + width) (width <= 64) of one lane's descriptor bit string, whose words
// are lane[0], lane[stride], lane[2 * stride], ... (stride = omega).
inline std::uint64_t csr5_get_bits(const std::uint32_t* lane, std::int64_t stride, int pos, int width) {
  std::uint64_t v = 0;
  for (int got = 0; got < width;) {
    const int p = pos + got, bit = p % 32;
    const int take = (32 - bit < width - got) ? 32 - bit : width - got;
    const std::uint64_t chunk = (std::uint64_t{lane[(p / 32) * stride]} >> bit) & ((std::uint64_t{1} << take) - 1);
    v |= chunk << got;
    got += take;
  }
  return v;
}

// ORs v (< 2^width) into bits [pos, pos + width) of one lane's descriptor.
inline void csr5_put_bits(std::uint32_t* lane, std::int64_t stride, int pos, int width, std::uint64_t v) {
  for (int put = 0; put < width;) {
    const int p = pos + put, bit = p % 32;
    const int take = (32 - bit < width - put) ? 32 - bit : width - put;
    const std::uint64_t chunk = (v >> put) & ((std::uint64_t{1} << take) - 1);
    lane[(p / 32) * stride] |= static_cast<std::uint32_t>(chunk << bit);
    put += take;
  }
}

template <class V, class I = std::int32_t, class Space = host>
struct csr5 {
  static_assert(std::is_same_v<I, std::int32_t>, "csr5 uses 32-bit indices and 32-bit tile fields");
  using value_type = V;
  using index_type = I;
  using space = Space;
  using params_type = csr5_params;
  static constexpr std::string_view name = "csr5";
  static constexpr int version = 1;

  std::int64_t rows = 0, cols = 0;
  csr5_params params;
  array<I, Space> row_ptr;                         // rows + 1: the CSR row pointers
  array<std::uint32_t, Space> tile_ptr;            // tiles + 1: first row of each tile | empty-rows bit
  array<std::uint32_t, Space> tile_desc;           // complete tiles * words * omega descriptor words
  array<std::uint32_t, Space> tile_desc_offset_ptr;  // complete tiles + 1 offsets into tile_desc_offset
  array<std::uint32_t, Space> tile_desc_offset;    // empty_offset of the tiles with empty rows
  array<I, Space> col_idx;                         // nnz column indices, tiles transposed
  array<V, Space> values;                          // nnz values, same order as col_idx

  std::int64_t nnz() const { return static_cast<std::int64_t>(values.size()); }

  template <class Self, class F>
  static void for_each_array(Self& m, F&& f) {
    f("row_ptr", m.row_ptr);
    f("tile_ptr", m.tile_ptr);
    f("tile_desc", m.tile_desc);
    f("tile_desc_offset_ptr", m.tile_desc_offset_ptr);
    f("tile_desc_offset", m.tile_desc_offset);
    f("col_idx", m.col_idx);
    f("values", m.values);
  }
};

// Throws errc::bad_input naming the broken invariant: shape, params, every length, row_ptr,
// column indices (range, and strictly increasing within each row in CSR order), tile_ptr
// (rows and empty-row bits), every tile_desc field and unused bit, the empty_offset
// counts and values. Safe on any input (lengths are checked before anything is indexed).
template <class V>
void validate(const csr5<V, std::int32_t, host>& m);

}  // namespace spconv
