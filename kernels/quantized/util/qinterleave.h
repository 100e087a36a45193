// Byte shuffles the int8 kernels share: the VNNI activation layout's
// interleave (the packed GEMM, qgemm.cpp, and the implicit convolution,
// qconv_implicit.cpp) and the stride-2 column split (phase planes,
// qdepthwise.cpp and qconv_implicit.cpp).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ember::kernels::quantized {

// Interleaves 4 rows of kN (16 or 32) int8 values into kN groups of 4
// (column j's group is r0[j] r1[j] r2[j] r3[j]) as uint8 (x + 128): the
// VNNI layout of one k group of a kN-column strip. SSE2 is part of x86-64,
// so the baseline build has it.
template <int kN>
inline void interleave4_u8(const int8_t* const r[4], uint8_t* d) {
  static_assert(kN == 16 || kN == 32);
#if defined(__SSE2__)
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
  for (int h = 0; h < kN / 16; ++h) {
    const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[0] + 16 * h));
    const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[1] + 16 * h));
    const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[2] + 16 * h));
    const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[3] + 16 * h));
    const __m128i a = _mm_unpacklo_epi8(r0, r1), b = _mm_unpackhi_epi8(r0, r1);
    const __m128i c = _mm_unpacklo_epi8(r2, r3), e = _mm_unpackhi_epi8(r2, r3);
    __m128i* out = reinterpret_cast<__m128i*>(d + 64 * h);
    _mm_storeu_si128(out + 0, _mm_xor_si128(_mm_unpacklo_epi16(a, c), flip));
    _mm_storeu_si128(out + 1, _mm_xor_si128(_mm_unpackhi_epi16(a, c), flip));
    _mm_storeu_si128(out + 2, _mm_xor_si128(_mm_unpacklo_epi16(b, e), flip));
    _mm_storeu_si128(out + 3, _mm_xor_si128(_mm_unpackhi_epi16(b, e), flip));
  }
#else
  for (int j = 0; j < kN; ++j) {
    for (int t = 0; t < 4; ++t) {
      d[j * 4 + t] = static_cast<uint8_t>(static_cast<uint8_t>(r[t][j]) ^ 0x80u);
    }
  }
#endif
}

inline void interleave4_x32_u8(const int8_t* const r[4], uint8_t* d) { interleave4_u8<32>(r, d); }

#if defined(__SSE2__)
// 8 pairs from src[2c .. 2c + 16) into even[c ..] and odd[c ..].
inline void deinterleave2_x8(const int8_t* src, int64_t c, int8_t* even, int8_t* odd) {
  const __m128i low = _mm_set1_epi16(0x00ff);
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * c));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(even + c),
                   _mm_packus_epi16(_mm_and_si128(a, low), low));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(odd + c), _mm_packus_epi16(_mm_srli_epi16(a, 8), low));
}
#endif

// Splits n bytes into their even (src[0], src[2], ...) and odd bytes. Rows
// of 16 bytes or more run in vectors to the end (a last 8 pairs overlap the
// ones before: the same values are stored twice); a phase plane's rows are
// 14 to 112 bytes, whose scalar tails cost as much as the vectors.
inline void deinterleave2(const int8_t* src, int64_t n, int8_t* even, int8_t* odd) {
  int64_t c = 0;
#if defined(__SSE2__)
  const __m128i low = _mm_set1_epi16(0x00ff);
  for (; c + 16 <= n / 2; c += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * c));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * c + 16));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(even + c),
                     _mm_packus_epi16(_mm_and_si128(a, low), _mm_and_si128(b, low)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(odd + c),
                     _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8)));
  }
  if (n >= 16) {
    for (; c + 8 <= n / 2; c += 8) deinterleave2_x8(src, c, even, odd);
    if (c < n / 2) {
      deinterleave2_x8(src, (n - 16) / 2, even, odd);  // src[n − 16 .. n) at most
      c = n / 2;
    }
  } else if (n >= 9) {
    // Two overlapping 8-byte loads at even offsets (0 and n − 8 or n − 9),
    // 4 pairs each, stored straight to the destination (a 14×14 plane's
    // rows; a buffer in between defeated store forwarding). An odd n's last
    // byte is even and left to the loop below.
    const int64_t last = (n - 8) & ~int64_t{1};
    for (const int64_t at : {int64_t{0}, last}) {
      const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + at));
      const __m128i e = _mm_packus_epi16(_mm_and_si128(a, low), low);
      const __m128i o = _mm_packus_epi16(_mm_srli_epi16(a, 8), low);
      const int32_t ev = _mm_cvtsi128_si32(e), od = _mm_cvtsi128_si32(o);
      std::memcpy(even + at / 2, &ev, 4);
      std::memcpy(odd + at / 2, &od, 4);
    }
    c = last / 2 + 4;
  }
#endif
  for (; 2 * c < n; ++c) {
    even[c] = src[2 * c];
    if (2 * c + 1 < n) odd[c] = src[2 * c + 1];
  }
}

}  // namespace ember::kernels::quantized
