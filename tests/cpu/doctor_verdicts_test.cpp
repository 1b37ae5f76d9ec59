// The doctor's verdicts, fed made-up measurements: a healthy machine passes, and each check
// (pinned copies, pageable async copies, peer copies, copy and kernel overlap) fails or warns
// where it should, with the words the doctor prints.
#include <verdicts.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace doc = multigpu::doctor;
using doc::status;

namespace {

// Two H200-like GPUs over NVLink, behind a PCIe 5.0 host link: every check passes.
doc::measurements healthy() {
  doc::measurements m;
  m.transfer_bytes = std::size_t{256} << 20;
  m.repetitions = 3;
  for (int d : {0, 1}) {
    doc::device_info info;
    info.ordinal = d;
    info.slots = {static_cast<std::size_t>(d)};
    info.name = "NVIDIA H200";
    info.pcie_link = "32.0 GT/s PCIe x16";
    info.pcie_link_max = "32.0 GT/s PCIe x16";
    m.devices.push_back(info);
    for (auto dir : {doc::copy_direction::host_to_device, doc::copy_direction::device_to_host}) {
      doc::host_copy_measurement h;
      h.device = d;
      h.direction = dir;
      h.pageable_sync_gbps = 20.0;
      h.pageable_async_gbps = 20.5;
      h.pageable_async_host_blocked = 0.97;
      h.pinned_sync_gbps = 53.0;
      h.pinned_async_gbps = 53.5;
      h.pinned_async_host_blocked = 0.002;
      m.host_copies.push_back(h);
    }
    m.overlaps.push_back({d, 5.0, 5.1, 10.1, 5.3});
  }
  for (auto [from, to] : {std::pair{0, 1}, std::pair{1, 0}}) {
    doc::peer_info link;
    link.from = from;
    link.to = to;
    link.can_access = link.enabled = link.verified = true;
    link.performance_rank = 0;
    link.native_atomics = true;
    link.used_route = multigpu::route::peer;
    m.peers.push_back(link);
    m.peer_copies.push_back({from, to, false, 380.0, 40.0});
  }
  return m;
}

// By value: callers pass the temporary that judge() returns.
doc::verdict find(const std::vector<doc::verdict>& verdicts, const std::string& check,
                  const std::string& subject) {
  auto it = std::find_if(verdicts.begin(), verdicts.end(), [&](const doc::verdict& v) {
    return v.check == check && v.subject == subject;
  });
  if (it == verdicts.end()) throw std::runtime_error("no verdict " + check + " on " + subject);
  return *it;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

doc::host_copy_measurement& h2d_of_device_0(doc::measurements& m) { return m.host_copies[0]; }

doc::peer_info& link(doc::measurements& m, int from, int to) {
  for (auto& p : m.peers)
    if (p.from == from && p.to == to) return p;
  throw std::runtime_error("no link");
}

}  // namespace

TEST(DoctorVerdicts, HealthyMachinePassesEveryCheck) {
  const auto verdicts = doc::judge(healthy());
  // Two checks per host copy (2 devices x 2 directions x 2), one per pair (2), one per
  // device's overlap (2).
  ASSERT_EQ(verdicts.size(), 12u);
  EXPECT_EQ(doc::exit_status(verdicts), 0);
  EXPECT_EQ(doc::count(verdicts, status::fail), 0u);
  EXPECT_EQ(doc::count(verdicts, status::warn), 0u);
  EXPECT_EQ(find(verdicts, "pinned_copy", "device 0 H2D").result, status::pass);
  EXPECT_EQ(find(verdicts, "pinned_copy", "device 1 D2H").result, status::pass);
  EXPECT_EQ(find(verdicts, "peer_copy", "0 -> 1").result, status::pass);
  EXPECT_EQ(find(verdicts, "copy_kernel_overlap", "device 1").result, status::pass);
  EXPECT_TRUE(find(verdicts, "peer_copy", "1 -> 0").advice.empty());
}

TEST(DoctorVerdicts, PageableAsyncAtSyncSpeedIsExplainedNotFailed) {
  // cudaMemcpyAsync from pageable memory is a sync copy in disguise on every x86 machine:
  // the symptom of unpinned host memory, shown with its remedy, but not a fault of the machine.
  const auto verdicts = doc::judge(healthy());
  const auto v = find(verdicts, "pageable_async", "device 0 H2D");
  EXPECT_EQ(v.result, status::info);
  EXPECT_TRUE(contains(v.finding, "pageable async copy runs at sync speed")) << v.finding;
  EXPECT_TRUE(contains(v.finding, "host memory not pinned")) << v.finding;
  EXPECT_TRUE(contains(v.advice, "stage through pinned memory")) << v.advice;
}

TEST(DoctorVerdicts, PageableAsyncThatBlocksTheHostCountsAsSyncEvenWhenFast) {
  auto m = healthy();
  h2d_of_device_0(m).pageable_async_gbps = 40.0;  // faster than cudaMemcpy, yet held the host
  EXPECT_EQ(find(doc::judge(m), "pageable_async", "device 0 H2D").result, status::info);
}

TEST(DoctorVerdicts, TrulyAsyncPageableCopiesPass) {
  auto m = healthy();
  h2d_of_device_0(m).pageable_async_gbps = 40.0;
  h2d_of_device_0(m).pageable_async_host_blocked = 0.05;
  const auto v = find(doc::judge(m), "pageable_async", "device 0 H2D");
  EXPECT_EQ(v.result, status::pass);
  EXPECT_TRUE(contains(v.finding, "asynchronous")) << v.finding;
}

TEST(DoctorVerdicts, PinnedAsyncCopyThatHoldsTheHostFails) {
  auto m = healthy();
  h2d_of_device_0(m).pinned_async_host_blocked = 0.96;
  const auto verdicts = doc::judge(m);
  const auto v = find(verdicts, "pinned_copy", "device 0 H2D");
  EXPECT_EQ(v.result, status::fail);
  EXPECT_TRUE(contains(v.finding, "host memory is not pinned")) << v.finding;
  EXPECT_TRUE(contains(v.finding, "96%")) << v.finding;
  EXPECT_FALSE(v.advice.empty());
  EXPECT_EQ(doc::exit_status(verdicts), 1);
}

TEST(DoctorVerdicts, BlockingPinnedCopyBlamesCudaLaunchBlockingWhenItIsSet) {
  auto m = healthy();
  m.launch_blocking = true;
  h2d_of_device_0(m).pinned_async_host_blocked = 1.0;
  const auto v = find(doc::judge(m), "pinned_copy", "device 0 H2D");
  EXPECT_EQ(v.result, status::fail);
  EXPECT_TRUE(v.advice.starts_with("CUDA_LAUNCH_BLOCKING=1 is set")) << v.advice;
}

TEST(DoctorVerdicts, PinnedAsyncAtPageableSyncSpeedFails) {
  // "Async copies as slow as sync copies mean the host memory is not pinned."
  auto m = healthy();
  h2d_of_device_0(m).pinned_async_gbps = 21.0;  // pageable cudaMemcpy: 20
  const auto verdicts = doc::judge(m);
  const auto v = find(verdicts, "pinned_copy", "device 0 H2D");
  EXPECT_EQ(v.result, status::fail);
  EXPECT_TRUE(contains(v.finding, "21.0 GB/s")) << v.finding;
  EXPECT_TRUE(contains(v.finding, "20.0 GB/s")) << v.finding;
  EXPECT_TRUE(contains(v.finding, "not pinned")) << v.finding;
  EXPECT_TRUE(contains(v.advice, "32.0 GT/s PCIe x16")) << "advice names the link: " << v.advice;
  EXPECT_EQ(doc::exit_status(verdicts), 1);
  // Only that subject fails.
  EXPECT_EQ(doc::count(verdicts, status::fail), 1u);
}

TEST(DoctorVerdicts, PinnedSpeedupThresholdIsInclusive) {
  auto m = healthy();
  auto& h = h2d_of_device_0(m);
  h.pinned_async_gbps = h.pageable_sync_gbps * doc::thresholds::pinned_speedup_min;
  EXPECT_EQ(find(doc::judge(m), "pinned_copy", "device 0 H2D").result, status::pass);
  h.pinned_async_gbps = h.pageable_sync_gbps * doc::thresholds::pinned_speedup_min * 0.99;
  EXPECT_EQ(find(doc::judge(m), "pinned_copy", "device 0 H2D").result, status::fail);
}

TEST(DoctorVerdicts, PinnedAtPageableSpeedOnlyWarnsWhenTheGpuUsesHostPageTables) {
  // Grace Hopper and other ATS systems read pageable memory directly: no staging to save.
  auto m = healthy();
  m.devices[0].pageable_uses_host_page_tables = true;
  h2d_of_device_0(m).pinned_async_gbps = 20.0;
  const auto verdicts = doc::judge(m);
  EXPECT_EQ(find(verdicts, "pinned_copy", "device 0 H2D").result, status::warn);
  EXPECT_EQ(doc::exit_status(verdicts), 0);
}

TEST(DoctorVerdicts, PeerCopyBelowHostStagedFailsSayingP2PIsNotEnabled) {
  auto m = healthy();
  link(m, 0, 1) = {0, 1, false, false, false, false, -1, false, multigpu::route::host_staged};
  m.peer_copies[0].direct_gbps = 12.0;
  m.peer_copies[0].host_staged_gbps = 40.0;
  const auto verdicts = doc::judge(m);
  const auto v = find(verdicts, "peer_copy", "0 -> 1");
  EXPECT_EQ(v.result, status::fail);
  EXPECT_TRUE(contains(v.finding, "peer copy 0 -> 1 at 12.0 GB/s, below host-staged 40.0 GB/s")) << v.finding;
  EXPECT_TRUE(contains(v.finding, "P2P is not enabled or the link is PCIe through the CPU")) << v.finding;
  EXPECT_TRUE(contains(v.advice, "stages it through pinned memory")) << v.advice;
  EXPECT_EQ(doc::exit_status(verdicts), 1);
}

TEST(DoctorVerdicts, WorkingLinkSlowerThanTheHostRouteFails) {
  // P2P over PCIe through the CPU's root complex: enabled, verified, and slow.
  auto m = healthy();
  m.peer_copies[1].direct_gbps = 15.0;
  m.peer_copies[1].host_staged_gbps = 25.0;
  const auto v = find(doc::judge(m), "peer_copy", "1 -> 0");
  EXPECT_EQ(v.result, status::fail);
  EXPECT_TRUE(contains(v.advice, "root complex")) << v.advice;
}

TEST(DoctorVerdicts, PeerThresholdIsInclusive) {
  auto m = healthy();
  auto& p = m.peer_copies[0];
  p.host_staged_gbps = 50.0;
  p.direct_gbps = 50.0 * doc::thresholds::peer_over_staged_min;
  EXPECT_EQ(find(doc::judge(m), "peer_copy", "0 -> 1").result, status::pass);
  p.direct_gbps = 50.0 * doc::thresholds::peer_over_staged_min * 0.99;
  EXPECT_EQ(find(doc::judge(m), "peer_copy", "0 -> 1").result, status::fail);
}

TEST(DoctorVerdicts, NoP2PWithAFallbackAsFastAsStagingWarns) {
  // No link in the topology, but nothing slower than multigpu's own route: a limit of the
  // machine that the library already works around.
  auto m = healthy();
  link(m, 0, 1) = {0, 1, false, false, false, false, -1, false, multigpu::route::host_staged};
  m.peer_copies[0].direct_gbps = 39.0;
  m.peer_copies[0].host_staged_gbps = 40.0;
  const auto verdicts = doc::judge(m);
  const auto v = find(verdicts, "peer_copy", "0 -> 1");
  EXPECT_EQ(v.result, status::warn);
  EXPECT_TRUE(contains(v.finding, "no P2P")) << v.finding;
  EXPECT_EQ(doc::exit_status(verdicts), 0);
}

TEST(DoctorVerdicts, SupportedButNotEnabledPeerAccessFails) {
  auto m = healthy();
  link(m, 0, 1).enabled = false;
  link(m, 0, 1).verified = false;
  const auto v = find(doc::judge(m), "peer_copy", "0 -> 1");
  EXPECT_EQ(v.result, status::fail);
  EXPECT_TRUE(contains(v.finding, "could not be enabled")) << v.finding;
}

TEST(DoctorVerdicts, LinkThatFailedItsDataCheckFailsEvenWhenFast) {
  auto m = healthy();
  link(m, 1, 0).verified = false;
  const auto v = find(doc::judge(m), "peer_copy", "1 -> 0");
  EXPECT_EQ(v.result, status::fail);
  EXPECT_TRUE(contains(v.finding, "wrong data")) << v.finding;
}

TEST(DoctorVerdicts, SameDevicePairIsReportedAsSuchAndNeverFails) {
  for (bool host_staged : {false, true}) {
    auto m = healthy();
    m.host_staged = host_staged;
    doc::peer_info same;
    same.from = same.to = 0;
    same.same_device = true;
    same.used_route = host_staged ? multigpu::route::host_staged : multigpu::route::same_device;
    m.peers = {same};
    m.peer_copies = {{0, 0, true, 1500.0, 1.0}};  // even a dreadful staged route
    const auto verdicts = doc::judge(m);
    const auto v = find(verdicts, "peer_copy", "0 -> 0");
    EXPECT_EQ(v.result, status::info);
    EXPECT_TRUE(contains(v.finding, "same device")) << v.finding;
    EXPECT_EQ(contains(v.finding, "--host-staged"), host_staged) << v.finding;
    EXPECT_EQ(doc::exit_status(verdicts), 0);
  }
}

TEST(DoctorVerdicts, HostStagedRunGivesNoPeerVerdict) {
  auto m = healthy();
  m.host_staged = true;
  for (auto& p : m.peers) p.enabled = p.verified = false;
  for (auto& p : m.peer_copies) p.direct_gbps = 5.0;  // far below the staged 40
  const auto verdicts = doc::judge(m);
  const auto v = find(verdicts, "peer_copy", "0 -> 1");
  EXPECT_EQ(v.result, status::info);
  EXPECT_TRUE(contains(v.finding, "--host-staged")) << v.finding;
  EXPECT_EQ(doc::exit_status(verdicts), 0);
}

TEST(DoctorVerdicts, SerialisedCopyAndKernelFail) {
  auto m = healthy();
  m.overlaps[0] = {0, 5.0, 5.0, 10.0, 9.8};
  const auto verdicts = doc::judge(m);
  const auto v = find(verdicts, "copy_kernel_overlap", "device 0");
  EXPECT_EQ(v.result, status::fail);
  EXPECT_TRUE(contains(v.finding, "copy and kernel serialised")) << v.finding;
  EXPECT_TRUE(contains(v.finding, "they share a stream or the host memory is pageable")) << v.finding;
  EXPECT_TRUE(contains(v.finding, "4%")) << "share hidden: " << v.finding;
  EXPECT_FALSE(contains(v.advice, "CUDA_LAUNCH_BLOCKING=1 is set")) << v.advice;
  EXPECT_EQ(doc::exit_status(verdicts), 1);
}

TEST(DoctorVerdicts, SerialisationBlamesCudaLaunchBlockingWhenItIsSet) {
  auto m = healthy();
  m.launch_blocking = true;
  m.overlaps[1] = {1, 5.0, 5.0, 10.0, 10.0};
  const auto v = find(doc::judge(m), "copy_kernel_overlap", "device 1");
  EXPECT_EQ(v.result, status::fail);
  EXPECT_TRUE(v.advice.starts_with("CUDA_LAUNCH_BLOCKING=1 is set")) << v.advice;
}

TEST(DoctorVerdicts, OverlapThresholdIsInclusive) {
  auto m = healthy();
  const double hidden = doc::thresholds::overlap_hidden_min;
  m.overlaps[0] = {0, 4.0, 4.0, 8.0, 8.0 - hidden * 4.0};
  EXPECT_EQ(find(doc::judge(m), "copy_kernel_overlap", "device 0").result, status::pass);
  m.overlaps[0].overlapped_ms += 0.1;
  EXPECT_EQ(find(doc::judge(m), "copy_kernel_overlap", "device 0").result, status::fail);
}

TEST(DoctorVerdicts, UnbalancedCopyAndKernelGiveNoVerdict) {
  // A kernel far shorter than the copy hides inside it whatever the streams do.
  auto m = healthy();
  m.overlaps[0] = {0, 5.0, 0.5, 5.5, 5.5};
  const auto verdicts = doc::judge(m);
  EXPECT_EQ(find(verdicts, "copy_kernel_overlap", "device 0").result, status::info);
  EXPECT_EQ(doc::exit_status(verdicts), 0);
}

TEST(DoctorVerdicts, MissingMeasurementsAreReportedNotJudged) {
  doc::measurements m;
  m.host_copies.push_back({});
  m.peer_copies.push_back({0, 1, false, 0.0, 0.0});
  m.overlaps.push_back({});
  const auto verdicts = doc::judge(m);
  ASSERT_EQ(verdicts.size(), 4u);
  for (const auto& v : verdicts) {
    EXPECT_EQ(v.result, status::info) << v.check;
    EXPECT_TRUE(contains(v.finding, "not measured")) << v.finding;
  }
  EXPECT_EQ(doc::exit_status(verdicts), 0);
}

TEST(DoctorVerdicts, NothingMeasuredMeansNothingFailed) {
  const auto verdicts = doc::judge({});
  EXPECT_TRUE(verdicts.empty());
  EXPECT_EQ(doc::exit_status(verdicts), 0);
}

TEST(DoctorVerdicts, ArithmeticHelpers) {
  EXPECT_DOUBLE_EQ(doc::gigabytes_per_second(1'000'000'000, 1000.0), 1.0);
  EXPECT_DOUBLE_EQ(doc::gigabytes_per_second(std::size_t{256} << 20, 5.0), 268435456.0 / 1e9 / 0.005);
  EXPECT_EQ(doc::gigabytes_per_second(100, 0.0), 0.0);
  EXPECT_EQ(doc::gigabytes_per_second(100, -1.0), 0.0);
  EXPECT_DOUBLE_EQ(doc::hidden_fraction({0, 4.0, 2.0, 6.0, 5.0}), 0.5);
  EXPECT_DOUBLE_EQ(doc::hidden_fraction({0, 4.0, 2.0, 6.0, 7.0}), 0.0);  // slower: clamped
  EXPECT_DOUBLE_EQ(doc::hidden_fraction({0, 4.0, 2.0, 6.0, 1.0}), 1.0);  // noise: clamped
  EXPECT_DOUBLE_EQ(doc::hidden_fraction({}), 0.0);
  EXPECT_EQ(doc::to_string(status::fail), "fail");
  EXPECT_EQ(doc::to_string(doc::copy_direction::device_to_host), "D2H");
}
