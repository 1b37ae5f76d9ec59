// The calls that docs/api.md#blocking-at-a-glance lists as blocking return with their work
// done: the size-changing algorithms' STL forms, reduce_by_key and inclusive_scan_by_key, whose
// last step copies the results into an output on another group, return only once those copies
// are done. Each output is large and on a host-staged group, so that a copy still in flight
// when the call returns leaves that group's streams busy, which the test sees with
// cudaStreamQuery. (The in-place forms write into their input's group, whose streams also free
// the call's temporaries after it returns, so they cannot be checked this way.)
#include <multigpu/multigpu.hpp>

#include "by_key_support.hpp"

#include <numeric>
#include <vector>

namespace {

using namespace test;

/// Every slot's stream of `g` has finished all its work.
::testing::AssertionResult idle(const mg::device_group& g) {
  for (std::size_t s = 0; s < g.size(); ++s) {
    mg::device_guard guard(g.device(s));
    const cudaError_t state = cudaStreamQuery(g.stream(s));
    if (state == cudaSuccess) continue;
    (void)cudaGetLastError();  // a stream still busy is not an error of the next call
    return ::testing::AssertionFailure() << "slot " << s << "'s stream is not idle: " << cudaGetErrorName(state);
  }
  return ::testing::AssertionSuccess();
}

struct is_odd {
  __host__ __device__ bool operator()(int x) const { return (x & 1) != 0; }
};

/// The inputs' group, and two host-staged groups for the outputs (copies through pinned host
/// memory take milliseconds at this size). Built once per binary.
const mg::device_group& input_group() {
  static const mg::device_group g({0, 0, 0});
  return g;
}
const mg::device_group& output_group() {
  static const mg::device_group g({0, 0}, {mg::peer_policy::host_staged});
  return g;
}
const mg::device_group& second_output_group() {
  static const mg::device_group g({0, 0, 0, 0}, {mg::peer_policy::host_staged});
  return g;
}

std::size_t elements() { return small_run() ? std::size_t{1} << 16 : std::size_t{1} << 22; }

/// 0, 1, ..., n - 1 and its odd elements.
std::vector<int> counting(std::size_t n) {
  std::vector<int> host(n);
  std::iota(host.begin(), host.end(), 0);
  return host;
}

}  // namespace

TEST(Blocking, FiltersIntoAnotherGroupReturnWithTheOutputWritten) {
  const std::size_t n = elements();
  const std::vector<int> host = counting(n);
  const mg::distributed_vector<int> v(host, input_group());
  std::vector<int> odd, even;
  for (int x : host) (x & 1 ? odd : even).push_back(x);
  std::vector<int> halves(n);  // 0 0 1 1 2 2 ...: unique keeps n / 2 of them
  for (std::size_t i = 0; i < n; ++i) halves[i] = static_cast<int>(i / 2);
  const mg::distributed_vector<int> pairs(halves, input_group());
  std::vector<int> half(n / 2);
  std::iota(half.begin(), half.end(), 0);

  mg::distributed_vector<int> out(n, -1, output_group());
  output_group().synchronize();  // only the call's own work is left to wait for
  auto end = mg::copy_if(v.cbegin(), v.cend(), out.begin(), is_odd{});
  EXPECT_TRUE(idle(output_group())) << "copy_if";
  ASSERT_EQ(end - out.begin(), static_cast<std::ptrdiff_t>(odd.size()));
  std::vector<int> got = mg::to_vector(out);
  got.resize(odd.size());
  EXPECT_TRUE(same_elements(got, odd)) << "copy_if";

  end = mg::remove_copy_if(v.cbegin(), v.cend(), out.begin(), is_odd{});
  EXPECT_TRUE(idle(output_group())) << "remove_copy_if";
  got = mg::to_vector(out);
  got.resize(even.size());
  EXPECT_TRUE(same_elements(got, even)) << "remove_copy_if";

  end = mg::unique_copy(pairs.cbegin(), pairs.cend(), out.begin());
  EXPECT_TRUE(idle(output_group())) << "unique_copy";
  ASSERT_EQ(end - out.begin(), static_cast<std::ptrdiff_t>(n / 2));
  got = mg::to_vector(out);
  got.resize(n / 2);
  EXPECT_TRUE(same_elements(got, half)) << "unique_copy";

  mg::distributed_vector<int> out_false(n, -1, second_output_group());
  second_output_group().synchronize();
  auto [true_end, false_end] = mg::partition_copy(v.cbegin(), v.cend(), out.begin(), out_false.begin(), is_odd{});
  EXPECT_TRUE(idle(output_group())) << "partition_copy, passing";
  EXPECT_TRUE(idle(second_output_group())) << "partition_copy, failing";
  got = mg::to_vector(out);
  got.resize(odd.size());
  EXPECT_TRUE(same_elements(got, odd)) << "partition_copy, passing";
  got = mg::to_vector(out_false);
  got.resize(even.size());
  EXPECT_TRUE(same_elements(got, even)) << "partition_copy, failing";
  EXPECT_EQ(false_end - out_false.begin(), static_cast<std::ptrdiff_t>(even.size()));
  EXPECT_EQ(true_end - out.begin(), static_cast<std::ptrdiff_t>(odd.size()));
}

TEST(Blocking, ByKeyIntoAnotherGroupReturnWithTheOutputWritten) {
  const std::size_t n = elements();
  const std::vector<int> keys = run_keys(n, 3);
  const std::vector<long long> values = values_at<long long>(n);
  const mg::distributed_vector<int> k(keys.begin(), keys.end(), input_group());
  const mg::distributed_vector<long long> v(values.begin(), values.end(), input_group());
  std::vector<int> want_keys;
  std::vector<long long> want_sums, want_scan(n);
  for (std::size_t i = 0; i < n; ++i) {
    const bool continues = i > 0 && keys[i] == keys[i - 1];
    want_scan[i] = continues ? want_scan[i - 1] + values[i] : values[i];
    if (continues) {
      want_sums.back() += values[i];
    } else {
      want_keys.push_back(keys[i]);
      want_sums.push_back(values[i]);
    }
  }

  // The keys' output on one host-staged group, the values' on another.
  mg::distributed_vector<int> keys_out(n, -1, output_group());
  mg::distributed_vector<long long> values_out(n, -1, second_output_group());
  output_group().synchronize();
  second_output_group().synchronize();
  auto [keys_end, values_end] = mg::reduce_by_key(k.cbegin(), k.cend(), v.cbegin(), keys_out.begin(), values_out.begin());
  EXPECT_TRUE(idle(output_group())) << "reduce_by_key, keys";
  EXPECT_TRUE(idle(second_output_group())) << "reduce_by_key, values";
  ASSERT_EQ(keys_end - keys_out.begin(), static_cast<std::ptrdiff_t>(want_keys.size()));
  ASSERT_EQ(values_end - values_out.begin(), static_cast<std::ptrdiff_t>(want_keys.size()));
  std::vector<int> got_keys = mg::to_vector(keys_out);
  std::vector<long long> got_sums = mg::to_vector(values_out);
  got_keys.resize(want_keys.size());
  got_sums.resize(want_sums.size());
  EXPECT_TRUE(same_elements(got_keys, want_keys));
  EXPECT_TRUE(same_elements(got_sums, want_sums));

  mg::distributed_vector<long long> scanned(n, -1, output_group());
  output_group().synchronize();
  mg::inclusive_scan_by_key(k.cbegin(), k.cend(), v.cbegin(), scanned.begin());
  EXPECT_TRUE(idle(output_group())) << "inclusive_scan_by_key";
  EXPECT_TRUE(same_elements(mg::to_vector(scanned), want_scan));
}
