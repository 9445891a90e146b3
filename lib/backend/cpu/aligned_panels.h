// 64-byte aligned storage for the attention kernels' K and V panels (the micro-kernels' aligned loads and stores),
// left uninitialised: every value is packed before it is read, and zeroing a call's panels would cost about as
// much as packing them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace kvf::cpu {

template <typename T>
struct AlignedPanels {
  std::unique_ptr<T[]> storage;
  T* base = nullptr;
  void resize(size_t n) {
    constexpr size_t kSlack = 64 / sizeof(T);
    storage.reset(new T[n + kSlack]);
    const size_t misaligned = reinterpret_cast<uintptr_t>(storage.get()) % 64 / sizeof(T);
    base = storage.get() + (kSlack - misaligned) % kSlack;
  }
};

}  // namespace kvf::cpu
