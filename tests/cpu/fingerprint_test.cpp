// The fingerprint that decides whether a captured collective may be replayed as is: equal
// only for the same values in the same order, and never equal once it cannot tell. And the
// bound kernel whose arguments a replay writes into the captured node.
#include <multigpu/runtime/detail/graph_replay.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace {

using multigpu::detail::call_fingerprint;
using multigpu::detail::kernel_launch;
using multigpu::detail::result_kernel;

// Stands for a kernel: kernel_launch only needs its parameter types here (nothing launches).
void fold_like(const int*, std::size_t, double, bool) {}

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

TEST(CallFingerprint, AnOptionalValueAddsWhetherItIsThereThenItsValueOnly) {
  // Two empty optionals whose storage once held different values are equal: the storage of an
  // empty optional is not part of it.
  std::optional<double> was_one(1.0), was_two(2.0);
  was_one.reset();
  was_two.reset();
  call_fingerprint a, b, c, d, e;
  a.add_all(7, was_one);
  b.add_all(7, was_two);
  EXPECT_EQ(a, b);
  c.add_all(7, std::optional<double>(1.0));
  d.add_all(7, std::optional<double>(2.0));
  EXPECT_FALSE(a == c);
  EXPECT_FALSE(c == d);
  // An init of 0 is not the same as no init.
  e.add_all(7, std::optional<double>(0.0));
  EXPECT_FALSE(a == e);
}

TEST(KernelLaunch, ItsNodeHoldsThisCallsArgumentsAsTheKernelsParameterTypes) {
  int x = 0;
  kernel_launch launch(&fold_like, &x, 7, 2.5f, true);  // converted to the parameters' types
  const result_kernel node = launch.node();
  EXPECT_EQ(node.function, reinterpret_cast<void*>(&fold_like));
  EXPECT_EQ(*static_cast<const int**>(node.arguments[0]), &x);
  EXPECT_EQ(*static_cast<std::size_t*>(node.arguments[1]), 7u);
  EXPECT_EQ(*static_cast<double*>(node.arguments[2]), 2.5);
  EXPECT_TRUE(*static_cast<bool*>(node.arguments[3]));
}

}  // namespace
