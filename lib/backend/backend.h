// The op interface every compute backend implements (DESIGN.md §9). Tensors passed in belong to this backend;
// nothing here assumes host memory: host data crosses only through copy_from_host / copy_to_host.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace kvf {

// Rotary embedding parameters. Pairing: adjacent rotates (x[2i], x[2i+1]) (GGUF llama, whose converter permutes
// Q/K); half_split rotates (x[i], x[i+d/2]) (HF layout, qwen2 / NeoX).
enum class RopePairing : uint8_t { Adjacent, HalfSplit };

struct RopeSpec {
  int rotary_dim = 0;      // leading dims of each head that rotate (the rest pass through)
  RopePairing pairing = RopePairing::Adjacent;
  std::shared_ptr<const std::vector<float>> inv_freq;  // rotary_dim / 2 frequencies, scaling already applied
  // cos and sin of every position below table_positions: [position][rotary_dim / 2][2], so hot loops skip the
  // trigonometry; positions past it are computed from inv_freq.
  std::shared_ptr<const std::vector<float>> cos_sin;
  int32_t table_positions = 0;
  // Magnitude every rotation multiplies cos and sin by (YaRN's attention scaling; 1 for every other kind), in the
  // table and in positions computed past it alike; the inverse rotation divides by it.
  float attn_factor = 1.0f;
};

// One sequence's attention over already gathered keys: causality by position, scores scaled, softmax, P·V.
struct AttentionArgs {
  Tensor q;       // f32 [n, n_heads, head_dim], RoPE applied
  Tensor q_pos;   // i32 [n]
  Tensor k;       // f32 [m, n_kv_heads, head_dim], RoPE applied
  Tensor v;       // f32 [m, n_kv_heads, head_dim]
  Tensor k_pos;   // i32 [m]; query at p reads keys with position <= p
  Tensor out;     // f32 [n, n_heads, head_dim]
  float scale = 1.0f;
  // The fast compute mode: Q, K, the softmax weights and V may be rounded to bf16 (sums stay f32). A backend
  // without such a kernel computes in f32.
  bool bf16_inputs = false;
  // Optional probe: probe_colsum[j] += sum over probe_rows r and heads h of softmax weight P[r, h, j].
  Tensor probe_rows;    // i32 [r] indices into q rows (undefined: no probe)
  Tensor probe_colsum;  // f32 [m]
};

// Keys of one attention call read where they lie, with no staging copy: rows of a K/V pair (all of them, or the
// listed ones), each at its position.
struct KeyBlock {
  Tensor k, v;  // f32 [rows, n_kv_heads, head_dim], RoPE applied to k
  Tensor rows;  // i32 [count]: the rows read, in order (undefined: every row)
  Tensor pos;   // i32 [count]: the position of each row read
};

// Rows of one K/V source copied to rows [first, first + count) of a destination pair (Backend::gather_many).
struct RowGather {
  Tensor k, v;  // f32 [source rows, n_kv_heads, head_dim]
  Tensor rows;  // i32 [count]: the source rows, in order (undefined: its first `count` rows)
  Tensor pos;   // i32 [count]: their positions, for a destination of positions (else unused)
  int64_t first = 0, count = 0;
};

// The CPU backend's attention_blocks reads the keys in place in f32 for up to this many query rows (decoding
// steps, short questions); more rows, with bf16_inputs, go to its bf16 kernel, also in place.
inline constexpr int64_t kBlockAttentionFewRows = 16;

// Batch invariance of a matmul: Invariant asks that each row of x get the result it gets in a call of its own. A
// decoding step's rows are separate sequences, and a sequence must decode to the same tokens beside others as alone;
// a backend whose kernel for a row depends on how many rows come with it (the CPU's few-row paths against its
// panels) then takes a row-by-row path. Shared lets the rows share whatever path is fastest for their count. The
// CUDA backend's GEMMs are not batch-invariant and take Shared whatever is asked.
enum class Batching : uint8_t { Shared, Invariant };

struct BlockAttentionArgs {
  Tensor q;      // f32 [n, n_heads, head_dim], RoPE applied
  Tensor q_pos;  // i32 [n]
  std::vector<KeyBlock> blocks;
  Tensor out;    // f32 [n, n_heads, head_dim]
  float scale = 1.0f;
  bool bf16_inputs = false;  // as AttentionArgs::bf16_inputs
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual Device device() const = 0;

  // Whether matmul_nt and embedding take weights of this dtype with rows of row_elems values as they are (f32
  // always); a model loader keeps weights in their stored format where the backend takes it, else f32.
  virtual bool accepts_weights(DType dtype, int64_t row_elems) const {
    (void)row_elems;
    return dtype == DType::F32;
  }

  // A weight that only matmul_nt reads (never an embedding table), from host bytes in dtype's layout, in the layout
  // this backend multiplies fastest (the CPU interleaves sixteen rows of some block formats for its column kernel,
  // straight from the bytes: backend/cpu/interleaved_weights.h). The default copies the bytes as they are.
  virtual Tensor matmul_weight(DType dtype, const Shape& shape, const void* bytes) {
    Tensor w = empty(dtype, shape);
    copy_from_host(w, bytes, w.nbytes());
    return w;
  }

  // Waits until every op queued so far has finished (a no-op for a synchronous backend).
  virtual void synchronize() {}
  // Where a loader thread puts chunk KV while this backend computes: a backend whose uploads and reorders overlap
  // this one's work (a CUDA backend's second stream); its tensors are this backend's to read once its
  // synchronize() has returned. This default is the backend itself (the CPU's ops run where they are called).
  virtual Backend& loading_lane() { return *this; }

  virtual Tensor empty(DType dtype, const Shape& shape) = 0;
  virtual void copy_from_host(Tensor& dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(const Tensor& src, void* dst, size_t bytes) = 0;
  virtual void copy(const Tensor& src, Tensor& dst) = 0;

  // y[n, m] = x[n, k] · w[m, k]^T; w f32 or a dtype the backend accepts; x and y f32 or matmul_input_dtype(w)
  // (a bf16 y is the product rounded); batching as Batching says
  virtual void matmul_nt(const Tensor& x, const Tensor& w, Tensor& y, Batching batching = Batching::Shared) = 0;
  // The dtype in which a matmul over w reads its input at no conversion: a GPU's bf16 GEMMs read bf16, so the
  // ops feeding them (rms_norm's y, swiglu's out, which then may take this dtype) write it directly instead of
  // f32 rounded in a second pass. Default f32.
  virtual DType matmul_input_dtype(const Tensor& w) const {
    (void)w;
    return DType::F32;
  }
  // ys[i] = x · ws[i]^T for every i (Q, K and V of one input; gate and up): what separate matmul_nt calls give,
  // in one pass where the backend can share the work.
  virtual void matmul_nt_many(const Tensor& x, const std::vector<const Tensor*>& ws, const std::vector<Tensor*>& ys,
                              Batching batching = Batching::Shared) {
    for (size_t i = 0; i < ws.size(); ++i) matmul_nt(x, *ws[i], *ys[i], batching);
  }
  // matmul_nt_many, then add_bias(*ys[i], *biases[i]) for every bias given (null: none). A backend may add them
  // in its matmuls' epilogue (a GPU's: no second pass over the products).
  virtual void matmul_nt_many_bias(const Tensor& x, const std::vector<const Tensor*>& ws,
                                   const std::vector<const Tensor*>& biases, const std::vector<Tensor*>& ys,
                                   Batching batching = Batching::Shared) {
    matmul_nt_many(x, ws, ys, batching);
    for (size_t i = 0; i < biases.size(); ++i)
      if (biases[i] != nullptr) add_bias(*ys[i], *biases[i]);
  }
  // y = x / rms(x) * weight, per row (x f32; y f32, or the matmul_input_dtype of the weights it feeds)
  virtual void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) = 0;
  // x = (x - mean) / sqrt(var + eps) * gamma + beta, per row (f32; the BERT encoder's LayerNorm). This default
  // computes on the host (through a copy on a device backend: lib/backend/encoder_ops.cpp).
  virtual void layer_norm(Tensor& x, const Tensor& gamma, const Tensor& beta, float eps);
  // x = gelu(x + bias), the exact (erf) GELU, per row (f32). Computed on the host like layer_norm.
  virtual void bias_gelu(Tensor& x, const Tensor& bias);
  // y += x
  virtual void add_inplace(Tensor& y, const Tensor& x) = 0;
  // y[r, :] += bias for every row r
  virtual void add_bias(Tensor& y, const Tensor& bias) = 0;
  // out = silu(gate) * up (gate, up and out each f32 or a matmul_input_dtype; out may be gate)
  virtual void swiglu(const Tensor& gate, const Tensor& up, Tensor& out) = 0;
  // out[i] = table[ids[i]] (f32 out; table f32 or a dtype the backend accepts)
  virtual void embedding(const Tensor& table, const Tensor& ids, Tensor& out) = 0;
  // dst[i] = src[rows[i]] along dimension 0
  virtual void gather_rows(const Tensor& src, const Tensor& rows, Tensor& dst) = 0;
  // Each gather's K and V rows into k_dst and v_dst (f32), and its positions into *pos_dst when given (i32); no
  // two gathers write the same rows, rows no gather names are left as they are. This default makes a gather_rows
  // (or copy) call per source; a backend may do all of them in one pass (a view stages tens of chunks per layer).
  virtual void gather_many(const std::vector<RowGather>& gathers, Tensor& k_dst, Tensor& v_dst, Tensor* pos_dst);
  // x [n, heads, head_dim] rotated in place to positions pos [n]; inverse rotates back (removes RoPE).
  virtual void rope_inplace(Tensor& x, const Tensor& pos, const RopeSpec& spec, bool inverse = false) = 0;
  // dst = src rotated to positions pos (Decoder::with_roped_keys' rotated copy of a stored chunk's keys, every
  // layer in one call): pos holds a position for each of the first pos.numel() rows, and the rows after them
  // repeat that list (src's rows are layers of pos.numel() rows each). This default copies, then rotates each
  // repetition in place; a backend may do all of it in one pass.
  virtual void rope_into(const Tensor& src, Tensor& dst, const Tensor& pos, const RopeSpec& spec);
  virtual void attention(AttentionArgs& args) = 0;
  // attention() over the blocks' keys in order, for few query rows (decoding, short questions) over a long view:
  // the same result up to the order of float sums. This default stages the blocks into one K/V first; a backend
  // that can read them in place overrides it.
  virtual void attention_blocks(const BlockAttentionArgs& args);
  // attention_blocks of several independent sequences (a ragged batch's, one layer): the same results as one call
  // each, in order. This default makes those calls; a backend may run them together (short sequences that alone
  // would leave a GPU idle).
  virtual void attention_blocks_many(const std::vector<BlockAttentionArgs>& seqs);
};

// The CPU backend (BLAS sgemm + TBB), always available.
std::unique_ptr<Backend> make_cpu_backend();

// The CUDA backend (lib/backend/cuda, kernels/): present when built with KVF_CUDA and a GPU is visible. When not,
// cuda_device_available says why and make_cuda_backend throws kvf::Error with the same reason.
bool cuda_device_available(std::string* why = nullptr);
std::unique_ptr<Backend> make_cuda_backend();

// By name, as the CLIs' --backend takes it: "cpu" or "cuda". Throws kvf::Error naming a bad value.
std::unique_ptr<Backend> make_backend(const std::string& name);

}  // namespace kvf
