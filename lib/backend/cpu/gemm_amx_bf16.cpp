// AMX BF16 kernel (its code compiled for AMX-TILE and AMX-BF16): the walk of amx_bf16_tiles.h on the CPU's tiles
// (tdpbf16ps, products summed in f32), over the AVX-512 BF16 kernel's activations and panels.
#include <immintrin.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/gemm_isa.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("amx-tile,amx-bf16")
#include "backend/cpu/amx_bf16_tiles.h"

namespace kvf::cpu {
namespace {

// Palette 1, tiles 0-7 each 16 rows of 64 bytes: accumulators 0-3, A 4-5, B 6-7.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
  TileConfig() {
    for (int t = 0; t < 8; ++t) colsb[t] = 64, rows[t] = 16;
  }
};
static_assert(sizeof(TileConfig) == 64 && offsetof(TileConfig, colsb) == 16 && offsetof(TileConfig, rows) == 48,
              "the 64-byte layout ldtilecfg reads");

// The tile configuration is per thread; load it the first time a thread multiplies.
void configure_tiles() {
  static thread_local bool configured = false;
  if (configured) return;
  static const TileConfig config;
  _tile_loadconfig(&config);
  configured = true;
}

// The AVX-512 BF16 kernel's activation and panel forms (called through it: no copy of its table at start-up).
void convert_x_bf16(const float* x, int64_t n, void* out) { kGemmAvx512Bf16.convert_x(x, n, out); }
void pack_panel_bf16(const float* w, int64_t ldw, int cols, int kc, void* panel) {
  kGemmAvx512Bf16.pack_panel(w, ldw, cols, kc, panel);
}

// The tile intrinsics take their tile numbers as literals (GCC pastes them into the instruction's text), hence
// one branch per tile.
#define KVF_EACH_TILE(op) \
  if constexpr (T == 0) op(0); \
  else if constexpr (T == 1) op(1); \
  else if constexpr (T == 2) op(2); \
  else if constexpr (T == 3) op(3); \
  else if constexpr (T == 4) op(4); \
  else if constexpr (T == 5) op(5); \
  else if constexpr (T == 6) op(6); \
  else op(7)

struct HardwareTiles {
  template <int T>
  static void load(const void* base, int64_t stride) {
#define KVF_LOAD(t) _tile_loadd(t, base, stride)
    KVF_EACH_TILE(KVF_LOAD);
#undef KVF_LOAD
  }
  template <int T>
  static void zero() {
#define KVF_ZERO(t) _tile_zero(t)
    KVF_EACH_TILE(KVF_ZERO);
#undef KVF_ZERO
  }
  template <int T>
  static void store(void* base, int64_t stride) {
#define KVF_STORE(t) _tile_stored(t, base, stride)
    KVF_EACH_TILE(KVF_STORE);
#undef KVF_STORE
  }
  // The four products of amx::tile_32x32.
  template <int C, int A, int B>
  static void dot() {
    static_assert(C < 4 && A == 4 + C / 2 && B == 6 + C % 2, "amx::tile_32x32's products only");
    if constexpr (C == 0) _tile_dpbf16ps(0, 4, 6);
    else if constexpr (C == 1) _tile_dpbf16ps(1, 4, 7);
    else if constexpr (C == 2) _tile_dpbf16ps(2, 5, 6);
    else _tile_dpbf16ps(3, 5, 7);
  }
};
#undef KVF_EACH_TILE

void multiply(const void* x, int64_t ldx, int rows, const void* panel, int kc, int cols, float* y, int64_t ldy,
              bool accumulate) {
  configure_tiles();
  amx::multiply<HardwareTiles>(static_cast<const uint16_t*>(x), ldx, rows, static_cast<const uint32_t*>(panel), kc,
                               cols, y, ldy, accumulate);
}

// The AMX kernel against the AVX-512 BF16 one on the same panel: 37 rows (a full row group and a partial one), 64
// and 40 columns, k 256, set and then accumulated.
bool agrees_with_avx512_bf16() {
  constexpr int kRowsTried = 37, kK = 256, kCols = amx::kCols;
  std::vector<float> x((size_t)kRowsTried * kK), w((size_t)kCols * kK);
  uint32_t state = 12345;
  const auto next = [&] {  // values in [-1, 1)
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / (float)(1u << 23) - 1.0f;
  };
  for (float& v : x) v = next();
  for (float& v : w) v = next();
  std::vector<uint16_t> xb(x.size());
  for (int r = 0; r < kRowsTried; ++r) kGemmAvx512Bf16.convert_x(x.data() + r * kK, kK, xb.data() + r * kK);
  alignas(64) static uint32_t panel[kK / 2 * kCols];
  kGemmAvx512Bf16.pack_panel(w.data(), kK, kCols, kK, panel);
  for (int cols : {kCols, 40}) {
    std::vector<float> want((size_t)kRowsTried * kCols, 0.0f), got(want.size(), 0.0f);
    for (bool accumulate : {false, true}) {
      kGemmAvx512Bf16.multiply(xb.data(), kK, kRowsTried, panel, kK, cols, want.data(), kCols, accumulate);
      multiply(xb.data(), kK, kRowsTried, panel, kK, cols, got.data(), kCols, accumulate);
    }
    for (size_t i = 0; i < want.size(); ++i)  // sums of 512 products of magnitude <= 1, two summation orders
      if (!(std::fabs(want[i] - got[i]) <= 1e-3f)) return false;
  }
  return true;
}

}  // namespace

const GemmIsa kGemmAmxBf16 = {amx::kCols, 32, 2, convert_x_bf16, pack_panel_bf16, multiply};

bool amx_bf16_usable() {
  const CpuFeatures& f = cpu_features();
  if (!f.amx_bf16 || !f.avx512_bf16) return false;
  // Linux hands out the tile data state per process on request (ARCH_REQ_XCOMP_PERM, feature 18: XTILEDATA).
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  // Tried in a child first: a CPU or kernel that faults on the tile instructions, or computes other sums, then
  // costs a fallback to the AVX-512 BF16 kernel, not the process.
  const pid_t child = fork();
  if (child == 0) _exit(agrees_with_avx512_bf16() ? 0 : 1);
  if (child < 0) return false;
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace kvf::cpu

KVF_ISA_END
