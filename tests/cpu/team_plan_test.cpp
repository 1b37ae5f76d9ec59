#include <multigpu/comm/in_process_communicator.hpp>
#include <multigpu/team/team.hpp>
#include <multigpu/team/team_plan.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mg = multigpu;
using mg::distribution;

namespace {
// Non-commutative and associative: string concatenation.
auto concat = [](const std::string& a, const std::string& b) { return a + b; };
using opt = std::optional<std::string>;
}  // namespace

TEST(TeamPlan, FoldKeepsRankOrderAndSkipsEmptyRanks) {
  std::vector<opt> partials{opt("ab"), std::nullopt, opt("c"), std::nullopt, opt("de")};
  EXPECT_EQ(mg::fold_in_rank_order<std::string>(partials, concat), opt("abcde"));
  std::vector<opt> none(3);
  EXPECT_EQ(mg::fold_in_rank_order<std::string>(none, concat), std::nullopt);
  EXPECT_EQ(mg::fold_in_rank_order<std::string>(std::vector<opt>{}, concat), std::nullopt);
}

TEST(TeamPlan, CarriesAreExclusivePrefixesOfRankTotals) {
  std::vector<opt> totals{std::nullopt, opt("a"), opt("bc"), std::nullopt, opt("d")};
  auto carries = mg::rank_carries<std::string>(totals, concat);
  std::vector<opt> expected{std::nullopt, std::nullopt, opt("a"), opt("abc"), opt("abc")};
  EXPECT_EQ(carries, expected);
}

TEST(TeamPlan, CarriesMatchAGlobalScan) {
  // Ranks of sizes 3, 0, 1, 5 with values 1..9: a rank's carry is the sum before its first element.
  std::vector<std::size_t> sizes{3, 0, 1, 5};
  std::vector<std::optional<long>> totals;
  long next = 1, before = 0;
  std::vector<long> expected_carry;
  for (std::size_t s : sizes) {
    expected_carry.push_back(before);
    long t = 0;
    for (std::size_t i = 0; i < s; ++i) t += next++;
    totals.push_back(s ? std::optional<long>(t) : std::nullopt);
    before += t;
  }
  auto carries = mg::rank_carries<long>(totals, std::plus<>{});
  for (std::size_t r = 0; r < sizes.size(); ++r) EXPECT_EQ(carries[r].value_or(0), expected_carry[r]) << r;
}

TEST(TeamPlan, FirstBestBreaksTiesByIndex) {
  using e = mg::ranked_element<int>;
  std::vector<std::optional<e>> c{e{7, 3}, std::nullopt, e{2, 1}, e{9, 1}, e{12, 5}};
  auto less = [](int a, int b) { return a < b; };
  auto greater = [](int a, int b) { return a > b; };
  auto min = mg::first_best_in_rank_order<int>(c, less);
  EXPECT_EQ(min->index, 2u);
  EXPECT_EQ(min->value, 1);
  auto max = mg::first_best_in_rank_order<int>(c, greater);
  EXPECT_EQ(max->index, 12u);
  std::vector<std::optional<e>> ties{e{10, 4}, e{3, 4}};
  EXPECT_EQ(mg::first_best_in_rank_order<int>(ties, less)->index, 3u);
  EXPECT_FALSE(mg::first_best_in_rank_order<int>(std::vector<std::optional<e>>(2), less));
}

// Simulates every rank's all_to_all_v with the plans and checks the result is the same
// global vector in the new layout.
TEST(TeamPlan, RedistributionMovesEveryElementOnce) {
  const std::vector<std::vector<std::size_t>> layouts{{5, 0, 7, 1}, {0, 13, 0, 0}, {4, 3, 3, 3}, {13, 0, 0, 0}, {1, 1, 1, 10}};
  for (const auto& a : layouts)
    for (const auto& b : layouts) {
      distribution from = distribution::from_sizes(a), to = distribution::from_sizes(b);
      const std::size_t ranks = a.size();
      std::vector<std::vector<int>> held(ranks), got(ranks);
      for (std::size_t r = 0; r < ranks; ++r) {
        held[r].resize(a[r]);
        std::iota(held[r].begin(), held[r].end(), static_cast<int>(from.segment_offset(r)));
        got[r].assign(b[r], -1);
      }
      std::vector<mg::redistribution_plan> plans;
      for (std::size_t r = 0; r < ranks; ++r) plans.push_back(mg::plan_redistribution(from, to, r));
      for (std::size_t src = 0; src < ranks; ++src)
        for (std::size_t dst = 0; dst < ranks; ++dst) {
          ASSERT_EQ(plans[src].send_counts[dst], plans[dst].recv_counts[src]);
          for (std::size_t i = 0; i < plans[src].send_counts[dst]; ++i)
            got[dst].at(plans[dst].recv_displs[src] + i) = held[src].at(plans[src].send_displs[dst] + i);
        }
      for (std::size_t r = 0; r < ranks; ++r)
        for (std::size_t i = 0; i < b[r]; ++i) EXPECT_EQ(got[r][i], static_cast<int>(to.segment_offset(r) + i));
    }
}

TEST(TeamPlan, RedistributionRejectsMismatchedLayouts) {
  std::vector<std::size_t> three{1, 2, 3}, two{3, 3}, other{1, 1, 1};
  EXPECT_THROW(mg::plan_redistribution(distribution::from_sizes(three), distribution::from_sizes(two), 0),
               std::invalid_argument);
  EXPECT_THROW(mg::plan_redistribution(distribution::from_sizes(three), distribution::from_sizes(other), 0),
               std::invalid_argument);
}

namespace {
// The team sort's splitting rounds, run on the host over `parts` (each sorted): what every
// rank would propose and count, then the sends the plans make. Returns the parts after the
// exchange, each merged stably in rank order, as the team sort leaves them.
template <class T, class Comp>
std::vector<std::vector<std::pair<T, std::size_t>>> split_and_exchange(
    const std::vector<std::vector<std::pair<T, std::size_t>>>& parts, Comp comp, std::size_t* rounds) {
  const std::size_t ranks = parts.size();
  std::vector<std::size_t> sizes;
  for (const auto& p : parts) sizes.push_back(p.size());
  const distribution layout = distribution::from_sizes(sizes);
  auto key_less = [&](const std::pair<T, std::size_t>& a, const T& b) { return comp(a.first, b); };
  auto key_less_r = [&](const T& a, const std::pair<T, std::size_t>& b) { return comp(a, b.first); };
  mg::split_search search(layout);
  *rounds = 0;
  while (!search.settled()) {
    ++*rounds;
    for (std::size_t b : search.open_boundaries()) {
      std::vector<mg::weighted_candidate<T>> c;
      for (std::size_t r = 0; r < ranks; ++r) {
        const auto [lo, hi] = search.range(b, r);
        if (hi > lo) c.push_back({parts[r][lo + (hi - lo) / 2].first, hi - lo});
      }
      const T pivot = mg::weighted_median(std::span<mg::weighted_candidate<T>>(c), comp);
      std::vector<mg::pivot_rank> counts(ranks);
      for (std::size_t r = 0; r < ranks; ++r)
        counts[r] = {static_cast<std::uint64_t>(std::lower_bound(parts[r].begin(), parts[r].end(), pivot, key_less) -
                                                parts[r].begin()),
                     static_cast<std::uint64_t>(std::upper_bound(parts[r].begin(), parts[r].end(), pivot, key_less_r) -
                                                parts[r].begin())};
      search.narrow(b, counts);
    }
  }
  std::vector<std::vector<std::pair<T, std::size_t>>> out(ranks);
  for (std::size_t me = 0; me < ranks; ++me) {
    const mg::redistribution_plan plan = mg::plan_sorted_exchange(search.table(), me);
    for (std::size_t src = 0; src < ranks; ++src) {
      const mg::redistribution_plan theirs = mg::plan_sorted_exchange(search.table(), src);
      EXPECT_EQ(theirs.send_counts[me], plan.recv_counts[src]);
      const auto first = parts[src].begin() + static_cast<std::ptrdiff_t>(theirs.send_displs[me]);
      out[me].insert(out[me].end(), first, first + static_cast<std::ptrdiff_t>(theirs.send_counts[me]));
    }
    std::stable_sort(out[me].begin(), out[me].end(),
                     [&](const auto& a, const auto& b) { return comp(a.first, b.first); });
  }
  return out;
}
}  // namespace

// Random parts (empty ones, duplicates-heavy keys, one big rank) over 1 to 9 ranks: after the
// exchange every rank holds as many elements as before, and the concatenation is the stable
// sort of the whole input (the second member is each element's global input position).
TEST(TeamPlan, ExactSplitsGiveAStableSortAndKeepSizes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t ranks = 1 + trial % 9;
    const int distinct = trial % 3 == 0 ? 2 : (trial % 3 == 1 ? 50 : 100000);
    std::vector<std::vector<std::pair<int, std::size_t>>> parts(ranks);
    std::vector<std::pair<int, std::size_t>> all;
    for (std::size_t r = 0; r < ranks; ++r) {
      const std::size_t n = (rng() % 4 == 0) ? 0 : (r == 0 && trial % 5 == 0 ? 3000 : rng() % 200);
      for (std::size_t i = 0; i < n; ++i) parts[r].push_back({static_cast<int>(rng() % distinct), all.size() + i});
      all.insert(all.end(), parts[r].begin(), parts[r].end());
      std::stable_sort(parts[r].begin(), parts[r].end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::size_t rounds = 0;
    const auto out = split_and_exchange(parts, std::less<>{}, &rounds);
    std::vector<std::pair<int, std::size_t>> joined;
    for (std::size_t r = 0; r < ranks; ++r) {
      EXPECT_EQ(out[r].size(), parts[r].size()) << "trial " << trial << ", rank " << r;
      joined.insert(joined.end(), out[r].begin(), out[r].end());
    }
    ASSERT_EQ(joined, all) << "trial " << trial;
    EXPECT_LE(rounds, 64u) << "trial " << trial;
  }
}

TEST(TeamPlan, SplitsByAComparatorOtherThanLess) {
  std::vector<std::vector<std::pair<double, std::size_t>>> parts{
      {{9, 0}, {5, 1}, {5, 2}, {1, 3}}, {}, {{7, 4}, {5, 5}}};
  std::size_t rounds = 0;
  const auto out = split_and_exchange(parts, std::greater<>{}, &rounds);
  using e = std::pair<double, std::size_t>;
  EXPECT_EQ(out[0], (std::vector<e>{{9, 0}, {7, 4}, {5, 1}, {5, 2}}));
  EXPECT_TRUE(out[1].empty());
  EXPECT_EQ(out[2], (std::vector<e>{{5, 5}, {1, 3}}));
}

TEST(TeamPlan, SplitsThatCannotShrinkAreReported) {
  // Keys the comparator does not order (NaN under <): a pivot with nothing below it and
  // nothing up to it on any rank leaves every range as it was, which would loop for ever.
  mg::split_search search(distribution::from_sizes(std::vector<std::size_t>{2, 2}));
  ASSERT_EQ(search.open_boundaries(), std::vector<std::size_t>{1});
  const std::vector<mg::pivot_rank> nothing{{0, 0}, {0, 0}};
  EXPECT_THROW(search.narrow(1, nothing), std::invalid_argument);
}

TEST(TeamPlan, SortedExchangePlanRejectsAnotherRank) {
  mg::split_search search(distribution::from_sizes(std::vector<std::size_t>{1, 1}));
  EXPECT_THROW(mg::plan_sorted_exchange(search.table(), 2), std::invalid_argument);
}

TEST(TeamPlan, IndexRoutesGroupByOwnerAndRemember) {
  // Owners of sizes 3, 0, 2, 4: global 0-2 on rank 0, 3-4 on rank 2, 5-8 on rank 3.
  const distribution owners = distribution::from_sizes(std::vector<std::size_t>{3, 0, 2, 4});
  const std::vector<std::uint64_t> global{8, 0, 4, 2, 5, 3, 0};
  const mg::index_routes routes = mg::plan_index_routes(global, owners);
  EXPECT_EQ(routes.send_counts, (std::vector<std::size_t>{3, 0, 2, 2}));
  EXPECT_EQ(routes.send_displs, (std::vector<std::size_t>{0, 3, 3, 5}));
  EXPECT_EQ(routes.local_index, (std::vector<std::uint64_t>{0, 2, 0, 1, 0, 3, 0}));
  EXPECT_EQ(routes.position, (std::vector<std::size_t>{1, 3, 6, 2, 5, 0, 4}));
  const std::vector<std::uint64_t> outside{9};
  EXPECT_THROW(mg::plan_index_routes(outside, owners), std::out_of_range);
}

TEST(InProcessCommunicator, CollectivesOfOneRank) {
  mg::in_process_communicator comm;
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.all_gather(42), std::vector<int>{42});
  EXPECT_EQ(comm.all_reduce(7.5, mg::reduce_op::max), 7.5);
  int sent[3] = {1, 2, 3}, got[3] = {};
  comm.send(sent, 3, 0);
  comm.recv(got, 3, 0);
  EXPECT_EQ(got[2], 3);
  EXPECT_THROW(comm.recv(got, 3, 0), mg::comm_error);  // nothing sent: would wait forever
  EXPECT_THROW(comm.send(sent, 1, 1), std::out_of_range);
  std::vector<std::size_t> counts{3}, displs{0}, wrong{3, 0};
  int moved[3] = {};
  comm.all_to_all_v(sent, std::span<const std::size_t>(counts), std::span<const std::size_t>(displs), moved,
                    std::span<const std::size_t>(counts), std::span<const std::size_t>(displs));
  EXPECT_EQ(moved[1], 2);
  EXPECT_THROW(comm.all_to_all_v(sent, std::span<const std::size_t>(wrong), std::span<const std::size_t>(displs), moved,
                                 std::span<const std::size_t>(counts), std::span<const std::size_t>(displs)),
               std::invalid_argument);
}

// Records whether each call was marked as one on host buffers (host_memory); throws on
// request, to show that the mark ends with the call.
class marking_communicator final : public mg::communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* engine() const noexcept override { return "marking"; }
  using mg::communicator::all_gather_bytes;
  using mg::communicator::all_reduce;
  using mg::communicator::all_to_all_v_bytes;
  void all_gather_bytes(const void* send, void* recv, std::size_t bytes, cudaStream_t stream = nullptr) override {
    marks.push_back(host_buffers());
    if (fail) throw mg::comm_error("marking_communicator: failing as asked");
    inner.all_gather_bytes(send, recv, bytes, stream);
  }
  void all_reduce(const void* send, void* recv, std::size_t count, mg::data_type type, mg::reduce_op op,
                  cudaStream_t stream = nullptr) override {
    marks.push_back(host_buffers());
    inner.all_reduce(send, recv, count, type, op, stream);
  }
  void send_recv_bytes(const void* send, std::size_t send_bytes, int send_to, void* recv, std::size_t recv_bytes,
                       int recv_from, cudaStream_t stream = nullptr) override {
    marks.push_back(host_buffers());
    inner.send_recv_bytes(send, send_bytes, send_to, recv, recv_bytes, recv_from, stream);
  }
  void all_to_all_v_bytes(const void* send, std::span<const std::size_t> send_counts,
                          std::span<const std::size_t> send_displs, void* recv,
                          std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs,
                          cudaStream_t stream = nullptr) override {
    marks.push_back(host_buffers());
    inner.all_to_all_v_bytes(send, send_counts, send_displs, recv, recv_counts, recv_displs, stream);
  }
  void barrier() override {}
  mg::in_process_communicator inner;
  std::vector<bool> marks;
  bool fail = false;
};

TEST(Communicator, HostMemoryMarksExactlyItsCall) {
  marking_communicator comm;
  float data[2] = {1, 2}, result[2] = {};
  comm.all_reduce(data, result, 2, mg::reduce_op::sum);
  comm.all_reduce(mg::host_memory, data, result, 2, mg::reduce_op::sum);
  EXPECT_EQ(result[1], 2.0f);
  EXPECT_EQ(comm.all_reduce(3, mg::reduce_op::sum), 3);  // the value form: host by construction
  std::vector<std::size_t> counts{sizeof(data)}, displs{0};
  comm.all_to_all_v_bytes(mg::host_memory, data, counts, displs, result, counts, displs);
  EXPECT_EQ(comm.all_gather(5), std::vector<int>{5});
  comm.all_gather(data, result, 2);
  EXPECT_EQ(comm.marks, (std::vector<bool>{false, true, true, true, true, false}));
  comm.fail = true;
  EXPECT_THROW(comm.all_gather(mg::host_memory, data, result, 2), mg::comm_error);
  comm.fail = false;
  comm.all_gather(data, result, 2);  // after a throw the mark is gone
  EXPECT_EQ(comm.marks.back(), false);
}

TEST(Team, EnterCountsAndReportsLocalFailures) {
  mg::team t = mg::team::in_process();
  EXPECT_EQ(t.size(), 1);
  EXPECT_EQ(t.enter(mg::team_operation::reduce, 4), -1);
  EXPECT_EQ(t.enter(mg::team_operation::count, 4, false), 0);
  mg::team other = mg::team::in_process();
  EXPECT_THROW(mg::detail::expect_same_team("equal", t, other), std::invalid_argument);
  EXPECT_NO_THROW(mg::detail::expect_same_team("equal", t, t));
}
