// softmax_f32 (see softmax_f32.h): three passes over each slice (max,
// exp and sum, scale), each a unit-stride loop that vectorises; the exp is
// fast_expf (≤ 1 ulp). Compiled twice like unary_f32.cpp.
#include "kernels/portable/util/softmax_f32.h"

#include <cmath>
#include <limits>

#include "kernels/portable/util/fast_math.h"
#include "kernels/portable/util/isa_target.h"

namespace ember::kernels::portable {
namespace {

// max(m, v) that keeps m when v is NaN. This exact form compiles to
// maxps (x86 returns the second operand on NaN); the select_f form did not
// vectorise here.
[[gnu::always_inline]] inline float max_skip_nan(float m, float v) { return m < v ? v : m; }
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One row of n contiguous values. The max and the sum run in kLanes
// independent accumulators so they vectorise (a single accumulator is a
// dependency chain the compiler may not reorder). NaN in the row is skipped
// by the max but makes the sum NaN, so every output is NaN.
// True when all n values (stride `stride`) are -inf: a slice that
// safe_softmax_f32 sets to zeros. Called only once the max is -inf.
[[gnu::always_inline]] inline bool all_neg_inf(const float* p, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) {
    if (!(p[i * stride] == kNegInf)) return false;
  }
  return true;
}

template <bool kLog, bool kSafe = false>
[[gnu::always_inline]] inline void row(const float* p, float* q, int64_t n) {
  constexpr int kLanes = 16;
  float lanes[kLanes];
  for (int k = 0; k < kLanes; ++k) lanes[k] = kNegInf;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) lanes[k] = max_skip_nan(lanes[k], p[i + k]);
  }
  for (; i < n; ++i) lanes[0] = max_skip_nan(lanes[0], p[i]);
  float mx = lanes[0];
  for (int k = 1; k < kLanes; ++k) mx = max_skip_nan(mx, lanes[k]);
  if constexpr (kSafe) {
    if (mx == kNegInf && all_neg_inf(p, n, 1)) {
      for (int64_t j = 0; j < n; ++j) q[j] = 0.0f;
      return;
    }
  }
  for (int k = 0; k < kLanes; ++k) lanes[k] = 0.0f;
  if constexpr (kLog) {
    // q may be p (in place) and p is read again below: sum without storing.
    i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int k = 0; k < kLanes; ++k) lanes[k] += fast_expf(p[i + k] - mx);
    }
    for (; i < n; ++i) lanes[0] += fast_expf(p[i] - mx);
  } else {
    // exp into q, then sum q from cache: faster than summing in the exp loop
    // (that loop keeps lanes[] in memory).
    for (int64_t j = 0; j < n; ++j) q[j] = fast_expf(p[j] - mx);
    i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int k = 0; k < kLanes; ++k) lanes[k] += q[i + k];
    }
    for (; i < n; ++i) lanes[0] += q[i];
  }
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int k = 0; k < w; ++k) lanes[k] += lanes[k + w];
  }
  if constexpr (kLog) {
    // (x - max) - log(sum), not x - (max + log(sum)): the latter rounds at
    // the scale of max.
    const float log_sum = std::log(lanes[0]);
    for (int64_t j = 0; j < n; ++j) q[j] = (p[j] - mx) - log_sum;
  } else {
    const float inv = 1.0f / lanes[0];
    for (int64_t j = 0; j < n; ++j) q[j] *= inv;
  }
}

// n rows of `inner` values (stride `inner`), reduced down the columns. Blocks
// of kCols columns keep the per-column max and sum on the stack.
template <bool kLog, bool kSafe = false>
[[gnu::always_inline]] inline void columns(const float* p, float* q, int64_t n, int64_t inner) {
  constexpr int64_t kCols = 64;
  float mx[kCols];
  float acc[kCols];
  bool dead[kCols];  // kSafe: the column is all -inf (zeros out).
  for (int64_t j0 = 0; j0 < inner; j0 += kCols) {
    const int64_t b = inner - j0 < kCols ? inner - j0 : kCols;
    const float* pb = p + j0;
    float* qb = q + j0;
    for (int64_t j = 0; j < b; ++j) mx[j] = kNegInf;
    for (int64_t i = 0; i < n; ++i) {
      const float* r = pb + i * inner;
      for (int64_t j = 0; j < b; ++j) mx[j] = max_skip_nan(mx[j], r[j]);
    }
    bool any_dead = false;
    if constexpr (kSafe) {
      // Decided before anything is written (out may be in).
      for (int64_t j = 0; j < b; ++j) {
        dead[j] = mx[j] == kNegInf && all_neg_inf(pb + j, n, inner);
        any_dead = any_dead || dead[j];
      }
    }
    for (int64_t j = 0; j < b; ++j) acc[j] = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      const float* r = pb + i * inner;
      float* w = qb + i * inner;
      for (int64_t j = 0; j < b; ++j) {
        const float e = fast_expf(r[j] - mx[j]);
        if constexpr (!kLog) w[j] = e;
        acc[j] += e;
      }
    }
    if constexpr (kLog) {
      for (int64_t j = 0; j < b; ++j) acc[j] = std::log(acc[j]);
      for (int64_t i = 0; i < n; ++i) {
        const float* r = pb + i * inner;
        float* w = qb + i * inner;
        for (int64_t j = 0; j < b; ++j) w[j] = (r[j] - mx[j]) - acc[j];
      }
    } else {
      for (int64_t j = 0; j < b; ++j) acc[j] = 1.0f / acc[j];
      for (int64_t i = 0; i < n; ++i) {
        float* w = qb + i * inner;
        for (int64_t j = 0; j < b; ++j) w[j] *= acc[j];
      }
    }
    if (any_dead) {
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < b; ++j) {
          if (dead[j]) qb[i * inner + j] = 0.0f;
        }
      }
    }
  }
}

template <bool kLog, bool kSafe>
[[gnu::always_inline]] inline void blocks(const float* in, float* out, int64_t outer, int64_t n,
                                          int64_t inner) {
  const int64_t step = n * inner;
  for (int64_t o = 0; o < outer; ++o) {
    if (inner == 1) {
      row<kLog, kSafe>(in + o * step, out + o * step, n);
    } else {
      columns<kLog, kSafe>(in + o * step, out + o * step, n, inner);
    }
  }
}

// kind: 0 softmax, 1 log-softmax, 2 safe softmax.
[[gnu::always_inline]] inline void dispatch(int kind, const float* in, float* out, int64_t outer,
                                            int64_t n, int64_t inner) {
  if (kind == 1) {
    blocks<true, false>(in, out, outer, n, inner);
  } else if (kind == 2) {
    blocks<false, true>(in, out, outer, n, inner);
  } else {
    blocks<false, false>(in, out, outer, n, inner);
  }
}

#if EMBER_ISA_X86
EMBER_TARGET_AVX2_FMA void softmax_f32_avx2(int kind, const float* in, float* out, int64_t outer,
                                            int64_t n, int64_t inner) {
  dispatch(kind, in, out, outer, n, inner);
}
// kLanes = 16 accumulators are one zmm here: the same sums in the same order.
EMBER_TARGET_AVX512 void softmax_f32_avx512(int kind, const float* in, float* out,
                                            int64_t outer, int64_t n, int64_t inner) {
  dispatch(kind, in, out, outer, n, inner);
}
#endif

void run_at(Isa isa, int kind, const float* in, float* out, int64_t outer, int64_t n,
            int64_t inner) {
#if EMBER_ISA_X86
  if (isa >= Isa::kAvx512) {
    softmax_f32_avx512(kind, in, out, outer, n, inner);
    return;
  }
  if (isa >= Isa::kAvx2) {
    softmax_f32_avx2(kind, in, out, outer, n, inner);
    return;
  }
#else
  (void)isa;
#endif
  dispatch(kind, in, out, outer, n, inner);
}

}  // namespace

void softmax_f32_baseline(bool log, const float* in, float* out, int64_t outer, int64_t n,
                          int64_t inner) {
  dispatch(log ? 1 : 0, in, out, outer, n, inner);
}

void softmax_f32_at(Isa isa, bool log, const float* in, float* out, int64_t outer, int64_t n,
                    int64_t inner) {
  run_at(isa, log ? 1 : 0, in, out, outer, n, inner);
}

void softmax_f32(bool log, const float* in, float* out, int64_t outer, int64_t n, int64_t inner) {
  run_at(cpu_isa(), log ? 1 : 0, in, out, outer, n, inner);
}

void safe_softmax_f32_at(Isa isa, const float* in, float* out, int64_t outer, int64_t n,
                         int64_t inner) {
  run_at(isa, 2, in, out, outer, n, inner);
}

void safe_softmax_f32(const float* in, float* out, int64_t outer, int64_t n, int64_t inner) {
  run_at(cpu_isa(), 2, in, out, outer, n, inner);
}

}  // namespace ember::kernels::portable
