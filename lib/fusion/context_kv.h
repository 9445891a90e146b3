// The K and V every context token had when a fused prefill finished: its recomputed row where the method
// recomputed it, its stored row otherwise (the rows decoding attends to). Eval compares these across methods
// (FusionRAG eq. 7: per-layer KV deviation from full attention).
#pragma once
#include "fusion/fused_prefill.h"
#include "store/chunk_kv.h"

namespace kvf {

// Host rows in context order at their prompt positions, every model layer. A token with neither a stored nor a
// computed row (dropped by anchor compression) has no row.
HostKv gather_context_kv(Backend& backend, const FusedPrefill& fused, const RagLayout& layout);

}  // namespace kvf
