#pragma once
// A contiguous run of a range's elements inside one segment: what a distribution splits a
// range into, and what redistribution plans move between.

#include <cstddef>

namespace multigpu {

struct piece {
  std::size_t slot;          ///< which segment (slot) holds it
  std::size_t local_offset;  ///< element offset inside that segment
  std::size_t count;         ///< number of elements
  friend bool operator==(const piece&, const piece&) = default;
};

}  // namespace multigpu
