// Function attributes that compile one function for an ISA level above the
// build's baseline x86-64: a kernel's loop template is inlined into one
// function per level and cpu_isa() (cpu_isa.h) picks which runs.
//
// EMBER_TARGET_AVX2_FMA and EMBER_TARGET_AVX512 both allow fused
// multiply-adds, so GCC contracts the same expressions in both and the two
// builds give the same bits (only the vector width differs; tested per
// kernel). The AVX-512 build asks GCC for 512-bit vectors, which its generic
// tuning would otherwise not use for auto-vectorised loops.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_ISA_X86 1
#define EMBER_TARGET_AVX2_FMA __attribute__((target("avx2,fma")))
#if defined(__clang__)
#define EMBER_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))
#else
#define EMBER_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,prefer-vector-width=512")))
#endif
#else
#define EMBER_ISA_X86 0
#endif
