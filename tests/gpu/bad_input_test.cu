// Bad input: every precondition of the public interface (docs/api.md) throws the
// documented exception type with a message that names the values involved, and the
// objects involved stay usable. (Checks already made with their messages elsewhere are not
// repeated: invalid device ids in runtime_test, mismatched lengths of copy and of unary
// transform in transfer_test and elementwise_test.)
#include <multigpu/multigpu.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

namespace {

namespace mg = multigpu;

/// f() must throw E, whose what() contains every one of `parts`.
template <class E, class F>
::testing::AssertionResult throws_naming(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const E& e) {
    const std::string what = e.what();
    for (const std::string& part : parts)
      if (what.find(part) == std::string::npos)
        return ::testing::AssertionFailure() << "the message does not name \"" << part << "\": " << what;
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw " << typeid(e).name() << " instead of " << typeid(E).name() << ": "
                                         << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

struct add {
  __host__ __device__ int operator()(int a, int b) const { return a + b; }
};
struct twice {
  __host__ __device__ int operator()(int a) const { return 2 * a; }
};
struct increment {
  __host__ __device__ void operator()(int& a) const { ++a; }
};
struct positive {
  __host__ __device__ bool operator()(int a) const { return a > 0; }
};

struct average3 {
  __host__ __device__ double operator()(const mg::stencil_window<double>& w) const { return (w[-1] + w[0] + w[1]) / 3; }
};
struct ignore_segments {
  void operator()(mg::segment_view<double>, mg::segment_view<double>) const {}
};
struct ignore_int_segments {
  void operator()(mg::segment_view<int>, mg::segment_view<int>) const {}
};

/// Three slots on device 0: multi-segment logic on any machine.
const mg::device_group& three_slots() {
  static const mg::device_group g({0, 0, 0});
  return g;
}

std::vector<int> iota_vector(std::size_t n, int first = 0) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(BadInput, EmptyDeviceListSaysSo) {
  EXPECT_TRUE(throws_naming<std::invalid_argument>([] { mg::device_group g(std::vector<int>{}); }, {"empty"}));
}

TEST(BadInput, SlotsOutsideTheGroupNameTheSlotAndTheSize) {
  const auto& g = three_slots();
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)g.device(5); }, {"slot 5", "3 slots"}));
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)g.stream(3); }, {"slot 3", "3 slots"}));
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)g.pool(7); }, {"slot 7", "3 slots"}));
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)g.peer_enabled(0, 4); }, {"slot 4", "3 slots"}));
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)g.route_between(6, 0); }, {"slot 6", "3 slots"}));
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { g.order(0, 9); }, {"slot 9", "3 slots"}));
  g.synchronize();
}

TEST(BadInput, ElementAccessPastTheEndNamesTheIndexAndTheSize) {
  mg::distributed_vector<int> v(iota_vector(1009), three_slots());
  const auto& cv = v;
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)cv.at(2003); }, {"index 2003", "size 1009"}));
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)cv.at(1009); }, {"index 1009", "size 1009"}));
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)cv[5001]; }, {"index 5001", "size 1009"}));
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { int x = v[5002]; (void)x; }, {"index 5002", "size 1009"}));
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { v[5003] = 1; }, {"index 5003", "size 1009"}));
  mg::distributed_vector<int> empty(0, three_slots());
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)empty.at(0); }, {"index 0", "size 0"}));
  mg::distributed_vector<int> moved(std::move(v));
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)v.at(0); }, {"index 0", "size 0"}));
  // Nothing changed: the vector reads and writes as before.
  moved[1008] = -5;
  EXPECT_EQ(moved.at(1008), -5);
  EXPECT_EQ(mg::reduce(moved), 1008 * 1007 / 2 - 5);
}

TEST(BadInput, SegmentsOutsideTheGroupNameTheSlotAndTheCount) {
  mg::distributed_vector<int> v(10, three_slots());
  const auto& cv = v;
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)v.segment(3); }, {"slot 3", "3 segments"}));
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)cv.segment(11); }, {"slot 11", "3 segments"}));
  EXPECT_EQ(v.segment(2).size(), 3u);
}

TEST(BadInput, MismatchedLengthsNameBothSizes) {
  const auto& g = three_slots();
  mg::distributed_vector<int> a(iota_vector(1009), g), b(2003, 1, g), out(1009, g);
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::transform(a, b, out, add{}); }, {"1009", "2003"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::transform(a, a, b, add{}); }, {"1009", "2003"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::inclusive_scan(a, b); }, {"inclusive_scan", "1009", "2003"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::inclusive_scan(b, a, add{}); }, {"1009", "2003"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::exclusive_scan(a, b, 0); }, {"exclusive_scan", "1009", "2003"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { (void)mg::dot(a, b); }, {"1009", "2003"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>(
      [&] { (void)mg::transform_reduce(b, a, 0, add{}, add{}); }, {"transform_reduce", "1009", "2003"}));
  // Where the call makes sense it is no error: equal says false.
  EXPECT_FALSE(mg::equal(a, b));
  // Nothing was written.
  EXPECT_EQ(mg::count(b, 1), 2003u);
  EXPECT_EQ(mg::count(out, 0), 1009u);
  mg::transform(a, a, out, add{});
  EXPECT_EQ(out[1008], 2016);
}

TEST(BadInput, OutputRangesTooShortNameTheLengthAndTheRoom) {
  const auto& g = three_slots();
  mg::distributed_vector<int> a(iota_vector(1009), g), b(2003, 1, g), c(1009, 2, g);
  std::vector<int> host = iota_vector(1009);
  auto a0 = a.cbegin(), a1 = a.cend();
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::copy(a0, a1, b.begin() + 1500); }, {"1009", "503"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::copy(host.begin(), host.end(), b.begin() + 1500); },
                                                   {"1009", "503"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::transform(a0, a1, b.begin() + 1500, twice{}); },
                                                   {"1009", "503"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::transform(a0, a1, c.cbegin() + 500, b.begin(), add{}); },
                                                   {"1009", "509"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::transform(a0, a1, c.cbegin(), b.begin() + 1500, add{}); },
                                                   {"1009", "503"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::inclusive_scan(a0, a1, b.begin() + 1500); },
                                                   {"1009", "503"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::exclusive_scan(a0, a1, b.begin() + 1500, 0); },
                                                   {"1009", "503"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>(
      [&] { (void)mg::transform_reduce(a0, a1, c.cbegin() + 500, 0, add{}, add{}); }, {"1009", "509"}));
  // An output iterator past the end leaves no room at all.
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::transform(a0, a1, c.end() + 3, twice{}); },
                                                   {"1009", "has 0"}));
  EXPECT_EQ(mg::count(b, 1), 2003u) << "a rejected call wrote to its output";
  EXPECT_EQ(mg::count(c, 2), 1009u) << "a rejected call wrote to its output";
}

TEST(BadInput, ReversedRangesNameBothIndices) {
  const auto& g = three_slots();
  mg::distributed_vector<int> a(iota_vector(1009), g), b(1009, 1, g);
  std::vector<int> host(1009);
  auto f = a.begin() + 7, l = a.begin() + 3;
  auto cf = a.cbegin() + 7, cl = a.cbegin() + 3;
  const std::initializer_list<std::string> both{"index 7", "index 3"};
  using E = std::invalid_argument;
  EXPECT_TRUE(throws_naming<E>([&] { mg::fill(f, l, 5); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { mg::iota(f, l, 5); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { mg::for_each(f, l, increment{}); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { mg::transform(cf, cl, b.begin(), twice{}); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { mg::transform(cf, cl, b.cbegin(), b.begin(), add{}); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::reduce(cf, cl, 0); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::reduce_async(cf, cl, 0); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::transform_reduce(cf, cl, 0, add{}, twice{}); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::transform_reduce(cf, cl, b.cbegin(), 0, add{}, add{}); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::count(cf, cl, 3); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::count_if(cf, cl, positive{}); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::min_element(cf, cl); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::max_element(cf, cl); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { mg::inclusive_scan(cf, cl, b.begin()); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { mg::exclusive_scan(cf, cl, b.begin(), 0); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { mg::copy(cf, cl, b.begin()); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { mg::copy(cf, cl, host.begin()); }, both));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::equal(cf, cl, b.cbegin() + 7, b.cbegin() + 3); }, both));
  EXPECT_EQ(mg::to_vector(a), iota_vector(1009)) << "a rejected call changed its input";
  EXPECT_EQ(mg::count(b, 1), 1009u) << "a rejected call wrote to its output";
}

TEST(BadInput, RangesAcrossTwoVectorsAreRejected) {
  const auto& g = three_slots();
  mg::distributed_vector<int> a(100, 1, g), b(100, 2, g), out(100, g);
  auto af = a.cbegin(), bl = b.cend();
  using E = std::invalid_argument;
  const std::initializer_list<std::string> why{"different vectors"};
  EXPECT_TRUE(throws_naming<E>([&] { mg::fill(a.begin(), b.end(), 5); }, {"fill", "different vectors"}));
  EXPECT_TRUE(throws_naming<E>([&] { mg::transform(af, bl, out.begin(), twice{}); }, {"transform", "different vectors"}));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::reduce(af, bl, 0); }, {"reduce", "different vectors"}));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::count(af, bl, 1); }, why));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::min_element(af, bl); }, {"min_element", "different vectors"}));
  EXPECT_TRUE(throws_naming<E>([&] { mg::inclusive_scan(af, bl, out.begin()); }, {"inclusive_scan", "different vectors"}));
  EXPECT_TRUE(throws_naming<E>([&] { mg::exclusive_scan(af, bl, out.begin(), 0); }, why));
  EXPECT_TRUE(throws_naming<E>([&] { mg::copy(af, bl, out.begin()); }, {"copy", "different vectors"}));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::transform_reduce(af, bl, 0, add{}, twice{}); }, why));
  EXPECT_EQ(mg::count(out, 0), 100u);
}

/// Every range-taking algorithm refuses [f, l) of `a` (1009 ones) with std::out_of_range
/// naming `words`, and neither `a` nor `out` (2003 zeros) changes.
void expect_every_algorithm_refuses(mg::distributed_vector<int>& a, mg::distributed_vector<int>& out,
                                    std::ptrdiff_t first, std::ptrdiff_t last,
                                    const std::initializer_list<std::string>& words) {
  auto f = a.cbegin() + first, l = a.cbegin() + last;
  using E = std::out_of_range;
  EXPECT_TRUE(throws_naming<E>([&] { mg::fill(a.begin() + first, a.begin() + last, 5); }, words));
  EXPECT_TRUE(throws_naming<E>([&] { mg::transform(f, l, out.begin(), twice{}); }, words));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::reduce(f, l, 0); }, words));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::count(f, l, 1); }, words));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::max_element(f, l); }, words));
  EXPECT_TRUE(throws_naming<E>([&] { mg::inclusive_scan(f, l, out.begin()); }, words));
  EXPECT_TRUE(throws_naming<E>([&] { mg::copy(f, l, out.begin()); }, words));
  EXPECT_EQ(mg::count(a, 1), 1009u);
  EXPECT_EQ(mg::count(out, 0), 2003u);
}

TEST(BadInput, RangesPastTheEndNameTheEndAndTheSize) {
  const auto& g = three_slots();
  mg::distributed_vector<int> a(1009, 1, g), out(2003, g);
  expect_every_algorithm_refuses(a, out, 2, 1012, {"index 1012", "size 1009"});
}

TEST(BadInput, RangesBeforeTheBeginningNameTheStartAndTheSize) {
  const auto& g = three_slots();
  mg::distributed_vector<int> a(1009, 1, g), out(2003, g);
  // begin() - 1 compares before begin() + 3, so only the range's own start check stops it.
  expect_every_algorithm_refuses(a, out, -1, 3, {"index -1", "size 1009"});
}

TEST(BadInput, CopyRangeFromChecksBothRangesAlsoOntoItself) {
  const auto& g = three_slots();
  mg::distributed_vector<int> v(10, 1, g);
  // In place (same start) and overlapping: both returned or staged before any check.
  EXPECT_THROW(mg::detail::vector_access::copy_range_from(v, v, 5, 1000, 5), std::invalid_argument);
  EXPECT_THROW(mg::detail::vector_access::copy_range_from(v, v, 0, std::size_t{1} << 40, 1), std::invalid_argument);
  EXPECT_EQ(mg::count(v, 1), 10u);
}

TEST(BadInput, IteratorsOfNoVectorFormOnlyEmptyRanges) {
  mg::distributed_vector<int>::const_iterator none{};
  EXPECT_EQ(mg::reduce(none, none, 5), 5);
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { (void)mg::reduce(none, none + 3, 0); },
                                                   {"reduce", "do not belong to a vector"}));
}

TEST(BadInput, LayoutThatDoesNotFitTheGroupNamesBothCounts) {
  EXPECT_TRUE(throws_naming<std::invalid_argument>(
      [] { mg::distributed_vector<int> v(three_slots(), mg::distribution::block(10, 2)); }, {"2 segments", "3 slots"}));
}

TEST(BadInput, SizesWhoseBytesOverflowAreRejectedAndResizeKeepsTheVector) {
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 4;
  const mg::device_group g({0});
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::distributed_vector<double> v(huge, g); },
                                                   {std::to_string(huge), "8 bytes"}));
  mg::distributed_vector<double> v(std::vector<double>{1.5, 2.5, 3.5}, g);
  g.synchronize();
  const std::size_t used = g.pool(0).usage().used_bytes;
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { v.resize(huge); }, {std::to_string(huge)}));
  EXPECT_EQ(mg::to_vector(v), (std::vector<double>{1.5, 2.5, 3.5})) << "a failed resize must leave the vector as it was";
  g.synchronize();
  EXPECT_EQ(g.pool(0).usage().used_bytes, used);
}

TEST(BadInput, AllocationsLargerThanTheDeviceThrowOutOfMemoryNamingDeviceAndBytes) {
  std::size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  const mg::device_group g({0, 0});
  const std::size_t n = 4 * total_bytes;  // 2x the device's memory per segment
  try {
    mg::distributed_vector<char> v(n, g);
    FAIL() << "a vector of four times the device's memory was created";
  } catch (const mg::out_of_memory& e) {
    EXPECT_EQ(e.device(), 0);
    EXPECT_EQ(e.requested_bytes(), n / 2);
    const std::string what = e.what();
    EXPECT_NE(what.find("device 0"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(n / 2)), std::string::npos) << what;
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  mg::distributed_vector<char> v(1000, 'x', g);
  EXPECT_THROW(v.resize(n), std::bad_alloc) << "out_of_memory is a std::bad_alloc";
  EXPECT_EQ(v.size(), 1000u);
  EXPECT_EQ(mg::count(v, 'x'), 1000u);
}

TEST(BadInput, ExtensionPreconditionsNameTheirValues) {
  const auto& g = three_slots();
  mg::distributed_vector<double> in(100, mg::halo{1}, g), out(100, g), longer(101, g);
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::stencil_transform(in, out, 2, average3{}); },
                                                   {"halo is 1 elements wide", "radius is 2"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::stencil_transform(in, longer, 1, average3{}); },
                                                   {"101", "100"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::for_each_segment(in, longer, ignore_segments{}); },
                                                   {"for_each_segment", "100", "101"}));
  mg::stencil_transform(in, out, 1, average3{});
  EXPECT_EQ(mg::count(out, 0.0), 100u);
}

// Groups built separately over the same devices are different groups (each has its own
// streams and pools): an operand on the other one is redistributed, which the diagnostics
// count, and for_each_segment refuses them with a message that names the copy to make.
struct add_ints {
  __host__ __device__ int operator()(int a, int b) const { return a + b; }
};

TEST(BadInput, SeparatelyBuiltGroupsAreCountedAndNamed) {
  using mg::diagnostics::path;
  const mg::device_group g1({0, 0, 0}), g2({0, 0, 0});
  ASSERT_FALSE(g1 == g2);
  mg::distributed_vector<int> a(iota_vector(1009), g1), b(iota_vector(1009), g2), out(1009, g1);
  const std::uint64_t operands = mg::diagnostics::count(path::redistributed_operand);
  const std::uint64_t outputs = mg::diagnostics::count(path::redistributed_output);
  mg::transform(a, b, out, add_ints{});
  EXPECT_EQ(mg::diagnostics::count(path::redistributed_operand), operands + 1);
  EXPECT_EQ(mg::diagnostics::count(path::redistributed_output), outputs);
  mg::transform(a, a, b, add_ints{});
  EXPECT_EQ(mg::diagnostics::count(path::redistributed_output), outputs + 1);
  const auto twice = mg::to_vector(b);
  for (std::size_t i = 0; i < twice.size(); ++i) ASSERT_EQ(twice[i], 2 * static_cast<int>(i)) << i;
  EXPECT_EQ(mg::to_vector(out), twice);
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { mg::for_each_segment(a, b, ignore_int_segments{}); },
                                                   {"for_each_segment", "different groups", "multigpu::copy"}));
  // Aligned operands on one group cost nothing extra.
  mg::transform(a, out, out, add_ints{});
  EXPECT_EQ(mg::diagnostics::count(path::redistributed_operand), operands + 1);
}

TEST(BadInput, NullIteratorsAsOutputOrSecondInputAreRejected) {
  const auto& g = three_slots();
  mg::distributed_vector<int> a(iota_vector(1009), g), b(1009, 1, g);
  std::vector<int> host = iota_vector(1009);
  const auto a0 = a.cbegin(), a1 = a.cend();
  const mg::distributed_vector<int>::iterator none{};
  const mg::distributed_vector<int>::const_iterator cnone{};
  using E = std::invalid_argument;
  const std::initializer_list<std::string> output{"output", "does not belong to a vector", "1009"};
  const std::initializer_list<std::string> second{"second input", "does not belong to a vector", "1009"};
  EXPECT_TRUE(throws_naming<E>([&] { mg::transform(a0, a1, none, twice{}); }, output));
  EXPECT_TRUE(throws_naming<E>([&] { mg::transform(a0, a1, cnone, b.begin(), add{}); }, second));
  EXPECT_TRUE(throws_naming<E>([&] { mg::transform(a0, a1, b.cbegin(), none, add{}); }, output));
  EXPECT_TRUE(throws_naming<E>([&] { mg::inclusive_scan(a0, a1, none); }, output));
  EXPECT_TRUE(throws_naming<E>([&] { mg::inclusive_scan(a0, a1, none, add{}); }, output));
  EXPECT_TRUE(throws_naming<E>([&] { mg::exclusive_scan(a0, a1, none, 0); }, output));
  EXPECT_TRUE(throws_naming<E>([&] { mg::copy(a0, a1, none); }, output));
  EXPECT_TRUE(throws_naming<E>([&] { mg::copy(host.begin(), host.end(), none); }, output));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::transform_reduce(a0, a1, cnone, 0, add{}, add{}); }, second));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::transform_reduce_async(a0, a1, cnone, 0, add{}, add{}); }, second));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::equal(a0, a1, cnone, cnone + 1009); }, {"equal", "do not belong"}));
  // equal's second range must be one vector's, whatever the lengths say.
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::equal(a0, a1, b.cbegin(), a.cend()); }, {"equal", "different vectors"}));
  EXPECT_TRUE(throws_naming<E>([&] { (void)mg::equal(a0, a1, b.cbegin() + 9, b.cbegin() + 2); },
                               {"equal", "index 9", "index 2"}));
  EXPECT_TRUE(throws_naming<std::out_of_range>([&] { (void)mg::equal(a0, a0 + 1, b.cbegin() + 1009, b.cbegin() + 1010); },
                                               {"equal", "index 1010", "size 1009"}));
  // Empty ranges write nothing, so a null output is no error there.
  mg::transform(a0, a0, none, twice{});
  mg::copy(a0, a0, none);
  EXPECT_TRUE(mg::equal(a0, a0, cnone, cnone));
  EXPECT_EQ(mg::to_vector(a), iota_vector(1009)) << "a rejected call changed its input";
  EXPECT_EQ(mg::count(b, 1), 1009u) << "a rejected call wrote to its output";
}

TEST(BadInput, HalosWhoseStorageOverflowsAreRejectedBeforeAnyAllocation) {
  const auto& g = three_slots();
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  g.synchronize();
  const std::size_t used = g.pool(0).usage().used_bytes;
  // own + 2 * width wraps around for the first two; the bytes overflow for the others.
  for (const std::size_t width : {max, max / 2, max / 2 - 1, max / 8, max / 16 - 2})
    EXPECT_TRUE(throws_naming<std::length_error>([&] { mg::distributed_vector<double> v(100, mg::halo{width}, g); },
                                                 {"halo of width " + std::to_string(width), "8 bytes"}));
  for (const std::size_t width : {max, max / 2})
    EXPECT_TRUE(throws_naming<std::length_error>([&] { mg::distributed_vector<char> v(7, mg::halo{width}, g); },
                                                 {"halo of width " + std::to_string(width)}));
  // An empty vector allocates nothing, so the width is checked when it first gets elements.
  mg::distributed_vector<int> empty(0, mg::halo{max / 2}, g);
  EXPECT_TRUE(throws_naming<std::length_error>([&] { empty.resize(10); }, {"halo of width"}));
  EXPECT_EQ(empty.size(), 0u);
  g.synchronize();
  EXPECT_EQ(g.pool(0).usage().used_bytes, used) << "a rejected halo left memory allocated";
  mg::distributed_vector<int> fine(iota_vector(10), g);
  EXPECT_EQ(mg::reduce(fine), 45);
}

TEST(BadInput, TakingAFuturesValueTwiceIsALogicError) {
  mg::distributed_vector<int> v(100, 1, three_slots());
  auto pending = mg::reduce_async(v);
  EXPECT_EQ(pending.get(), 100);
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { (void)pending.get(); }, {"no value"}));
}

}  // namespace
