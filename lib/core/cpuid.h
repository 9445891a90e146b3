// CPU features asked of CPUID directly, for those __builtin_cpu_supports knows only in newer compilers (clang 14
// knows neither f16c nor avx512bf16 nor the AMX features).
#pragma once

namespace kvf {

bool cpu_has_f16c();         // CPUID 1 ECX bit 29
bool cpu_has_avx512_bf16();  // CPUID 7.1 EAX bit 5 (AVX-512 itself is checked by the caller)
bool cpu_has_amx_bf16();     // CPUID 7.0 EDX bit 22, with the tile state saved by the OS (XCR0 bits 17, 18)
bool cpu_has_amx_int8();     // CPUID 7.0 EDX bit 25, likewise

}  // namespace kvf
