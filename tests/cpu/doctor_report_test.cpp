// multigpu-doctor's JSON and command line, on a fabricated report: no GPU needed. The field
// names are the tool's interface to scripts, so each object's keys are checked exactly and
// in order.
#include "options.hpp"
#include "report.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace doctor = multigpu::doctor;
using nlohmann::ordered_json;

namespace {

std::vector<std::string> keys(const ordered_json& object) {
  std::vector<std::string> out;
  for (auto it = object.begin(); it != object.end(); ++it) out.push_back(it.key());
  return out;
}

// Two slots on device 0 and one on device 3, the last without NUMA or PCIe information.
doctor::report fabricated() {
  doctor::report r;
  r.env.driver_version = 13000;
  r.env.runtime_version = 12090;
  r.env.visible_devices = 4;
  r.env.cuda_visible_devices_set = false;
  r.env.launch_blocking = true;
  r.env.process_cpus = "0-7";
  r.env.nccl_built = true;
  r.env.nccl_version = 22803;
  doctor::measurements& m = r.data;
  m.transfer_bytes = std::size_t{8} << 20;
  m.repetitions = 3;
  m.host_staged = true;
  doctor::device_info d0;
  d0.ordinal = 0;
  d0.slots = {0, 2};
  d0.name = "GPU \"zero\"\n";  // quotes and a newline must come out escaped
  d0.memory_bytes = std::size_t{80} << 30;
  d0.free_memory_bytes = std::size_t{79} << 30;
  d0.compute_major = 9;
  d0.compute_minor = 0;
  d0.multiprocessors = 132;
  d0.pci_bus_id = "0000:01:00.0";
  d0.numa_node = 1;
  d0.local_cpus = "0-31";
  d0.pcie_link = "32.0 GT/s PCIe x16";
  d0.pcie_link_max = "32.0 GT/s PCIe x16";
  doctor::device_info d3 = d0;
  d3.ordinal = 3;
  d3.slots = {1};
  d3.name = "GPU three";
  d3.numa_node = -1;
  d3.local_cpus.clear();
  d3.pcie_link.clear();
  d3.pcie_link_max.clear();
  d3.pageable_uses_host_page_tables = true;
  m.devices = {d0, d3};
  doctor::peer_info p;
  p.from = 0;
  p.to = 3;
  p.can_access = true;
  p.performance_rank = -1;
  p.used_route = multigpu::route::host_staged;
  m.peers = {p};
  doctor::host_copy_measurement h;
  h.device = 3;
  h.direction = doctor::copy_direction::device_to_host;
  h.pageable_sync_gbps = 12.34567;
  h.pageable_async_gbps = std::numeric_limits<double>::quiet_NaN();
  h.pinned_async_gbps = 50.0;
  m.host_copies = {h};
  doctor::peer_copy_measurement pc;
  pc.from = 0;
  pc.to = 3;
  pc.direct_gbps = 20.0;
  pc.host_staged_gbps = 10.0;
  m.peer_copies = {pc};
  doctor::overlap_measurement o;
  o.device = 0;
  o.copy_ms = 2;
  o.kernel_ms = 2;
  o.serial_ms = 4;
  o.overlapped_ms = 2;
  m.overlaps = {o};
  r.verdicts = {{"pinned_copy", "device 3 D2H", doctor::status::warn, "slow", "pin it"},
                {"peer_copy", "0 -> 3", doctor::status::pass, "fine", ""}};
  return r;
}

ordered_json json_of(const doctor::report& r) {
  std::ostringstream out;
  doctor::print_json(out, r);
  return ordered_json::parse(out.str());
}

}  // namespace

TEST(DoctorJson, FieldNamesInOrder) {
  const ordered_json j = json_of(fabricated());
  EXPECT_EQ(keys(j), (std::vector<std::string>{"tool", "version", "exit_status", "options", "environment",
                                               "devices", "peers", "bandwidths", "checks", "summary"}));
  EXPECT_EQ(keys(j["options"]), (std::vector<std::string>{"devices", "host_staged", "transfer_bytes", "repetitions"}));
  EXPECT_EQ(keys(j["environment"]),
            (std::vector<std::string>{"cuda_driver_version", "cuda_runtime_version", "visible_devices",
                                      "cuda_visible_devices", "cuda_launch_blocking", "process_cpus", "mpi_library",
                                      "mpi_cuda_aware", "nccl_version"}));
  ASSERT_EQ(j["devices"].size(), 2u);
  for (const ordered_json& d : j["devices"])
    EXPECT_EQ(keys(d), (std::vector<std::string>{"ordinal", "slots", "name", "memory_bytes", "free_memory_bytes",
                                                 "compute_capability", "multiprocessors", "pci_bus_id", "numa_node",
                                                 "local_cpus", "pcie_link", "pcie_link_max",
                                                 "pageable_uses_host_page_tables"}));
  ASSERT_EQ(j["peers"].size(), 1u);
  EXPECT_EQ(keys(j["peers"][0]), (std::vector<std::string>{"from", "to", "same_device", "can_access", "enabled",
                                                           "verified", "performance_rank", "native_atomics",
                                                           "route"}));
  EXPECT_EQ(keys(j["bandwidths"]), (std::vector<std::string>{"unit", "host", "peer", "overlap"}));
  ASSERT_EQ(j["bandwidths"]["host"].size(), 1u);
  EXPECT_EQ(keys(j["bandwidths"]["host"][0]),
            (std::vector<std::string>{"device", "direction", "pageable_sync_gbps", "pageable_async_gbps",
                                      "pageable_async_host_blocked", "pinned_sync_gbps", "pinned_async_gbps",
                                      "pinned_async_host_blocked"}));
  ASSERT_EQ(j["bandwidths"]["peer"].size(), 1u);
  EXPECT_EQ(keys(j["bandwidths"]["peer"][0]),
            (std::vector<std::string>{"from", "to", "same_device", "direct_gbps", "host_staged_gbps"}));
  ASSERT_EQ(j["bandwidths"]["overlap"].size(), 1u);
  EXPECT_EQ(keys(j["bandwidths"]["overlap"][0]),
            (std::vector<std::string>{"device", "copy_ms", "kernel_ms", "serial_ms", "overlapped_ms",
                                      "hidden_fraction"}));
  ASSERT_EQ(j["checks"].size(), 2u);
  for (const ordered_json& c : j["checks"])
    EXPECT_EQ(keys(c), (std::vector<std::string>{"check", "subject", "status", "finding", "advice"}));
  EXPECT_EQ(keys(j["summary"]), (std::vector<std::string>{"pass", "info", "warn", "fail"}));
}

TEST(DoctorJson, Values) {
  const doctor::report r = fabricated();
  const ordered_json j = json_of(r);
  EXPECT_EQ(j["tool"], "multigpu-doctor");
  EXPECT_EQ(j["exit_status"], doctor::exit_status(r.verdicts));
  // Slot order: device 0 fills slots 0 and 2, device 3 slot 1.
  EXPECT_EQ(j["options"]["devices"], ordered_json::parse("[0,3,0]"));
  EXPECT_EQ(j["options"]["host_staged"], true);
  EXPECT_EQ(j["options"]["transfer_bytes"], std::size_t{8} << 20);
  EXPECT_EQ(j["options"]["repetitions"], 3);
  EXPECT_EQ(j["environment"]["cuda_driver_version"], "13.0");
  EXPECT_EQ(j["environment"]["cuda_runtime_version"], "12.9");
  EXPECT_TRUE(j["environment"]["cuda_visible_devices"].is_null());
  EXPECT_EQ(j["environment"]["cuda_launch_blocking"], true);
  EXPECT_EQ(j["environment"]["process_cpus"], "0-7");
  EXPECT_TRUE(j["environment"]["mpi_library"].is_null());  // not built in the fabricated report
  EXPECT_TRUE(j["environment"]["mpi_cuda_aware"].is_null());
  EXPECT_EQ(j["environment"]["nccl_version"], "2.28.3");

  const ordered_json& d0 = j["devices"][0];
  EXPECT_EQ(d0["name"], "GPU \"zero\"\n");
  EXPECT_EQ(d0["slots"], ordered_json::parse("[0,2]"));
  EXPECT_EQ(d0["memory_bytes"], std::size_t{80} << 30);
  EXPECT_EQ(d0["compute_capability"], "9.0");
  EXPECT_EQ(d0["numa_node"], 1);
  const ordered_json& d3 = j["devices"][1];
  EXPECT_TRUE(d3["numa_node"].is_null());
  EXPECT_TRUE(d3["local_cpus"].is_null());
  EXPECT_TRUE(d3["pcie_link"].is_null());
  EXPECT_TRUE(d3["pcie_link_max"].is_null());
  EXPECT_EQ(d3["pageable_uses_host_page_tables"], true);

  EXPECT_TRUE(j["peers"][0]["performance_rank"].is_null());
  EXPECT_EQ(j["peers"][0]["route"], std::string(to_string(multigpu::route::host_staged)));

  const ordered_json& h = j["bandwidths"]["host"][0];
  EXPECT_EQ(h["direction"], std::string(doctor::to_string(doctor::copy_direction::device_to_host)));
  EXPECT_DOUBLE_EQ(h["pageable_sync_gbps"].get<double>(), 12.346);  // to three decimals
  EXPECT_TRUE(h["pageable_async_gbps"].is_null());                  // NaN is not JSON
  EXPECT_DOUBLE_EQ(h["pinned_async_gbps"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(j["bandwidths"]["overlap"][0]["hidden_fraction"].get<double>(),
                   doctor::hidden_fraction(r.data.overlaps[0]));

  EXPECT_EQ(j["checks"][0]["status"], "warn");
  EXPECT_EQ(j["checks"][1]["advice"], "");
  EXPECT_EQ(j["summary"]["pass"], 1);
  EXPECT_EQ(j["summary"]["warn"], 1);
  EXPECT_EQ(j["summary"]["info"], 0);
  EXPECT_EQ(j["summary"]["fail"], 0);
}

TEST(DoctorJson, ErrorDocument) {
  std::ostringstream out;
  doctor::print_json_error(out, "cannot run: \"why\"");
  const ordered_json j = ordered_json::parse(out.str());
  EXPECT_EQ(keys(j), (std::vector<std::string>{"tool", "version", "exit_status", "error"}));
  EXPECT_EQ(j["exit_status"], 2);
  EXPECT_EQ(j["error"], "cannot run: \"why\"");
}

TEST(DoctorOptions, ParsesEveryOption) {
  const doctor::parsed_options p =
      doctor::parse_options({"--devices", "0,0,2", "--host-staged", "--json", "--size-mib=8", "--repetitions", "5"});
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.value.devices, (std::vector<int>{0, 0, 2}));
  EXPECT_TRUE(p.value.host_staged);
  EXPECT_TRUE(p.value.json);
  EXPECT_FALSE(p.value.help);
  EXPECT_EQ(p.value.size_mib, 8u);
  EXPECT_EQ(p.value.repetitions, 5);
}

TEST(DoctorOptions, DefaultsAndLastValueWins) {
  const doctor::parsed_options none = doctor::parse_options({});
  ASSERT_EQ(none.error, "");
  EXPECT_TRUE(none.value.devices.empty());
  EXPECT_EQ(none.value.size_mib, 256u);
  EXPECT_EQ(none.value.repetitions, 3);
  EXPECT_FALSE(none.value.json);
  const doctor::parsed_options twice = doctor::parse_options({"--devices", "1", "--devices", "0,1"});
  ASSERT_EQ(twice.error, "");
  EXPECT_EQ(twice.value.devices, (std::vector<int>{0, 1}));
  EXPECT_TRUE(doctor::parse_options({"--help"}).value.help);
  EXPECT_NE(doctor::usage().find("--size-mib"), std::string::npos);
}

TEST(DoctorOptions, BadArgumentsSayWhy) {
  EXPECT_NE(doctor::parse_options({"--devices", "0,,1"}).error.find("--devices: takes CUDA ordinals"), std::string::npos);
  EXPECT_NE(doctor::parse_options({"--size-mib", "65537"}).error.find("from 1 to 65536"), std::string::npos);
  EXPECT_NE(doctor::parse_options({"--repetitions", "0"}).error.find("--repetitions"), std::string::npos);
  EXPECT_NE(doctor::parse_options({"--nope"}).error.find("--nope"), std::string::npos);
  EXPECT_FALSE(doctor::parse_options({"--json=yes"}).error.empty());
}
