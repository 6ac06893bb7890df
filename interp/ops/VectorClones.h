// Hot loops of the compute kernels are built three times, for the x86-64 baseline, AVX2+FMA
// (x86-64-v3) and AVX-512 (x86-64-v4), and the loader picks the best one for the CPU (GCC
// target_clones, resolved once through an ifunc). The binary stays portable; on other compilers
// or architectures only the baseline is built.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QOPT_VECTOR_CLONES \
  __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define QOPT_VECTOR_CLONES
#endif
