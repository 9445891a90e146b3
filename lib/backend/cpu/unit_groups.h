// What the formats' walk (int_dot_formats.inc) hands its sinks with each group of up to eight units: their scales,
// and what kind of units they are. Kept apart from the walk because the sinks, defined before it is included, name
// these types.
#pragma once
#include <immintrin.h>

#include <cstring>

namespace kvf::cpu {

// The scales of a group of units, lane j for unit j (lanes past the group's last unit are 0). s1 is set only for
// UnitsInHalves, c only for UnitsWithMin. Vectors, not arrays: a kernel that stored them and read one lane back a
// unit at a time stalled on every read (no store forwarding from a vector store to a later part of it).
struct GroupScales {
  __m256 s0, s1, c;
};

template <bool kHalvesValue, bool kMinValue>
struct UnitKind {
  static constexpr bool kHalves = kHalvesValue;  // a scale per half of 16 values (s1)
  static constexpr bool kMin = kMinValue;        // a min c per unit
};
using PlainUnits = UnitKind<false, false>;
using UnitsWithMin = UnitKind<false, true>;
using UnitsInHalves = UnitKind<true, false>;

// A group's scales as arrays, for the sinks that store them unit by unit (a 16-bit panel's column, the column
// kernel's chunk): s1 holds s0 where the halves share one.
struct GroupScaleArrays {
  alignas(32) float s0[8];
  alignas(32) float s1[8];
  alignas(32) float c[8];

  template <class Kind>
  void take(const GroupScales& g) {
    std::memcpy(s0, &g.s0, sizeof s0);
    std::memcpy(s1, Kind::kHalves ? &g.s1 : &g.s0, sizeof s1);
    if constexpr (Kind::kMin) std::memcpy(c, &g.c, sizeof c);
  }
};

}  // namespace kvf::cpu
