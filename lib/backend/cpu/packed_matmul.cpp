#include "backend/cpu/packed_matmul.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "backend/cpu/interleaved_weights.h"
#include "core/ggml_types.h"

namespace kvf::cpu {
namespace {

// k extent of one panel: a multiple of every block size (32, 256) and small enough that a panel stays in L1 while
// a slab of rows passes over it.
constexpr int64_t kPanelK = 256;
// A task's panels for one k step (they stay in L2 together), and a slab of activation rows that passes over them.
constexpr size_t kGroupBytes = 128 << 10, kRowSlabBytes = 96 << 10;

const GemmIsa& isa_of(GemmKernel kernel) {
  return kernel == GemmKernel::AmxBf16      ? kGemmAmxBf16
         : kernel == GemmKernel::Avx512Bf16 ? kGemmAvx512Bf16
                                            : kGemmAvx2F32;  // Avx2Int16's other weights: f32
}

// Column blocks of every product, so that one parallel loop covers them all.
struct ColumnBlock {
  size_t product;
  int64_t c0, cols;
};

std::vector<ColumnBlock> column_blocks(const std::vector<MatmulProduct>& products, int64_t cols) {
  std::vector<ColumnBlock> blocks;
  for (size_t p = 0; p < products.size(); ++p) {
    const int64_t m = products[p].w->dim(0);
    for (int64_t c0 = 0; c0 < m; c0 += cols) blocks.push_back({p, c0, std::min(cols, m - c0)});
  }
  return blocks;
}

bool bf16_dots_available(int64_t k) { return cpu_kernels().bf16_dots && k % 32 == 0; }

void few_rows_matmul(const float* x, int64_t n, int64_t k, const std::vector<MatmulProduct>& products,
                     bool each_row_alone) {
  // Block-quantized weights meet the activations in integer dot products where the CPU has them (the activation
  // rows rounded to 16-bit integers once for every product), bf16 weights meet them rounded to bf16 (as in the
  // panels) where it has AVX-512 BF16; other weights are dequantized to f32.
  static thread_local Int16Rows integer_buffer;
  static thread_local std::vector<uint16_t> bf16_buffer;
  Int16Rows& xi = integer_buffer;  // the workers read this thread's buffers (a thread_local named in the lambda
  std::vector<uint16_t>& xb = bf16_buffer;  // would be theirs)
  bool any_integer = false, any_bf16 = false;
  for (const MatmulProduct& p : products) {
    any_integer = any_integer || int_dot_available(p.w->dtype);
    any_bf16 = any_bf16 || p.w->dtype == DType::BF16;
  }
  any_bf16 = any_bf16 && bf16_dots_available(k);
  if (any_integer) quantize_rows_int16(x, n, k, xi);
  if (any_bf16) {
    xb.resize((size_t)(n * k));
    for (int64_t r = 0; r < n; ++r) kGemmAvx512Bf16.convert_x(x + r * k, k, xb.data() + r * k);
  }
  // Several rows meet block-format weights sixteen weight rows at a time where the CPU has AVX-512 VNNI, except in
  // a decoding step, whose rows must get the bits they get alone (int_dot_columns_avx512.cpp says why).
  const bool by_columns = cpu_kernels().int_dot == IntDotKernel::Avx512Vnni && n > 1 && !each_row_alone;
  const std::vector<ColumnBlock> blocks = column_blocks(products, 64);
  tbb::parallel_for(size_t{0}, blocks.size(), [&](size_t b) {
    const MatmulProduct& p = products[blocks[b].product];
    const int64_t m = p.w->dim(0);
    const size_t row_bytes = dtype_bytes(p.w->dtype, k);
    if (int_dot_available(p.w->dtype)) {
      const uint8_t* w = p.w->data<uint8_t>() + blocks[b].c0 * row_bytes;
      if (dtype_is_interleaved(p.w->dtype))  // any number of rows: each gets the bits it gets alone
        return int_dot_interleaved_avx512_vnni(p.w->dtype, w, (int)blocks[b].cols, xi, p.y + blocks[b].c0, m);
      if (by_columns)
        return int_dot_columns_avx512_vnni(p.w->dtype, w, row_bytes, (int)blocks[b].cols, xi, p.y + blocks[b].c0, m);
      return int_dot_rows(p.w->dtype, w, row_bytes, (int)blocks[b].cols, xi, p.y + blocks[b].c0, m);
    }
    if (p.w->dtype == DType::BF16 && any_bf16)
      return dot_rows_bf16_avx512(xb.data(), k, (int)n, p.w->data<uint16_t>() + blocks[b].c0 * k, k,
                                  (int)blocks[b].cols, k, p.y + blocks[b].c0, m);
    constexpr int64_t kRowsAtOnce = 8;  // weight rows dequantized, then dotted with every activation row
    std::vector<float> values((size_t)(kRowsAtOnce * k));
    for (int64_t c = blocks[b].c0; c < blocks[b].c0 + blocks[b].cols; c += kRowsAtOnce) {
      const int rows = (int)std::min(kRowsAtOnce, blocks[b].c0 + blocks[b].cols - c);
      for (int j = 0; j < rows; ++j)
        weight_values(p.w->dtype, p.w->data<uint8_t>() + (c + j) * row_bytes, 0, k, values.data() + j * k);
      dot_rows_avx2(x, k, (int)n, values.data(), k, rows, k, p.y + c, m);
    }
  });
}

// One kind of panel: how a task packs a panel of a product's weight columns [c0, c0 + ncols) for values [k0, k0 +
// kc), and how it multiplies `rows` activation rows from `row` by one, into y (rows ldy apart, every panel column).
struct PanelKind {
  int64_t cols;        // columns per panel
  size_t panel_bytes;  // one panel of kPanelK values
  int64_t slab_rows;   // activation rows that pass over a group of panels at a time (a multiple of row_step)
  int64_t row_step = 1;  // a multiple of which every multiply's first row is
  std::function<void(const MatmulProduct& p, int64_t c0, int ncols, int64_t k0, int kc, void* panel)> pack;
  std::function<void(int64_t row, int rows, int64_t k0, const void* panel, int kc, float* y, int64_t ldy,
                     bool accumulate)>
      multiply;
};

// Tasks are (column group, row block) tiles. A task packs its group's panels for one k step together (they stay
// in L2), then passes the activations over them a slab of rows at a time, so each slab is read from memory once
// per group and from L2 once per panel. The outputs accumulate over the k steps in a buffer of the task's own,
// panel by panel, where consecutive tiles are adjacent (in y a product's rows lie far apart, and reading them
// back at every k step stalled the kernel), and are copied into y at the end. Columns are split into groups
// small enough to keep every core busy before rows are split, since each row block packs its panels again.
void tiled_matmul(int64_t n, int64_t k, const std::vector<MatmulProduct>& products, const PanelKind& kind) {
  const int64_t pc = kind.cols;
  const int64_t workers = tbb::this_task_arena::max_concurrency();
  int64_t panels = 0;
  for (const MatmulProduct& p : products) panels += (p.w->dim(0) + pc - 1) / pc;
  // Rows that fit one slab gain nothing from groups (they stay in L1/L2 anyway), and one panel per task spreads
  // the work most evenly over the workers (decoding 16 sequences: level with and without groups, within noise).
  const int64_t group = n <= kind.slab_rows ? 1
                                            : std::clamp<int64_t>(panels / (4 * workers), 1,
                                                                  (int64_t)(kGroupBytes / kind.panel_bytes));
  const std::vector<ColumnBlock> blocks = column_blocks(products, group * pc);
  const int64_t col_blocks = (int64_t)blocks.size();
  const int64_t row_blocks = std::clamp<int64_t>((2 * workers + col_blocks - 1) / col_blocks, 1, (n + 47) / 48);
  const int64_t step = kind.row_step;
  const int64_t rows_per_block = ((n + row_blocks - 1) / row_blocks + step - 1) / step * step;
  tbb::parallel_for(int64_t{0}, col_blocks * row_blocks, [&](int64_t task) {
    const ColumnBlock& block = blocks[(size_t)(task / row_blocks)];
    const MatmulProduct& p = products[block.product];
    const int64_t m = p.w->dim(0), r0 = task % row_blocks * rows_per_block;
    const int64_t nrows = std::min(rows_per_block, n - r0);
    if (nrows <= 0) return;
    const int group_panels = (int)((block.cols + pc - 1) / pc);
    const auto panel_cols = [&](int g) { return (int)std::min<int64_t>(pc, block.cols - g * pc); };
    static thread_local std::vector<uint8_t> panel_buffer;  // 64-byte aligned below for the kernels' aligned loads
    panel_buffer.resize(kind.panel_bytes * (size_t)group_panels + 64);
    uint8_t* panel0 = panel_buffer.data() + (64 - (uintptr_t)panel_buffer.data() % 64) % 64;
    static thread_local std::vector<float> out;  // [panel][row][pc]: every column of a panel, zeros included
    out.resize((size_t)(group_panels * nrows * pc));
    for (int64_t k0 = 0; k0 < k; k0 += kPanelK) {
      const int kc = (int)std::min(kPanelK, k - k0);
      for (int g = 0; g < group_panels; ++g)
        kind.pack(p, block.c0 + g * pc, panel_cols(g), k0, kc, panel0 + g * kind.panel_bytes);
      for (int64_t s = 0; s < nrows; s += kind.slab_rows) {
        const int srows = (int)std::min(kind.slab_rows, nrows - s);
        for (int g = 0; g < group_panels; ++g)
          kind.multiply(r0 + s, srows, k0, panel0 + g * kind.panel_bytes, kc, out.data() + (g * nrows + s) * pc, pc,
                        k0 > 0);
      }
    }
    for (int g = 0; g < group_panels; ++g)
      for (int64_t r = 0; r < nrows; ++r)
        std::memcpy(p.y + (r0 + r) * m + block.c0 + g * pc, out.data() + (g * nrows + r) * pc,
                    (size_t)panel_cols(g) * sizeof(float));
  });
}

// The weight rows [c0, c0 + ncols) of a product, where they lie.
void weight_rows(const MatmulProduct& p, int64_t k, int64_t c0, int ncols, const uint8_t* rows[64]) {
  const size_t row_bytes = dtype_bytes(p.w->dtype, k);
  for (int c = 0; c < ncols; ++c) rows[c] = p.w->data<uint8_t>() + (c0 + c) * row_bytes;
}

// Weights dequantized into the panels of a float kernel (GemmIsa), activations in its input form.
void float_panel_matmul(const float* x, int64_t n, int64_t k, const std::vector<MatmulProduct>& products,
                        GemmKernel kernel) {
  const GemmIsa& isa = isa_of(kernel);
  // Activations in the kernel's input form, once for every panel of every product (a kernel that reads f32 takes
  // them where they are: a copy of a 2048-row input cost a fresh allocation's page faults on every call).
  std::vector<uint8_t> converted;
  const uint8_t* xin = reinterpret_cast<const uint8_t*>(x);
  if (isa.convert_x) {
    converted.resize((size_t)(n * k) * isa.x_elem_bytes);
    tbb::parallel_for(int64_t{0}, n,
                      [&](int64_t r) { isa.convert_x(x + r * k, k, converted.data() + r * k * isa.x_elem_bytes); });
    xin = converted.data();
  }
  PanelKind kind;
  kind.cols = isa.panel_cols;
  kind.panel_bytes = (size_t)(isa.panel_cols * kPanelK) * isa.x_elem_bytes;
  kind.slab_rows = (int64_t)(kRowSlabBytes / (kPanelK * isa.x_elem_bytes));
  kind.pack = [&](const MatmulProduct& p, int64_t c0, int ncols, int64_t k0, int kc, void* panel) {
    const uint8_t* rows[64];
    weight_rows(p, k, c0, ncols, rows);
    // Block formats the bf16 kernels decode straight into their panel; the others go through f32 values.
    const bool bf16_panels = kernel == GemmKernel::Avx512Bf16 || kernel == GemmKernel::AmxBf16;
    if (bf16_panels && pack_quant_panel_bf16_supports(p.w->dtype))
      return pack_quant_panel_bf16(p.w->dtype, rows, ncols, k0, kc, panel);
    static thread_local std::vector<float> values;  // a panel's weights in f32, before packing
    values.resize((size_t)(isa.panel_cols * kPanelK));
    for (int c = 0; c < ncols; ++c) {
      float* out = values.data() + c * kPanelK;
      if (!dtype_is_interleaved(p.w->dtype)) {
        weight_values(p.w->dtype, rows[c], k0, kc, out);
        continue;
      }
      const int64_t column = c0 + c;  // its group of sixteen starts at row column - column % 16
      interleaved_values(p.w->dtype, rows[c] - column % kInterleavedRows * dtype_bytes(p.w->dtype, k),
                         (int)(column % kInterleavedRows), k0, kc, out);
    }
    isa.pack_panel(values.data(), kPanelK, ncols, kc, panel);
  };
  kind.multiply = [&](int64_t row, int rows, int64_t k0, const void* panel, int kc, float* y, int64_t ldy,
                      bool accumulate) {
    isa.multiply(xin + (row * k + k0) * isa.x_elem_bytes, k, rows, panel, kc, isa.panel_cols, y, ldy, accumulate);
  };
  tiled_matmul(n, k, products, kind);
}

// Block-format weights widened into 16-bit integer panels, activations rounded to 16-bit integers once for every
// product (Avx2Int16).
void integer_panel_matmul(const float* x, int64_t n, int64_t k, const std::vector<MatmulProduct>& products) {
  static thread_local Int16RowTiles buffer;
  Int16RowTiles& xi = buffer;  // the workers read this thread's buffer
  xi.rows = n;
  xi.k = k;
  xi.pairs.resize((size_t)((n + 3) / 4 * k * 2));
  xi.d.resize((size_t)(n * k / 32));
  xi.sum32.resize((size_t)(n * k / 32));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, (n + 3) / 4), [&](const tbb::blocked_range<int64_t>& fours) {
    static thread_local std::vector<int16_t> scratch;  // reused across calls: no allocation per range
    scratch.resize((size_t)(4 * k));
    for (int64_t four = fours.begin(); four < fours.end(); ++four)
      quantize_row_tiles_int16(x, n, k, four, scratch.data(), xi);
  });
  PanelKind kind;
  kind.cols = kInt16PanelCols;
  kind.row_step = 4;  // the activations' tiles
  kind.panel_bytes = int16_panel_bytes((int)kPanelK);
  // 64 rows: 32 KB of activations a k step, the size of L1 (measured: docs/engine.md#int16-slab).
  kind.slab_rows = 64;
  kind.pack = [&](const MatmulProduct& p, int64_t c0, int ncols, int64_t k0, int kc, void* panel) {
    const uint8_t* rows[64];
    weight_rows(p, k, c0, ncols, rows);
    pack_int16_panel(p.w->dtype, rows, ncols, k0, kc, panel);
  };
  kind.multiply = [&](int64_t row, int rows, int64_t k0, const void* panel, int, float* y, int64_t ldy,
                      bool accumulate) { multiply_int16_panel(xi, row, rows, k0, panel, y, ldy, accumulate); };
  tiled_matmul(n, k, products, kind);
}

}  // namespace

int64_t packed_matmul_few_rows(DType t, int64_t k, GemmKernel kernel) {
  // Up to these row counts the integer row/column kernels beat the panels (measured: docs/engine.md#few-rows).
  // Decoding steps (each_row_alone) take the one-row kernel, except over interleaved weights
  // (interleaved_weights.h), where every pass of up to 48 rows takes the column kernel.
  if (int_dot_available(t))
    return cpu_kernels().int_dot == IntDotKernel::Avx512Vnni ? 48 : kernel == GemmKernel::Avx2Int16 ? 12 : 16;
  return t == DType::BF16 && bf16_dots_available(k) ? 8 : 4;
}

void weight_values(DType t, const uint8_t* row, int64_t k0, int64_t kc, float* out) {
  KVF_CHECK(!dtype_is_interleaved(t), "weight_values: the rows of ", dtype_name(t), " weights are interleaved "
            "(interleaved_values reads them)");
  const uint8_t* at = row + dtype_bytes(t, k0);
  if (t == DType::F32) return (void)std::memcpy(out, at, (size_t)kc * 4);
  const bool simd = cpu_kernels().avx2;
  const DequantAvx2& d = kDequantAvx2;
  const DequantFn fast = !simd              ? nullptr
                         : t == DType::F16  ? d.f16
                         : t == DType::BF16 ? d.bf16
                         : t == DType::Q4_0 ? d.q4_0
                         : t == DType::Q4_1 ? d.q4_1
                         : t == DType::Q5_0 ? d.q5_0
                         : t == DType::Q5_1 ? d.q5_1
                         : t == DType::Q8_0 ? d.q8_0
                         : t == DType::Q4_K ? d.q4_k
                         : t == DType::Q6_K ? d.q6_k
                                            : nullptr;
  if (fast) return fast(at, out, kc);
  dequantize_row(ggml_type_of(t), at, out, kc);
}

int64_t packed_matmul_k_step() { return isa_of(active_gemm_kernel()).k_step; }

void packed_matmul(const float* x, int64_t n, int64_t k, const Tensor& w, float* y) {
  packed_matmul(x, n, k, {{&w, y}}, active_gemm_kernel());
}

void packed_matmul(const float* x, int64_t n, int64_t k, const Tensor& w, float* y, GemmKernel kernel) {
  packed_matmul(x, n, k, {{&w, y}}, kernel);
}

void packed_matmul(const float* x, int64_t n, int64_t k, const std::vector<MatmulProduct>& products) {
  packed_matmul(x, n, k, products, active_gemm_kernel());
}

void packed_matmul(const float* x, int64_t n, int64_t k, const std::vector<MatmulProduct>& products,
                   GemmKernel kernel, bool each_row_alone) {
  const GemmIsa& isa = isa_of(kernel);
  for (const MatmulProduct& p : products)
    KVF_CHECK(k % isa.k_step == 0 && k % dtype_block_elems(p.w->dtype) == 0, "matmul: rows of ", k, " values of a ",
              dtype_name(p.w->dtype), " weight; the ", gemm_kernel_name(kernel), " kernel needs a multiple of ",
              isa.k_step);
  if (n == 0) return;
  // Each product takes the path a call of its own would take. Most calls (every decoding step) take one path for
  // all their products: those go straight there, with no copies of the list.
  const auto few_rows_for = [&](const MatmulProduct& p) {
    return each_row_alone || n <= packed_matmul_few_rows(p.w->dtype, k, kernel);
  };
  if (std::all_of(products.begin(), products.end(), few_rows_for))
    return few_rows_matmul(x, n, k, products, each_row_alone);
  std::vector<MatmulProduct> few, integer, floating;
  for (const MatmulProduct& p : products) {
    if (few_rows_for(p))
      few.push_back(p);
    else
      (kernel == GemmKernel::Avx2Int16 && int_dot_available(p.w->dtype) && !dtype_is_interleaved(p.w->dtype)
           ? integer
           : floating)
          .push_back(p);
  }
  if (!few.empty()) few_rows_matmul(x, n, k, few, each_row_alone);
  if (!integer.empty()) integer_panel_matmul(x, n, k, integer);
  if (!floating.empty()) float_panel_matmul(x, n, k, floating, kernel);
}

}  // namespace kvf::cpu
