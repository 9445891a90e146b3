#include "core/cpuid.h"

#include <cpuid.h>

namespace kvf {
namespace {

enum class Reg { Eax, Ecx, Edx };

bool cpuid_bit(unsigned leaf, unsigned subleaf, Reg reg, unsigned bit) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(leaf, subleaf, &a, &b, &c, &d)) return false;
  return (((reg == Reg::Eax ? a : reg == Reg::Ecx ? c : d) >> bit) & 1u) != 0;
}

// XCR0 bits 17 and 18 (XTILECFG, XTILEDATA); XGETBV exists when CPUID 1 ECX bit 27 (OSXSAVE) says so.
bool os_saves_tiles() {
  if (!cpuid_bit(1, 0, Reg::Ecx, 27)) return false;
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0x60000u) == 0x60000u;
}

}  // namespace

bool cpu_has_f16c() { return cpuid_bit(1, 0, Reg::Ecx, 29); }
bool cpu_has_avx512_bf16() { return cpuid_bit(7, 1, Reg::Eax, 5); }
bool cpu_has_amx_bf16() { return cpuid_bit(7, 0, Reg::Edx, 22) && os_saves_tiles(); }
bool cpu_has_amx_int8() { return cpuid_bit(7, 0, Reg::Edx, 25) && os_saves_tiles(); }

}  // namespace kvf
