#include "kernels/portable/util/cpu_isa.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace ember::kernels::portable {
namespace {

TEST(CpuIsaTest, NamesRoundTrip) {
  constexpr Isa kAll[] = {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512, Isa::kAmx};
  for (Isa isa : kAll) {
    Isa parsed = Isa::kAvx512;
    ASSERT_TRUE(parse_isa(isa_name(isa), &parsed)) << isa_name(isa);
    EXPECT_EQ(parsed, isa);
  }
}

TEST(CpuIsaTest, RejectsOtherSpellings) {
  Isa parsed = Isa::kAvx2;
  constexpr const char* kWrong[] = {"", "AVX2", "sse2", "avx", "avx512f", "baseline "};
  for (const char* text : kWrong) {
    EXPECT_FALSE(parse_isa(text, &parsed)) << '"' << text << '"';
  }
  EXPECT_EQ(parsed, Isa::kAvx2);  // untouched on failure
}

TEST(CpuIsaTest, DispatchLevelIsTheHostCappedByTheEnvironment) {
  const Isa host = host_isa();
  Isa want = host;
  const char* cap_text = std::getenv("EMBER_ISA");
  Isa cap;
  if (cap_text != nullptr && parse_isa(cap_text, &cap) && cap < host) want = cap;
  EXPECT_EQ(cpu_isa(), want) << "host " << isa_name(host) << ", EMBER_ISA="
                             << (cap_text ? cap_text : "(unset)");
  std::printf("kernels dispatch on %s (host %s)\n", isa_name(cpu_isa()), isa_name(host));
}

}  // namespace
}  // namespace ember::kernels::portable
