// Compiling a file's own code for an instruction set chosen at run time (the CPU kernel table,
// backend/cpu/cpu_kernels.h): KVF_ISA_BEGIN("avx2,fma") after the portable headers, KVF_ISA_END after the code.
// Every function defined in between (and in headers included there) carries the target; what the headers above
// define (std::vector's members, TBB, kvf::fail) stays portable. Compiler options for the whole file would compile
// those shared inline functions for the set too, and the linker may keep such a copy for every caller: a CPU
// without the set then stops on it (SIGILL). tests/cli/isa_objects_test.sh keeps it so. No __AVX2__-style macro is
// defined for such a target: code in between that tests one sees the build's own target.
#pragma once

#define KVF_PRAGMA(...) _Pragma(#__VA_ARGS__)
#if defined(__clang__)
#define KVF_ISA_BEGIN(isa) KVF_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define KVF_ISA_END KVF_PRAGMA(clang attribute pop)
#else
#define KVF_ISA_BEGIN(isa) KVF_PRAGMA(GCC push_options) KVF_PRAGMA(GCC target(isa))
#define KVF_ISA_END KVF_PRAGMA(GCC pop_options)
#endif
