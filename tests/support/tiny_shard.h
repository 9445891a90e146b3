// The KV shard layouts the store tests write by hand: every layer stored (no sharing), a few heads of a few values.
#pragma once
#include <cstdint>
#include <numeric>
#include <string>

#include "store/kv_shard.h"

namespace kvf::test {

inline KvShardLayout tiny_shard_layout(const std::string& mode, uint64_t fingerprint, int layers, int kv_heads,
                                       int head_dim, KvDtype dtype = KvDtype::F16) {
  KvShardLayout l;
  l.mode = mode;
  l.model_fingerprint = fingerprint;
  l.n_layers = l.stored_layers = layers;
  l.layer_map.resize((size_t)layers);
  std::iota(l.layer_map.begin(), l.layer_map.end(), 0);
  l.kv_heads = kv_heads;
  l.head_dim = head_dim;
  l.dtype = dtype;
  return l;
}

}  // namespace kvf::test
