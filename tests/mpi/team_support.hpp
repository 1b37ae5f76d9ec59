#pragma once
// Shared by the team tests: the MPI team, named rank layouts (awkward local sizes), local
// groups (one slot, or two slots of one GPU), and vectors with a known value at each global
// index beside their host reference.

#include "support.hpp"

#include <multigpu/comm.hpp>
#include <multigpu/team/team_algorithms.hpp>
#include <multigpu/team/team_vector.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mg_test {

inline multigpu::team world() { return multigpu::team(std::make_shared<multigpu::mpi_communicator>()); }

// Named layouts: each rank's local size as a function of (rank, ranks).
struct layout {
  const char* name;
  std::function<std::size_t(int, int)> local_size;
};
inline const std::vector<layout>& layouts() {
  static const std::vector<layout> all{
      {"empty", [](int, int) { return std::size_t{0}; }},
      {"one element on rank 0", [](int r, int) { return std::size_t(r == 0 ? 1 : 0); }},
      {"one each", [](int, int) { return std::size_t{1}; }},
      {"primes", [](int r, int) { const std::size_t p[] = {7, 13, 2, 31, 5}; return p[r % 5]; }},
      {"gaps", [](int r, int) { return std::size_t(r % 2 == 1 ? 0 : 11 + 2 * r); }},
      {"all on the last rank", [](int r, int n) { return std::size_t(r == n - 1 ? 1009 : 0); }},
      {"large uneven", [](int r, int) { return std::size_t(40009 + 17 * r); }},
  };
  return all;
}

inline std::vector<multigpu::device_group> groups() {
  const int d = test_device();
  return {multigpu::device_group({d}), multigpu::device_group({d, d})};
}

inline std::string describe(const layout& l, const multigpu::device_group& g) {
  return std::string(l.name) + ", " + std::to_string(g.size()) + " local slot(s), " + std::to_string(world_size()) +
         " rank(s)";
}

// The vector of this layout on this team with value(i) at global index i.
template <class T, class Value>
multigpu::team_vector<T> make(const multigpu::team& t, const layout& l, const multigpu::device_group& g, Value value) {
  multigpu::team_vector<T> v(t, l.local_size(t.rank(), t.size()), g);
  std::vector<T> mine(v.local_size());
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = value(v.offset() + i);
  multigpu::detail::vector_access::upload(v.local(), 0, mine.data(), mine.size());
  return v;
}

template <class T, class Value>
std::vector<T> reference(std::size_t n, Value value) {
  std::vector<T> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = value(i);
  return all;
}

/// Rank 0 calls count while the others call reduce: every rank must get comm_error naming the
/// mismatch, nobody hangs, and the team stays in step for the next call. (Team sources are CUDA
/// translation units, so this helper may use the team algorithms.)
inline void expect_mismatch_detected(const multigpu::team& t) {
  auto v = multigpu::team_vector<int>::block(t, 100, groups()[0]);
  multigpu::iota(v, 0);
  try {
    if (t.rank() == 0) multigpu::count(v, 3);
    else multigpu::reduce(v);
    ADD_FAILURE() << "no mismatch reported";
  } catch (const multigpu::comm_error& e) {
    EXPECT_NE(std::string(e.what()).find("mismatch"), std::string::npos) << e.what();
  }
  EXPECT_EQ(multigpu::reduce(v), 4950) << "the team stays in step";
}

}  // namespace mg_test
