#include "kernels/portable/util/cpu_isa.h"

#include "kernels/portable/util/amx.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ember::kernels::portable {

namespace {

Isa detect_host() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return Isa::kBaseline;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return amx_usable() ? Isa::kAmx : Isa::kAvx512;
  }
  return Isa::kAvx2;
#else
  return Isa::kBaseline;
#endif
}

Isa capped() {
  const Isa host = host_isa();
  const char* cap_text = std::getenv("EMBER_ISA");
  if (cap_text == nullptr || *cap_text == '\0') return host;
  Isa cap;
  if (!parse_isa(cap_text, &cap)) {
    std::fprintf(stderr, "ember: EMBER_ISA=%s is not baseline, avx2, avx512 or amx; using %s\n",
                 cap_text, isa_name(host));
    return host;
  }
  return cap < host ? cap : host;
}

}  // namespace

Isa host_isa() {
  static const Isa host = detect_host();
  return host;
}

Isa cpu_isa() {
  static const Isa level = capped();
  return level;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kBaseline: return "baseline";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kAmx: return "amx";
  }
  return "unknown";
}

bool parse_isa(const char* text, Isa* out) {
  constexpr Isa kAll[] = {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512, Isa::kAmx};
  for (Isa isa : kAll) {
    if (std::strcmp(text, isa_name(isa)) == 0) {
      *out = isa;
      return true;
    }
  }
  return false;
}

}  // namespace ember::kernels::portable
