#include "kernels/portable/util/amx.h"

#include <cstdint>

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_AMX 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#define EMBER_AMX 0
#endif

namespace ember::kernels::portable {

#if EMBER_AMX

namespace {

// linux/arch/x86/include/uapi/asm/prctl.h and the XSAVE feature number.
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool cpu_has_amx() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  constexpr unsigned kAmxBf16 = 1u << 22, kAmxTile = 1u << 24, kAmxInt8 = 1u << 25;
  if ((edx & (kAmxBf16 | kAmxTile | kAmxInt8)) != (kAmxBf16 | kAmxTile | kAmxInt8)) return false;
  // The OS must have enabled the tile state in XCR0 (bits 17 and 18).
  unsigned c1 = 0, d1 = 0, a1 = 0, b1 = 0;
  if (__get_cpuid(1, &a1, &b1, &c1, &d1) == 0 || (c1 & (1u << 27)) == 0) return false;  // OSXSAVE
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  return (xcr0_lo & (3u << 17)) == (3u << 17);
}

bool permission_granted() {
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  uint64_t bitmask = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &bitmask) != 0) return false;
  return (bitmask & (uint64_t{1} << kXfeatureXtiledata)) != 0;
}

// LDTILECFG's 64-byte operand: palette 1, then per tile its bytes per row
// and its rows.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

constexpr TileConfig shared_config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = 16;
  }
  return c;
}

}  // namespace

bool amx_usable() {
  static const bool usable = cpu_has_amx() && permission_granted();
  return usable;
}

namespace {

constexpr TileConfig kSharedConfig = shared_config();

// (GCC 12 does not apply a target attribute to a constructor's body.)
__attribute__((target("amx-tile"))) void load_config() { _tile_loadconfig(&kSharedConfig); }
__attribute__((target("amx-tile"))) void release_tiles() { _tile_release(); }

}  // namespace

AmxTiles::AmxTiles(bool load) : loaded_(load) {
  if (loaded_) load_config();
}

AmxTiles::~AmxTiles() {
  if (loaded_) release_tiles();
}

#else

bool amx_usable() { return false; }
AmxTiles::AmxTiles(bool load) : loaded_(load) {}
AmxTiles::~AmxTiles() = default;

#endif

}  // namespace ember::kernels::portable
