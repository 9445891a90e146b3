// The instruction-set-specific half of the compact-weight matmul (packed_matmul.h does the rest): turning f32
// activations into the kernel's input form, f32 weight rows into a panel, and a block of rows times a panel into
// f32 outputs. Each kernel lives in its own file compiled for its instruction set; this header holds only
// declarations, so nothing compiled for one instruction set leaks into code that runs on every CPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace kvf::cpu {

struct GemmIsa {
  int panel_cols;       // output columns per panel
  int k_step;           // a panel's k extent is a multiple of this
  size_t x_elem_bytes;  // bytes per activation element in the kernel's input form
  // x [n] f32 -> the kernel's input form (n a multiple of k_step); null for a kernel that reads f32 as it is.
  void (*convert_x)(const float* x, int64_t n, void* out);
  // Weight rows w[c][0, kc) for c < cols (row stride ldw floats; cols <= panel_cols) -> panel; columns past cols
  // are zero.
  void (*pack_panel)(const float* w, int64_t ldw, int cols, int kc, void* panel);
  // y[r][0, cols) (+)= x[r][0, kc) . panel for r < rows; x rows ldx elements apart, y rows ldy floats apart.
  // Every output gets the same operations in the same order whatever rows and cols are, so a row's result never
  // depends on the batch it is computed in.
  void (*multiply)(const void* x, int64_t ldx, int rows, const void* panel, int kc, int cols, float* y, int64_t ldy,
                   bool accumulate);
};

extern const GemmIsa kGemmAvx512Bf16;
// AMX BF16 tiles over the same activations and panels as kGemmAvx512Bf16 (gemm_amx_bf16.cpp).
extern const GemmIsa kGemmAmxBf16;
// Whether this process may use it: the CPU has AMX BF16 and AVX-512 BF16, Linux granted the tile state, and a
// child process computed a test product with it that agrees with kGemmAvx512Bf16 (a fault there costs only the
// child). Each call probes again; the kernel table (cpu_kernels.h) asks once.
bool amx_bf16_usable();
// kGemmAvx512Bf16.pack_panel with each weight row where it lies: rows[c][0, kc) for c < cols (<= 64).
void pack_panel_rows_bf16(const float* const* rows, int cols, int kc, void* panel);
// kGemmAvx512Bf16.pack_panel of block-quantized weight rows, decoded where they lie (pack_quant_avx512_bf16.cpp):
// values [k0, k0 + kc) of rows[c] for c < cols (<= 64), k0 and kc multiples of the format's block (and of 32);
// bit for bit weight_values followed by pack_panel. For the types pack_quant_panel_bf16_supports names.
bool pack_quant_panel_bf16_supports(DType t);
void pack_quant_panel_bf16(DType t, const uint8_t* const* rows, int cols, int64_t k0, int kc, void* panel);
extern const GemmIsa kGemmAvx2F32;

// Dequantization of whole blocks to f32 with AVX2 (dequant_avx2.cpp): n values from the start of a run of blocks,
// bit-identical to core/ggml_types.h's reference (same operations, no fused multiply-add).
using DequantFn = void (*)(const uint8_t* blocks, float* out, int64_t n);
struct DequantAvx2 {
  DequantFn f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q6_k;
};
extern const DequantAvx2 kDequantAvx2;

// Dot products of a few activation rows with a few f32 weight rows (few_rows_avx2.cpp): y[r * ldy + j] = x[r] . w[j]
// for r < rows and j < wrows; x rows ldx floats apart, w rows ldw; k a multiple of 8.
void dot_rows_avx2(const float* x, int64_t ldx, int rows, const float* w, int64_t ldw, int wrows, int64_t k, float* y,
                   int64_t ldy);

// Dot products of a few bf16 activation rows (kGemmAvx512Bf16.convert_x's form) with bf16 weight rows
// (few_rows_avx512_bf16.cpp): y[r * ldy + j] = x[r] . w[j] for r < rows, j < wrows; k a multiple of 32.
void dot_rows_bf16_avx512(const uint16_t* x, int64_t ldx, int rows, const uint16_t* w, int64_t ldw, int wrows,
                          int64_t k, float* y, int64_t ldy);

struct Int16Rows;
// 16-bit activation rows (int_dot.h's rounding, the same integers) regrouped for the integer panels below: rows in
// fours, each four's pairs of values interleaved, so a tile of four rows reads one stream.
struct Int16RowTiles {
  int64_t rows = 0, k = 0;
  std::vector<int32_t> pairs;   // [ceil(rows / 4)][k / 2][4]: (q[r][2i], q[r][2i + 1]) of row r = 4g + j at [g][i][j]
  std::vector<float> d, sum32;  // [rows, k / 32] as in Int16Rows
};
// One row's rounding as quantize_rows_int16 does it, bit for bit (AVX2): q [k], d and sum32 [k / 32].
void quantize_row_int16_avx2(const float* x, int64_t k, int16_t* q, float* d, float* sum32);
// Rows [4 * four, 4 * four + 4) of x [rows, k] into out (sized for rows and k by the caller; missing rows zero),
// through scratch (4 * k values).
void quantize_row_tiles_int16(const float* x, int64_t rows, int64_t k, int64_t four, int16_t* scratch,
                              Int16RowTiles& out);

// Block-quantized weights (the types int_dot_available admits) in panels of 16-bit integers times 16-bit activation
// rows, for many rows on AVX2 (gemm_int16_avx2.cpp). A panel holds columns rows[c], c < cols (<= kInt16PanelCols;
// the others zero), values [k0, k0 + kc) (kc <= 256, whole blocks of the format), with their block scales and
// mins, in int16_panel_bytes(kc) bytes (64-byte aligned). multiply_int16_panel sets (or adds to)
// y[r][0, kInt16PanelCols) for x rows row0 + r, r < rows (row0 a multiple of 4), over the panel's values; every
// output gets the same operations in the same order whatever rows is.
constexpr int kInt16PanelCols = 16;
size_t int16_panel_bytes(int kc);
void pack_int16_panel(DType t, const uint8_t* const* rows, int cols, int64_t k0, int kc, void* panel);
void multiply_int16_panel(const Int16RowTiles& x, int64_t row0, int rows, int64_t k0, const void* panel, float* y,
                          int64_t ldy, bool accumulate);

// Integer dot products of 16-bit activation rows with block-quantized weight rows (int_dot_avx512.cpp, AVX-512
// VNNI; int_dot_avx2.cpp, AVX2); int_dot.h says what they compute.
void int_dot_rows_avx512_vnni(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x, float* y,
                               int64_t ldy);
// The same for passes of a few dozen rows (int_dot_columns_avx512.cpp, AVX-512 VNNI): sixteen weight rows at a
// time, transposed so that each unit is shared by every activation row. Each output row is the same whatever batch
// it is computed in, but in other bits than int_dot_rows_avx512_vnni gives it.
void int_dot_columns_avx512_vnni(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x,
                                 float* y, int64_t ldy);
// The column kernel over weights interleaved at load (interleaved_weights.h; Q8_0_X16, Q5_0_X16): wrows (a multiple
// of 16) columns from the group at w. Each output is bit for bit what int_dot_columns_avx512_vnni gives over the
// same weights in their base format, whatever the number of rows, one included.
void int_dot_interleaved_avx512_vnni(DType t, const uint8_t* w, int wrows, const Int16Rows& x, float* y,
                                     int64_t ldy);
// The same with AVX2 (int_dot_avx2.cpp), for CPUs without AVX-512 VNNI.
void int_dot_rows_avx2(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x, float* y,
                       int64_t ldy);
// The same over the rows' 8-bit form (Int16Rows::q8; int_dot_avx2_int8.cpp, AVX2: vpmaddubsw).
void int_dot_rows_avx2_int8(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x, float* y,
                            int64_t ldy);
// One row's 8-bit rounding as quantize_rows_int8 does it, bit for bit (AVX2): q [k], d and sum8 [k / 32].
void quantize_row_int8_avx2(const float* x, int64_t k, int8_t* q, float* d, float* sum8);

}  // namespace kvf::cpu
