// Launchers of the CUDA kernels behind the CUDA backend (lib/backend/cuda). Every pointer is a device pointer;
// every launch goes to `stream` and returns without waiting. Shapes follow the Backend interface
// (lib/backend/backend.h); the CPU backend is the reference each kernel is checked against
// (tests/unit/cuda_backend_test.cpp).
//
// Indices (token ids, gathered rows, positions, probe rows) are checked on the device, so a forward pass never
// waits for the host: a kernel that meets a bad one skips it and records the first such error in an IndexError,
// which the backend reads at its next synchronising call and turns into kvf::Error.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace kvf::cuda {

enum IndexErrorCode : int32_t { kNoError = 0, kBadTokenId, kBadGatherRow, kNegativePosition, kBadProbeRow };
struct IndexError {
  int32_t code = kNoError;
  int32_t unused = 0;
  int64_t value = 0, index = 0, bound = 0;  // the bad value, where it was, the bound it broke
};
#ifdef __CUDACC__
__device__ inline void report_index_error(IndexError* e, int32_t code, int64_t value, int64_t index, int64_t bound) {
  if (atomicCAS(&e->code, 0, code) == 0) e->value = value, e->index = index, e->bound = bound;
}
#endif

// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight, rows of d (sum of squares in double, as the CPU reference);
// y f32, or bf16 (rounded) when y_bf16.
void rms_norm(const float* x, const float* weight, float eps, int64_t rows, int64_t d, void* y, bool y_bf16,
              cudaStream_t stream);
// y += x
void add_inplace(float* y, const float* x, int64_t n, cudaStream_t stream);
// y[r, :] += bias
void add_bias(float* y, const float* bias, int64_t rows, int64_t d, cudaStream_t stream);
// out = silu(gate) * up; gate and up f32, or bf16 when in_bf16; out f32, or bf16 when out_bf16 (out may be gate)
void swiglu(const void* gate, const void* up, bool in_bf16, void* out, bool out_bf16, int64_t n, cudaStream_t stream);
// dst[i] = src[rows[i]], rows of row_bytes bytes (embedding lookups and KV gathers); rows outside [0, src_rows)
// are reported as `code` and left unwritten.
void gather_rows(const void* src, int64_t src_rows, const int32_t* rows, int64_t n, int64_t row_bytes, void* dst,
                 IndexErrorCode code, IndexError* err, cudaStream_t stream);
// dst[i] = f32(table[ids[i]]) for a bf16 table [table_rows, d] (the fast mode's embedding).
void gather_bf16_rows_to_f32(const void* table, int64_t table_rows, const int32_t* ids, int64_t n, int64_t d,
                             float* dst, IndexError* err, cudaStream_t stream);
// dst = bf16(src), n rows of d values.
void rows_to_bf16(const float* src, int64_t n, int64_t d, void* dst, cudaStream_t stream);
// One key block of a view, staged by stage_blocks_bf16: rows [first, first + count) of the staged K/V come from
// k/v (f32, `src_rows` rows of d values) at rows[i] (or i when rows is null), their positions from pos.
struct StagedBlock {
  const float* k;
  const float* v;
  const int32_t* rows;
  const int32_t* pos;
  int64_t first, count, src_rows;
};
// Every block of a view into one bf16 K/V [m, d] and its positions [m], in one launch (a view holds a block per
// chunk, so a launch per block and layer would leave the GPU waiting on the host). blocks: `n_blocks` device
// descriptors ordered by `first`; rows of [0, m) no block covers are left as they are. A row outside a block's
// source is reported and left unwritten.
void stage_blocks_bf16(const StagedBlock* blocks, int64_t n_blocks, int64_t m, int64_t d, void* k_dst, void* v_dst,
                       int32_t* pos_dst, IndexError* err, cudaStream_t stream);
// The same into an f32 K/V, the positions only where pos_dst is given (Backend::gather_many).
void stage_blocks_f32(const StagedBlock* blocks, int64_t n_blocks, int64_t m, int64_t d, float* k_dst, float* v_dst,
                      int32_t* pos_dst, IndexError* err, cudaStream_t stream);

// x [n, heads, head_dim] rotated in place to positions pos [n]: the first rotary_dim dims of each head, pairs
// (2i, 2i+1) when adjacent, else (i, i + rotary_dim/2); angles p * inv_freq[i] in double; inverse: -angle.
// cos and sin are multiplied by magnitude (RopeSpec::attn_factor), divided by it for the inverse.
// A negative position is reported and its row left as it was.
// src == x rotates in place; else x = src rotated (the dims past rotary_dim copied). Row r takes position
// pos[r % period] (period n: one each; less: layers of `period` rows rotated alike in one launch).
void rope(const float* src, float* x, const int32_t* pos, int64_t period, int64_t n, int64_t heads,
          int64_t head_dim, int64_t rotary_dim, const float* inv_freq, float magnitude, bool adjacent, bool inverse,
          IndexError* err, cudaStream_t stream);

// The forward rule's attention (DESIGN.md §3) over gathered keys: query row r (position q_pos[r], head h) reads
// every key j with k_pos[j] <= q_pos[r] of kv head h / (n_heads / n_kv_heads); scores scaled, softmax, P·V. A row
// that sees no key outputs zeros.
struct AttentionShape {
  int64_t n = 0, m = 0;  // query rows, keys
  int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
};

// f32 throughout, one block per (row, head), its 4 warps keeping online softmaxes over interleaved keys; with few
// rows the keys are split over `splits` blocks per (row, head) whose partial states a second kernel merges in a
// fixed order (the decode case). When row_max / row_sum are given, each (row, head)'s max score and softmax sum
// land there [n, n_heads] for probe_colsums. `scratch` holds splits * n * n_heads * (head_dim + 2) floats.
int64_t attention_splits(const AttentionShape& shape, int multiprocessors);
void attention(const AttentionShape& shape, const float* q, const int32_t* q_pos, const float* k, const float* v,
               const int32_t* k_pos, float* out, int64_t splits, float* scratch, float* row_max, float* row_sum,
               cudaStream_t stream);

// Merges the partial states of `splits` key splits (scratch as attention() lays it out) into out, and the
// statistics into row_max / row_sum when given; in split order, so the result never depends on timing.
void merge_attention_splits(const AttentionShape& shape, int64_t splits, const float* scratch, float* out,
                            float* row_max, float* row_sum, cudaStream_t stream);

// The same on tensor cores (kernels/flash_attention.cu), for one or several independent sequences in one launch
// (several short ones fill the GPU together where each alone would not): every sequence's keys lie in one bf16 K
// and V [keys, n_kv_heads, head_dim] with their positions, Q in f32 rounded to bf16, f32 softmax; head_dim 64 or
// 128 (the heads and scale from `heads`; its n and m are unused). `work`: flash_attention_work_bytes of device
// scratch for the descriptors. With splits > 1 (flash_attention_splits: few rows over many keys; one sequence
// only) the key tiles are split over blocks whose states go to scratch (splits * n * n_heads * (head_dim + 2)
// floats) and are merged.
struct FlashSequence {
  const float* q;        // [n, n_heads, head_dim]
  const int32_t* q_pos;  // [n]
  float* out;            // [n, n_heads, head_dim]
  float* row_max;        // null, or [n, n_heads]: each row's max score and softmax sum, for probe_colsums
  float* row_sum;
  int64_t n = 0;           // query rows
  int64_t k_first = 0, m = 0;  // its keys: [k_first, k_first + m) of the call's
  int64_t tile_first = 0;  // set by flash_attention: its first 64-key tile among the call's
};
bool flash_attention_supports(int64_t head_dim);
int64_t flash_attention_blocks(const AttentionShape& shape);  // blocks of one sequence's rows, all heads, unsplit
int64_t flash_attention_splits(const AttentionShape& shape, int multiprocessors);
int64_t flash_attention_work_bytes(const FlashSequence* seqs, int64_t n_seqs);
void flash_attention(const AttentionShape& heads, const FlashSequence* seqs, int64_t n_seqs, const void* k_bf16,
                     const void* v_bf16, const int32_t* k_pos, void* work, int64_t splits, float* scratch,
                     cudaStream_t stream);

// Where a split kernel leaves its partial states: [splits][n][n_heads] maxima and sums, [splits][n][n_heads][dim]
// unnormalised P·V.
struct KeySplits {
  int64_t tiles_per_split = 0;
  float* max = nullptr;
  float* sum = nullptr;
  float* acc = nullptr;
};

// The probe: colsum[j] += sum over the set of probe rows r (in order, repeats once) and heads h (in order) of row r's softmax weight on key
// j, exp(q[r,h]·k[j] * scale - row_max[r,h]) / row_sum[r,h], for keys it reads. In f32 and a fixed order: the
// same sums on every run. Probe rows outside [0, n) are reported.
void probe_colsums(const AttentionShape& shape, const float* q, const int32_t* q_pos, const float* k,
                   const int32_t* k_pos, const int32_t* probe_rows, int64_t n_probe, const float* row_max,
                   const float* row_sum, float* colsum, IndexError* err, cudaStream_t stream);

}  // namespace kvf::cuda
