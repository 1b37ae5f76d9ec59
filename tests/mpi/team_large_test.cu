// The large tier of the team algorithms (label large): more than 2^31 bytes in one message
// between ranks, and displacements past INT_MAX, under mpirun with 2 and 3 ranks on one GPU.
// Each test states the per-rank and per-message sizes it moves, skips (saying why) when the
// GPU or the host has too little free memory for every rank, and checks its result with a
// cheap invariant on the device (a sorted check, sums and xors of the elements, equal
// against a vector computed from global indices) instead of a host copy.

#include "support.hpp"
#include "team_support.hpp"

#include <multigpu/team/team_algorithms.hpp>

#include <cuda/functional>
#include <cuda/std/functional>

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace mg = multigpu;
using namespace mg_test;

namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

constexpr double gib = double(1u << 30);

/// Every rank has `device_bytes` of free GPU memory (all ranks share the GPU of the one-GPU
/// machine, so the free memory must hold every rank's share) and `host_bytes` of free host
/// memory; otherwise `why` says what is short.
bool room_for(std::size_t device_bytes, std::size_t host_bytes, std::string& why) {
  // The device pool keeps what earlier tests freed until it is trimmed.
  {
    const mg::device_group g({test_device()});
    g.synchronize();
    g.pool(0).trim(0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) free = 0;
  const int ranks = world_size();
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const std::size_t host_free = static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
  int ok = free > device_bytes * ranks + (std::size_t{2} << 30) && host_free > host_bytes * ranks + (std::size_t{4} << 30);
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "needs %.1f GiB of free GPU memory and %.1f GiB of free host memory for %d ranks (this rank sees "
                  "%.1f and %.1f)",
                  device_bytes * ranks / gib + 2, host_bytes * ranks / gib + 4, ranks, free / gib, host_free / gib);
    why = text;
  }
  return all != 0;
}

__host__ __device__ inline u32 mix(u64 i) {
  u64 x = i * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return static_cast<u32>(x ^ (x >> 32));
}

/// Key of global index i in a vector of `per_rank` elements a rank: rank r's keys lie in band
/// (ranks - 1 - r), so a sort sends every element of rank r to rank ranks - 1 - r.
struct banded_key {
  u64 per_rank;
  int ranks;
  __host__ __device__ u32 operator()(u32 i) const { return (*this)(static_cast<u64>(i)); }
  __host__ __device__ u32 operator()(u64 i) const {
    const u64 band = static_cast<u64>(ranks - 1) - i / per_rank;
    return static_cast<u32>(band << 30) | (mix(i) & ((1u << 30) - 1));
  }
};
struct widen {
  __host__ __device__ u64 operator()(u32 x) const { return x; }
};
struct mixed {
  __host__ __device__ u32 operator()(u32 i) const { return mix(i); }
  __host__ __device__ u32 operator()(u64 i) const { return mix(i); }
};

/// Sum and xor of a team vector's elements, as two team reductions.
struct digest {
  u64 sum, bits;
  friend bool operator==(const digest&, const digest&) = default;
};
digest digest_of(const mg::team_vector<u32>& v) {
  return {mg::reduce(v, u64{0}), mg::reduce(v, u32{0}, cuda::std::bit_xor<>{})};
}

void say(const char* what, std::size_t per_rank_bytes, std::size_t message_bytes) {
  if (rank0())
    std::printf("%s on %d ranks: up to %.2f GiB a rank, %.2f GiB (%zu bytes) in one message\n", what, world_size(),
                per_rank_bytes / gib, message_bytes / gib, message_bytes);
}

// Rank r's 2^29 + 4099 keys (2 GiB + 16 KiB) all go to rank ranks - 1 - r: rank 0 sends more
// than 2^31 bytes to the last rank in one block.
constexpr u64 sort_keys = (u64{1} << 29) + 4099;

TEST(TeamLarge, SortSendsMoreThan2GiBInOneMessage) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  std::string why;
  if (!room_for(4 * sort_keys * sizeof(u32), 2 * sort_keys * sizeof(u32), why)) GTEST_SKIP() << why;
  const mg::team t = world();
  const mg::device_group g({test_device()});
  mg::team_vector<u32> keys(t, sort_keys, g);
  mg::iota(keys, u32{0});
  const banded_key key{sort_keys, t.size()};
  mg::transform(keys, keys, key);  // global indices fit u32 up to 7 ranks of this size
  const digest before = digest_of(keys);
  mg::sort(keys);
  EXPECT_TRUE(mg::is_sorted(keys));
  EXPECT_EQ(digest_of(keys), before);
  EXPECT_EQ(keys.local_size(), sort_keys);
  say("team sort", 4 * sort_keys * sizeof(u32), sort_keys * sizeof(u32));
}

TEST(TeamLarge, SortByKeySendsMoreThan2GiBInOneMessage) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  std::string why;
  if (!room_for(7 * sort_keys * sizeof(u32), 4 * sort_keys * sizeof(u32), why)) GTEST_SKIP() << why;
  const mg::team t = world();
  const mg::device_group g({test_device()});
  const banded_key key{sort_keys, t.size()};
  mg::team_vector<u32> values(t, sort_keys, g), keys(t, sort_keys, g);
  mg::iota(values, u32{0});
  mg::transform(values, keys, key);
  const digest keys_before = digest_of(keys), values_before = digest_of(values);
  mg::sort_by_key(keys, values);
  EXPECT_TRUE(mg::is_sorted(keys));
  EXPECT_EQ(digest_of(keys), keys_before);
  EXPECT_EQ(digest_of(values), values_before);
  // Each value still sits beside its own key.
  mg::team_vector<u32> expected(t, sort_keys, g);
  mg::transform(values, expected, key);
  EXPECT_TRUE(mg::equal(keys, expected));
  say("team sort_by_key", 7 * sort_keys * sizeof(u32), sort_keys * sizeof(u32));
}

TEST(TeamLarge, SkewedRebalanceAndCopyPastIntDisplacements) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  // All on rank 0: 3.3 GB on 3 ranks (blocks of 1.1 GB from displacements past INT_MAX), 4.3 GB
  // on 2 (one block of 2.15 GB, more than 2^31 bytes).
  const u64 total = world_size() == 2 ? (u64{1} << 30) + (u64{1} << 20) : u64{825'000'000};
  std::string why;
  if (!room_for(3 * total * sizeof(u32) / 2, total * sizeof(u32), why)) GTEST_SKIP() << why;
  const mg::team t = world();
  const mg::device_group g({test_device()});
  mg::team_vector<u32> skewed(t, t.rank() == 0 ? total : 0, g);
  mg::iota(skewed, u32{0});
  {
    const mg::team_vector<u32> even = mg::rebalance(skewed);
    mg::team_vector<u32> expected = mg::team_vector<u32>::block(t, total, g);
    mg::iota(expected, u32{0});
    EXPECT_EQ(even.local_size(), expected.local_size());
    EXPECT_TRUE(mg::equal(even, expected));
  }
  {
    mg::team_vector<u32> even = mg::team_vector<u32>::block(t, total, g);
    mg::copy(skewed, even);
    mg::team_vector<u32> expected = mg::team_vector<u32>::block(t, total, g);
    mg::iota(expected, u32{0});
    EXPECT_TRUE(mg::equal(even, expected));
  }
  say("team rebalance and copy of a skewed vector", total * sizeof(u32), total * sizeof(u32) / world_size());
}

// Rank 0's map points into the last rank's part only: the requests (8-byte indices) from
// rank 0 to the last rank are more than 2^31 bytes.
constexpr u64 map_entries = (u64{1} << 28) + 1000;

/// base + (map_entries - 1 - i): the last rank's part in reverse.
struct reversed_from {
  u64 base;
  __host__ __device__ u64 operator()(u64 i) const { return base + (map_entries - 1 - i); }
};
/// What scatter writes at the last rank's j: the value 7 + i of rank 0's i = map_entries - 1 - j.
struct scattered_value {
  __host__ __device__ u32 operator()(u32 j) const { return static_cast<u32>(7 + (map_entries - 1 - j)); }
};

TEST(TeamLarge, GatherAndScatterRequestsPast2GiB) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  std::string why;
  // Host: the indices, routes and requests, about 40 bytes an entry on rank 0.
  if (!room_for(4 * map_entries * sizeof(u32), 48 * map_entries, why)) GTEST_SKIP() << why;
  const mg::team t = world();
  const mg::device_group g({test_device()});
  const int last = t.size() - 1;
  const bool asks = t.rank() == 0, owns = t.rank() == last;
  // input: map_entries elements on the last rank, mix(global index).
  mg::team_vector<u32> input(t, owns ? map_entries : 0, g);
  mg::iota(input, u32{0});
  mg::transform(input, input, mixed{});
  const u64 base = input.layout().segment_offset(static_cast<std::size_t>(last));  // 0: the others hold none
  {
    // gather: rank 0 asks for every element of the last rank, in reverse.
    mg::team_vector<u64> map(t, asks ? map_entries : 0, g);
    mg::iota(map, u64{0});
    mg::transform(map, map, reversed_from{base});
    mg::team_vector<u32> out(t, asks ? map_entries : 0, g);
    mg::gather(map, input, out);
    mg::team_vector<u32> expected(t, asks ? map_entries : 0, g);
    mg::transform(map, expected, mixed{});
    EXPECT_TRUE(mg::equal(out, expected));
  }
  {
    // scatter: rank 0's elements go to the last rank's part, in reverse.
    mg::team_vector<u64> map(t, asks ? map_entries : 0, g);
    mg::iota(map, u64{0});
    mg::transform(map, map, reversed_from{base});
    mg::team_vector<u32> values(t, asks ? map_entries : 0, g);
    mg::iota(values, u32{7});
    mg::team_vector<u32> out(t, owns ? map_entries : 0, g);
    mg::scatter(values, map, out);
    mg::team_vector<u32> expected(t, owns ? map_entries : 0, g);
    mg::iota(expected, u32{0});
    mg::transform(expected, expected, scattered_value{});
    EXPECT_TRUE(mg::equal(out, expected));
  }
  say("team gather and scatter", 4 * map_entries * sizeof(u32), map_entries * sizeof(u64));
}

TEST(TeamLarge, ToVectorAtRootPast2GiB) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  std::string why;
  if (!room_for(sort_keys * sizeof(u32), 2 * sort_keys * sizeof(u32), why)) GTEST_SKIP() << why;
  const mg::team t = world();
  const mg::device_group g({test_device()});
  const int last = t.size() - 1;
  // The last rank holds 2 GiB + 16 KiB; the others 1000 elements each.
  mg::team_vector<u32> v(t, t.rank() == last ? sort_keys : 1000, g);
  mg::iota(v, u32{0});
  const std::vector<u32> all = mg::to_vector(v, 0);
  if (t.rank() == 0) {
    ASSERT_EQ(all.size(), v.size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < all.size(); ++i) wrong += all[i] != static_cast<u32>(i);
    EXPECT_EQ(wrong, 0u);
  } else {
    EXPECT_TRUE(all.empty());
  }
  say("team to_vector at rank 0", sort_keys * sizeof(u32), sort_keys * sizeof(u32));
}

}  // namespace
