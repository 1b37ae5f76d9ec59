// The communicator's fallback collectives, on a transport that provides only what the concept
// requires: ranks as threads of this process, exchanging messages through mailboxes with
// send_recv_bytes. Every collective below runs through the fallbacks over it, for team sizes
// 1 to 5 (counts smaller than the team, zero-length blocks, every root), against host
// references.

#include <multigpu/comm.hpp>
#include <multigpu/team/team_vector.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace mg = multigpu;

namespace {

/// One mailbox per ordered pair of ranks. A send hands its message over at once, but the
/// sender's call then waits until the receiver took it (a rendezvous, as MPI's large
/// messages): a fallback whose sends and receives do not pair up within one call deadlocks
/// here and fails after 20 s instead of passing by buffering.
class post_office {
 public:
  explicit post_office(int n) : n_(n), boxes_(static_cast<std::size_t>(n * n)) {}
  int size() const { return n_; }
  /// Returns the message's ticket for wait_taken.
  std::uint64_t post(int from, int to, const void* data, std::size_t bytes) {
    box& b = at(from, to);
    std::uint64_t ticket = 0;
    {
      std::lock_guard lock(b.mutex);
      const auto* p = static_cast<const std::byte*>(data);
      b.messages.emplace_back(p, p + bytes);
      ticket = ++b.posted;
    }
    b.changed.notify_all();
    return ticket;
  }
  std::vector<std::byte> take(int from, int to) {
    box& b = at(from, to);
    std::vector<std::byte> message;
    {
      std::unique_lock lock(b.mutex);
      if (!b.changed.wait_for(lock, std::chrono::seconds(20), [&] { return !b.messages.empty(); }))
        throw mg::comm_error("post_office: no message within 20 s (a fallback that does not pair its sends?)");
      message = std::move(b.messages.front());
      b.messages.pop_front();
      ++b.taken;
    }
    b.changed.notify_all();
    return message;
  }
  void wait_taken(int from, int to, std::uint64_t ticket) {
    box& b = at(from, to);
    std::unique_lock lock(b.mutex);
    if (!b.changed.wait_for(lock, std::chrono::seconds(20), [&] { return b.taken >= ticket; }))
      throw mg::comm_error("post_office: a message not received within 20 s (sends and receives do not pair up)");
  }

 private:
  struct box {
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<std::vector<std::byte>> messages;
    std::uint64_t posted = 0, taken = 0;
  };
  box& at(int from, int to) { return boxes_[static_cast<std::size_t>(from * n_ + to)]; }
  int n_;
  std::vector<box> boxes_;
};

/// A user's transport: rank, size, engine and send_recv_bytes, nothing else.
class mailbox_communicator final : public mg::communicator {
 public:
  mailbox_communicator(post_office& office, int rank) : office_(office), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return office_.size(); }
  const char* engine() const noexcept override { return "mailbox"; }
  void send_recv_bytes(const void* send, std::size_t send_bytes, int send_to, void* recv, std::size_t recv_bytes,
                       int recv_from, cudaStream_t) override {
    ++messages;
    if (send_to != -1) check_peer("send_recv", send_to);
    if (recv_from != -1) check_peer("send_recv", recv_from);
    const std::uint64_t ticket = send_to != -1 ? office_.post(rank_, send_to, send, send_bytes) : 0;
    if (recv_from != -1) {
      const std::vector<std::byte> message = office_.take(recv_from, rank_);
      if (message.size() != recv_bytes)
        throw mg::comm_error("mailbox_communicator: a message of another length than the receive expects");
      if (recv_bytes > 0) std::memcpy(recv, message.data(), recv_bytes);
    }
    if (send_to != -1) office_.wait_taken(rank_, send_to, ticket);
  }
  int messages = 0;

 private:
  post_office& office_;
  int rank_;
};

/// Runs body(comm) on every rank of an n-rank mailbox team, each on its own thread.
void on_every_rank(int n, const std::function<void(mailbox_communicator&)>& body) {
  post_office office(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      mailbox_communicator comm(office, r);
      try {
        body(comm);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << " of " << n << ": " << e.what();
      }
    });
  for (auto& t : threads) t.join();
}

class Fallbacks : public testing::TestWithParam<int> {};

TEST_P(Fallbacks, AllGather) {
  const int n = GetParam();
  on_every_rank(n, [&](mailbox_communicator& comm) {
    const int r = comm.rank();
    std::vector<int> want(static_cast<std::size_t>(n));
    std::iota(want.begin(), want.end(), 10);
    EXPECT_EQ(comm.all_gather(10 + r), want);
    // Three elements per rank, and zero.
    const int mine[3] = {r, 100 * r, -r};
    std::vector<int> all(3 * static_cast<std::size_t>(n), -7);
    comm.all_gather(mine, all.data(), 3);
    for (int k = 0; k < n; ++k) {
      EXPECT_EQ(all[3 * k], k);
      EXPECT_EQ(all[3 * k + 1], 100 * k);
      EXPECT_EQ(all[3 * k + 2], -k);
    }
    comm.all_gather(mine, all.data(), 0);
    if (n > 1) EXPECT_GT(comm.messages, 0) << "went through send_recv_bytes";
  });
}

TEST_P(Fallbacks, AllReduceEveryTypeOperatorAndCount) {
  const int n = GetParam();
  std::vector<std::vector<float>> float_sums(static_cast<std::size_t>(n));
  on_every_rank(n, [&](mailbox_communicator& comm) {
    const int r = comm.rank();
    // Counts below, at and above the team size, so that some chunks of the ring are empty.
    for (std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{1000}}) {
      std::vector<long long> mine(count), got(count);
      for (std::size_t i = 0; i < count; ++i) mine[i] = static_cast<long long>(i) * (r + 1) - 3 * r;
      comm.all_reduce(mine.data(), got.data(), count, mg::reduce_op::sum);
      for (std::size_t i = 0; i < count; ++i) {
        long long want = 0;
        for (int k = 0; k < n; ++k) want += static_cast<long long>(i) * (k + 1) - 3 * k;
        ASSERT_EQ(got[i], want) << "sum, count " << count << ", element " << i;
      }
      comm.all_reduce(mine.data(), got.data(), count, mg::reduce_op::max);
      for (std::size_t i = 0; i < count; ++i) {
        long long want = mine[i];
        for (int k = 0; k < n; ++k) want = std::max(want, static_cast<long long>(i) * (k + 1) - 3 * k);
        ASSERT_EQ(got[i], want) << "max";
      }
      // In place, 8-bit, min.
      std::vector<std::int8_t> small(count);
      for (std::size_t i = 0; i < count; ++i) small[i] = static_cast<std::int8_t>((static_cast<int>(i) + r) % 50 - 20);
      comm.all_reduce(small.data(), small.data(), count, mg::reduce_op::min);
      for (std::size_t i = 0; i < count; ++i) {
        int want = 127;
        for (int k = 0; k < n; ++k) want = std::min(want, (static_cast<int>(i) + k) % 50 - 20);
        ASSERT_EQ(small[i], want) << "int8 min in place";
      }
    }
    std::vector<double> p{1.5, -2.0, 0.25};
    std::vector<double> prod(3);
    comm.all_reduce(p.data(), prod.data(), 3, mg::reduce_op::prod);
    EXPECT_EQ(prod[0], std::pow(1.5, n));
    EXPECT_EQ(prod[1], std::pow(-2.0, n));
    // Float sums: every rank gets the same bits.
    std::vector<float> f(257), s(257);
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = 0.1f * static_cast<float>(i + 1) / static_cast<float>(r + 3);
    comm.all_reduce(mg::host_memory, f.data(), s.data(), f.size(), mg::reduce_op::sum);
    float_sums[static_cast<std::size_t>(r)] = s;
    EXPECT_EQ(comm.all_reduce(r + 1, mg::reduce_op::sum), n * (n + 1) / 2);
  });
  for (int r = 1; r < n; ++r) EXPECT_EQ(float_sums[static_cast<std::size_t>(r)], float_sums[0]) << "rank " << r;
}

TEST_P(Fallbacks, AllToAllVWithUnevenAndEmptyBlocks) {
  const int n = GetParam();
  on_every_rank(n, [&](mailbox_communicator& comm) {
    const int r = comm.rank();
    // Rank r sends (r + d) % 3 elements to rank d, each r * 1000 + d * 10 + j.
    auto length = [](int from, int to) { return static_cast<std::size_t>((from + to) % 3); };
    std::vector<std::size_t> sc(n), sd(n), rc(n), rd(n);
    std::vector<int> send;
    for (int d = 0; d < n; ++d) {
      sc[d] = length(r, d);
      sd[d] = send.size();
      for (std::size_t j = 0; j < sc[d]; ++j) send.push_back(r * 1000 + d * 10 + static_cast<int>(j));
    }
    std::size_t total = 0;
    for (int s = n - 1; s >= 0; --s) {  // received blocks laid out in reverse rank order
      rc[s] = length(s, r);
      rd[s] = total;
      total += rc[s];
    }
    std::vector<int> recv(total + 1, -1);  // one more: untouched
    comm.all_to_all_v(send.data(), sc, sd, recv.data(), rc, rd);
    for (int s = 0; s < n; ++s)
      for (std::size_t j = 0; j < rc[s]; ++j) EXPECT_EQ(recv[rd[s] + j], s * 1000 + r * 10 + static_cast<int>(j));
    EXPECT_EQ(recv.back(), -1);
    // A block to itself of another length than the one expected from itself.
    if (sc[r] == 0) return;
    std::vector<std::size_t> wrong = rc;
    wrong[r] = rc[r] + 1;
    EXPECT_THROW(comm.all_to_all_v(send.data(), sc, sd, recv.data(), wrong, rd), std::invalid_argument);
  });
}

TEST_P(Fallbacks, BroadcastFromEveryRootAndBarrier) {
  const int n = GetParam();
  std::atomic<int> arrived{0};
  on_every_rank(n, [&](mailbox_communicator& comm) {
    const int r = comm.rank();
    for (int root = 0; root < n; ++root) {
      std::vector<double> data(5, r == root ? 0.0 : -1.0);
      if (r == root) std::iota(data.begin(), data.end(), 100.0 * root);
      comm.broadcast(data.data(), data.size(), root);
      for (std::size_t i = 0; i < data.size(); ++i) EXPECT_EQ(data[i], 100.0 * root + static_cast<double>(i));
      // Nobody leaves the barrier before everyone has arrived at it.
      arrived.fetch_add(1);
      comm.barrier();
      EXPECT_GE(arrived.load(), n * (root + 1)) << "rank " << r << " left barrier " << root << " early";
      comm.barrier();  // and nobody arrives at the next one before everyone has checked
    }
    int nothing = 0;
    EXPECT_THROW(comm.broadcast(&nothing, 1, n), std::out_of_range) << "no such root";
    EXPECT_THROW(comm.broadcast(&nothing, 1, -1), std::out_of_range);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Fallbacks, testing::Values(1, 2, 3, 4, 5),
                         [](const testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; });

// ---- A failure on one rank ends a team call on every rank (team.hpp) ----

/// A rank's own failure, told apart from the comm_error of the others.
struct local_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

mg::team team_over(mailbox_communicator& comm) {
  return mg::team(std::shared_ptr<mg::communicator>(&comm, [](mg::communicator*) {}));
}

class Agreement : public testing::TestWithParam<int> {};

TEST_P(Agreement, AStepThatFailsOnOneRankEndsTheCallOnEveryRank) {
  const int n = GetParam();
  for (int failing = 0; failing < n; ++failing)
    on_every_rank(n, [&](mailbox_communicator& comm) {
      const mg::team t = team_over(comm);
      const int r = comm.rank();
      try {
        const int got = mg::detail::agreed_step(t, mg::team_operation::sort, "allocation", [&] {
          if (r == failing) throw local_failure("out of room");
          return 7;
        });
        ADD_FAILURE() << "rank " << r << " returned " << got << " though rank " << failing << " failed";
      } catch (const local_failure&) {
        EXPECT_EQ(r, failing) << "only the failing rank rethrows its own error";
      } catch (const mg::comm_error& e) {
        EXPECT_NE(r, failing);
        const std::string what = e.what();
        EXPECT_NE(what.find("rank " + std::to_string(failing) + " failed in its allocation step"), std::string::npos)
            << what;
        EXPECT_NE(what.find("sort"), std::string::npos) << what;
      }
      // The team is still usable: the next step agrees, and returns its value everywhere.
      EXPECT_EQ(mg::detail::agreed_step(t, mg::team_operation::sort, "allocation", [&] { return r * 2; }), r * 2);
    });
}

TEST_P(Agreement, TheLowestFailedRankIsNamed) {
  const int n = GetParam();
  if (n < 3) GTEST_SKIP() << "needs three ranks";
  on_every_rank(n, [&](mailbox_communicator& comm) {
    const mg::team t = team_over(comm);
    const int r = comm.rank();
    try {
      mg::detail::agreed_step(t, mg::team_operation::gather, "local gather", [&] {
        if (r == 1 || r == n - 1) throw local_failure("no");
      });
      ADD_FAILURE() << "rank " << r << " returned";
    } catch (const local_failure&) {
      EXPECT_TRUE(r == 1 || r == n - 1);
    } catch (const mg::comm_error& e) {
      EXPECT_NE(std::string(e.what()).find("rank 1 failed in its local gather step"), std::string::npos) << e.what();
    }
  });
}

TEST_P(Agreement, StatusRidesInAnAllGather) {
  const int n = GetParam();
  for (int failing = -1; failing < n; ++failing)
    on_every_rank(n, [&](mailbox_communicator& comm) {
      const mg::team t = team_over(comm);
      const int r = comm.rank();
      std::exception_ptr failure;
      if (r == failing) failure = std::make_exception_ptr(local_failure("bad read"));
      const std::uint32_t mine[2] = {static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(10 * r)};
      std::vector<std::uint32_t> all(2 * static_cast<std::size_t>(n), 99);
      const int messages_before = comm.messages;
      try {
        mg::detail::agreed_all_gather(t, mg::team_operation::sort, "split candidates", failure, mine, all.data(),
                                      sizeof mine);
        EXPECT_EQ(failing, -1) << "rank " << r << " returned though rank " << failing << " failed";
        for (int k = 0; k < n; ++k) {
          EXPECT_EQ(all[2 * k], static_cast<std::uint32_t>(k));
          EXPECT_EQ(all[2 * k + 1], static_cast<std::uint32_t>(10 * k));
        }
        // One all_gather: a ring of n - 1 steps, no message of its own for the status.
        EXPECT_EQ(comm.messages - messages_before, n - 1);
      } catch (const local_failure&) {
        EXPECT_EQ(r, failing);
      } catch (const mg::comm_error& e) {
        EXPECT_NE(r, failing);
        EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(failing) + " failed in its split candidates"),
                  std::string::npos)
            << e.what();
      }
    });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Agreement, testing::Values(1, 2, 3, 4, 5),
                         [](const testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; });

}  // namespace
