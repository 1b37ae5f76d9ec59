// The MPI communicator past MPI's int counts: every call moves any size_t byte count by
// cutting it into messages of at most max_message_bytes(). Host buffers only, so it runs
// under mpirun on a machine without a GPU (label mpi;cpu).
//
// With a limit of a few bytes, the cutting is exercised on small data against values every
// rank computes for itself. With MULTIGPU_LARGE_MESSAGES=1 (label large) the default 1 GiB
// limit is crossed for real: blocks of more than 2^31 bytes in all_to_all_v, send_recv,
// all_gather and broadcast. Its main is tests/mpi/main.cpp, built without the GPU check.

#include <mpi.h>

#include <multigpu/comm/mpi_communicator.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace mg = multigpu;

namespace {

/// The byte a rank writes at position i of its block for rank `to`.
std::uint8_t pattern(int from, int to, std::size_t i) {
  return static_cast<std::uint8_t>((from * 131 + to * 31 + i * 7 + i / 251) & 0xff);
}

/// Block sizes that are awkward for a limit of `limit` bytes: empty, one byte, exactly the
/// limit, one over, several pieces and a remainder.
std::size_t block_bytes(int from, int to, std::size_t limit) {
  const std::size_t sizes[] = {0, 1, limit, limit + 1, 3 * limit + 2, 5 * limit};
  return sizes[static_cast<std::size_t>(from * 2 + to * 3) % 6];
}

class MpiMessages : public testing::TestWithParam<mg::mpi_wait> {};

TEST_P(MpiMessages, AllToAllVInPieces) {
  for (std::size_t limit : {1u, 7u, 64u}) {
    mg::mpi_communicator comm;
    comm.set_waiting(GetParam());
    comm.set_max_message_bytes(limit);
    const int me = comm.rank(), n = comm.size();
    std::vector<std::size_t> sc(n), sd(n), rc(n), rd(n);
    std::size_t sent = 0, received = 0;
    // Gaps of 3 bytes between blocks: the bytes between must keep their values.
    for (int r = 0; r < n; ++r) {
      sc[r] = block_bytes(me, r, limit);
      sd[r] = sent;
      sent += sc[r] + 3;
      rc[r] = block_bytes(r, me, limit);
      rd[r] = received;
      received += rc[r] + 3;
    }
    std::vector<std::uint8_t> send(sent, 0), recv(received, 0xee), expected(received, 0xee);
    for (int r = 0; r < n; ++r)
      for (std::size_t i = 0; i < sc[r]; ++i) send[sd[r] + i] = pattern(me, r, i);
    for (int r = 0; r < n; ++r)
      for (std::size_t i = 0; i < rc[r]; ++i) expected[rd[r] + i] = pattern(r, me, i);
    comm.all_to_all_v(mg::host_memory, send.data(), std::span<const std::size_t>(sc), std::span<const std::size_t>(sd),
                      recv.data(), std::span<const std::size_t>(rc), std::span<const std::size_t>(rd));
    EXPECT_EQ(recv, expected) << "limit " << limit;
  }
}

TEST_P(MpiMessages, SendRecvRingInPieces) {
  mg::mpi_communicator comm;
  comm.set_waiting(GetParam());
  comm.set_max_message_bytes(5);
  const int me = comm.rank(), n = comm.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  for (std::size_t bytes : {0u, 1u, 5u, 6u, 23u}) {
    std::vector<std::uint8_t> out(bytes), in(bytes, 0), expected(bytes);
    for (std::size_t i = 0; i < bytes; ++i) {
      out[i] = pattern(me, right, i);
      expected[i] = pattern(left, me, i);
    }
    comm.send_recv(out.data(), bytes, right, in.data(), bytes, left);
    EXPECT_EQ(in, expected) << bytes << " bytes";
  }
}

TEST_P(MpiMessages, CollectivesInPieces) {
  mg::mpi_communicator comm;
  comm.set_waiting(GetParam());
  comm.set_max_message_bytes(16);
  const int me = comm.rank(), n = comm.size();
  // all_gather of 13 bytes a rank: pieces of 16 / n bytes, each rank's block in several.
  std::vector<std::uint8_t> mine(13), all(13 * n, 0), expected;
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = pattern(me, 0, i);
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < 13; ++i) expected.push_back(pattern(r, 0, i));
  comm.all_gather(mg::host_memory, mine.data(), all.data(), mine.size());
  EXPECT_EQ(all, expected);
  // all_reduce of 1001 values: pieces of two int64 elements.
  std::vector<std::int64_t> values(1001), sums(1001);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int64_t>(i) * (me + 1);
  comm.all_reduce(mg::host_memory, values.data(), sums.data(), values.size(), mg::reduce_op::sum);
  for (std::size_t i = 0; i < sums.size(); ++i)
    ASSERT_EQ(sums[i], static_cast<std::int64_t>(i) * n * (n + 1) / 2) << "element " << i;
  comm.all_reduce(mg::host_memory, values.data(), values.data(), values.size(), mg::reduce_op::max);  // in place
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(values[i], static_cast<std::int64_t>(i) * n);
  // broadcast of 100 bytes from the last rank.
  std::vector<std::uint8_t> data(100, 0), root_data(100);
  for (std::size_t i = 0; i < data.size(); ++i) root_data[i] = pattern(n - 1, 9, i);
  if (me == n - 1) data = root_data;
  comm.broadcast(mg::host_memory, data.data(), data.size(), n - 1);
  EXPECT_EQ(data, root_data);
}

TEST_P(MpiMessages, DifferentlyCutMessageIsAnError) {
  mg::mpi_communicator comm;
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  comm.set_waiting(GetParam());
  comm.set_max_message_bytes(4);
  // Rank 0 sends 10 bytes (pieces 4, 4, 2); rank 1 expects 12 (4, 4, 4): its last piece is
  // the sender's last one, of another size.
  std::vector<std::uint8_t> buffer(12, 1);
  if (comm.rank() == 0) comm.send(buffer.data(), 10, 1);
  if (comm.rank() == 1) EXPECT_THROW(comm.recv(buffer.data(), 12, 0), mg::comm_error);
  comm.barrier();
}

TEST(MpiMessageLimit, BadLimitIsATypedError) {
  mg::mpi_communicator comm;
  const std::size_t before = comm.max_message_bytes();  // 1 GiB, or MULTIGPU_MPI_MAX_MESSAGE
  EXPECT_THROW(comm.set_max_message_bytes(0), std::invalid_argument);
  EXPECT_THROW(comm.set_max_message_bytes(std::size_t{1} << 31), std::invalid_argument);
  EXPECT_EQ(comm.max_message_bytes(), before);
  if (std::getenv("MULTIGPU_MPI_MAX_MESSAGE") == nullptr) EXPECT_EQ(before, std::size_t{1} << 30);
}

INSTANTIATE_TEST_SUITE_P(Waiting, MpiMessages, testing::Values(mg::mpi_wait::watchdog, mg::mpi_wait::polled),
                         [](const auto& info) { return info.param == mg::mpi_wait::watchdog ? "watchdog" : "polled"; });

// ---- Past 2^31 bytes for real (MULTIGPU_LARGE_MESSAGES=1, label large) ----

bool large_enabled() {
  const char* v = std::getenv("MULTIGPU_LARGE_MESSAGES");
  return v != nullptr && v[0] == '1';
}

/// The host can hold `bytes` more for every rank (the ranks of a test share one host), and
/// the ranks agree.
bool room_for(std::size_t bytes, std::string& why) {
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  bytes *= static_cast<std::size_t>(ranks);
  int enough = static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) > bytes + (std::size_t{2} << 30);
  int all = 0;
  MPI_Allreduce(&enough, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) why = "a rank has less than " + std::to_string((bytes >> 30) + 2) + " GiB of free host memory";
  return all != 0;
}

constexpr std::size_t big = (std::size_t{1} << 31) + 4099;  // past INT_MAX bytes, odd

TEST(MpiLargeMessages, AllToAllVBlocksPast2GiB) {
  if (!large_enabled()) GTEST_SKIP() << "set MULTIGPU_LARGE_MESSAGES=1 (ctest -L large)";
  mg::mpi_communicator comm;
  const int me = comm.rank(), n = comm.size();
  std::string why;
  // Rank 0 sends `big` bytes to every other rank from displacements past INT_MAX; every rank
  // sends 1 byte to each other rank.
  const std::size_t need = me == 0 ? big * static_cast<std::size_t>(n) : 2 * big;
  if (!room_for(need, why)) GTEST_SKIP() << why;
  std::vector<std::size_t> sc(n, 0), sd(n, 0), rc(n, 0), rd(n, 0);
  std::size_t sent = 0, received = 0;
  for (int r = 0; r < n; ++r) {
    sc[r] = r == me ? 0 : (me == 0 ? big : 1);
    sd[r] = sent;
    sent += sc[r];
    rc[r] = r == me ? 0 : (r == 0 ? big : 1);
    rd[r] = received;
    received += rc[r];
  }
  std::vector<std::uint8_t> send(sent), recv(received, 0);
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < sc[r]; ++i) send[sd[r] + i] = pattern(me, r, i);
  comm.all_to_all_v(mg::host_memory, send.data(), std::span<const std::size_t>(sc), std::span<const std::size_t>(sd),
                    recv.data(), std::span<const std::size_t>(rc), std::span<const std::size_t>(rd));
  std::size_t wrong = 0;
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < rc[r]; ++i) wrong += recv[rd[r] + i] != pattern(r, me, i);
  EXPECT_EQ(wrong, 0u);
  if (me == 0) std::printf("all_to_all_v: rank 0 sent %zu bytes to each of %d ranks\n", big, n - 1);
}

TEST(MpiLargeMessages, SendRecvAllGatherBroadcastPast2GiB) {
  if (!large_enabled()) GTEST_SKIP() << "set MULTIGPU_LARGE_MESSAGES=1 (ctest -L large)";
  mg::mpi_communicator comm;
  const int me = comm.rank(), n = comm.size();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  const std::size_t gathered = (std::size_t{3} << 29) + 17;  // 1.5 GiB a rank: > 2 GiB gathered
  std::string why;
  if (!room_for(std::max(2 * big, gathered * static_cast<std::size_t>(n + 1)), why)) GTEST_SKIP() << why;
  {
    std::vector<std::uint8_t> buffer(big);
    if (me == 0) {
      for (std::size_t i = 0; i < big; ++i) buffer[i] = pattern(0, 1, i);
      comm.send(buffer.data(), big, 1);
    } else if (me == 1) {
      comm.recv(buffer.data(), big, 0);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < big; ++i) wrong += buffer[i] != pattern(0, 1, i);
      EXPECT_EQ(wrong, 0u);
    }
    comm.broadcast(mg::host_memory, buffer.data(), big, 0);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < big; i += 4093) wrong += buffer[i] != pattern(0, 1, i);
    EXPECT_EQ(wrong, 0u);
  }
  std::vector<std::uint8_t> mine(gathered), all(gathered * static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < gathered; ++i) mine[i] = pattern(me, 2, i);
  comm.all_gather(mg::host_memory, mine.data(), all.data(), gathered);
  std::size_t wrong = 0;
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < gathered; i += 1021) wrong += all[r * gathered + i] != pattern(r, 2, i);
  EXPECT_EQ(wrong, 0u);
  if (me == 0)
    std::printf("send_recv and broadcast of %zu bytes, all_gather of %zu bytes a rank\n", big, gathered);
}

}  // namespace
