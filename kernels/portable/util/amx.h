// AMX tiles (Intel Advanced Matrix Extensions, Sapphire Rapids and later):
// whether this process may use them, and the one tile shape Ember's AMX
// kernels share.
//
// Linux hands out AMX's 8 KiB of tile registers per process on request
// (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA); an instruction that touches
// the tiles without it is killed with SIGILL. amx_usable() asks once, when
// cpu_isa.cpp detects the host, and is true only when the CPU has AMX-TILE,
// AMX-BF16 and AMX-INT8 and the kernel granted the request.
//
// Every AMX kernel uses all eight tiles as 16 rows of 64 bytes: a float32 or
// int32 16×16 accumulator, a 16×32 bf16 (or 16×64 int8) operand. The tile
// configuration is per thread; AmxTiles loads it for a scope and releases the
// tiles at its end (so a context switch saves no tile data after the kernel).
#pragma once

namespace ember::kernels::portable {

/// True when the CPU has AMX-TILE, AMX-BF16 and AMX-INT8 and Linux lets this
/// process use the tile data. Asked once; false off x86-64 Linux.
bool amx_usable();

/// With `load`, loads the shared tile configuration on this thread for the
/// object's life and releases the tiles at its end; without, does nothing
/// (for code templated over microkernels of which only some use tiles).
/// Load only where amx_usable(): LDTILECFG faults elsewhere.
class AmxTiles {
 public:
  explicit AmxTiles(bool load);
  ~AmxTiles();
  AmxTiles(const AmxTiles&) = delete;
  AmxTiles& operator=(const AmxTiles&) = delete;

 private:
  bool loaded_;
};

}  // namespace ember::kernels::portable
