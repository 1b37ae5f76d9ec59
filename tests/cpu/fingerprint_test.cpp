// The fingerprint that decides whether a captured collective may be replayed as is: equal
// only for the same values in the same order, and never equal once it cannot tell.
#include <multigpu/runtime/detail/graph_replay.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using multigpu::detail::call_fingerprint;

struct empty_op {};
struct scaled {
  double factor;
};

call_fingerprint of(int a, double b, const void* p) {
  call_fingerprint f;
  f.add_all(a, b, p);
  return f;
}

TEST(CallFingerprint, EqualForTheSameValuesOnly) {
  int x = 0;
  EXPECT_EQ(of(1, 2.0, &x), of(1, 2.0, &x));
  EXPECT_FALSE(of(1, 2.0, &x) == of(2, 2.0, &x));
  EXPECT_FALSE(of(1, 2.0, &x) == of(1, 2.5, &x));
  EXPECT_FALSE(of(1, 2.0, &x) == of(1, 2.0, nullptr));
}

TEST(CallFingerprint, OrderAndLengthMatter) {
  call_fingerprint a, b, c;
  a.add_all(1, 2);
  b.add_all(2, 1);
  c.add_all(1, 2, 3);
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a == c);
}

TEST(CallFingerprint, EmptyOperatorsAddNothingAndStatefulOnesDo) {
  call_fingerprint a, b;
  a.add_all(7, empty_op{});
  b.add(7);
  EXPECT_EQ(a, b);
  call_fingerprint c, d;
  c.add(scaled{2.0});
  d.add(scaled{3.0});
  EXPECT_FALSE(c == d);
}

TEST(CallFingerprint, ValuesThatCannotBeComparedAsBytesMakeItNeverEqual) {
  call_fingerprint a;
  a.add(std::string("x"));
  EXPECT_FALSE(a.valid());
  EXPECT_FALSE(a == a) << "an invalid fingerprint must never allow a replay";
}

TEST(CallFingerprint, TooManyValuesMakeItNeverEqual) {
  call_fingerprint a, b;
  for (int i = 0; i < 1000; ++i) {
    a.add(i);
    b.add(i);
  }
  EXPECT_FALSE(a.valid());
  EXPECT_FALSE(a == b);
}

}  // namespace
