#include "report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string_view>

#ifndef MULTIGPU_DOCTOR_VERSION
#define MULTIGPU_DOCTOR_VERSION "unknown"
#endif

namespace multigpu::doctor {
namespace {

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

std::string bytes_text(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return fixed(value, unit == 0 ? 0 : 1) + " " + units[unit];
}

template <class Number>
std::string join(const std::vector<Number>& values) {
  std::string out;
  for (Number v : values) {
    if (!out.empty()) out += ',';
    out += std::to_string(v);
  }
  return out;
}

std::string or_dash(const std::string& text) { return text.empty() ? "-" : text; }
std::string yes_no(bool b) { return b ? "yes" : "no"; }
std::string gbps(double value) { return value > 0 ? fixed(value, 1) : "-"; }
std::string ms(double value) { return value > 0 ? fixed(value, 2) : "-"; }
std::string percent(double fraction) { return fixed(fraction * 100.0, 0) + "%"; }

std::vector<int> slot_devices(const report& r) {
  std::size_t slots = 0;
  for (const device_info& d : r.data.devices) slots += d.slots.size();
  std::vector<int> ids(slots);
  for (const device_info& d : r.data.devices)
    for (std::size_t s : d.slots) ids[s] = d.ordinal;
  return ids;
}

// ---- table ---------------------------------------------------------------------------

using row = std::vector<std::string>;

void print_rows(std::ostream& out, const row& header, const std::vector<row>& rows) {
  std::vector<std::size_t> width(header.size(), 0);
  auto measure = [&](const row& r) {
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  };
  measure(header);
  for (const row& r : rows) measure(r);
  auto print = [&](const row& r) {
    std::string line = " ";
    for (std::size_t c = 0; c < r.size(); ++c) {
      line += " " + r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 1, ' ');
    }
    out << line << "\n";
  };
  print(header);
  for (const row& r : rows) print(r);
}

std::string peer_cell(const peer_info& p, bool value) { return p.same_device ? "-" : yes_no(value); }

// ---- JSON ----------------------------------------------------------------------------

// Keys in the order they are written (ordered_json), so that the output reads top-down:
// tool, version, exit status, then the sections.
using json = nlohmann::ordered_json;

// Measurements to the millisecond or MB/s they are good for; NaN and infinities as null.
json number(double x) {
  if (!std::isfinite(x)) return nullptr;
  return std::round(x * 1000.0) / 1000.0;
}
/// A string, or null when it is empty (the driver did not tell).
json text_or_null(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }
json int_or_null(int value) { return value >= 0 ? json(value) : json(nullptr); }

// NCCL's version code (major * 10000 + minor * 100 + patch since 2.9) as "2.28.3".
std::string nccl_version_text(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

void write(std::ostream& out, const json& document) { out << document.dump(2) << "\n"; }

}  // namespace

void print_table(std::ostream& out, const report& r) {
  const measurements& m = r.data;
  out << "multigpu-doctor " << MULTIGPU_DOCTOR_VERSION << ": devices " << join(slot_devices(r))
      << (m.host_staged ? " (host staged: peer access refused)" : "") << ", "
      << bytes_text(m.transfer_bytes) << " per transfer, median of " << m.repetitions << " run(s)\n";
  out << "CUDA driver " << format_cuda_version(r.env.driver_version) << ", runtime "
      << format_cuda_version(r.env.runtime_version) << "; " << r.env.visible_devices
      << " visible device(s); CUDA_VISIBLE_DEVICES "
      << (r.env.cuda_visible_devices_set ? "=" + r.env.cuda_visible_devices : std::string("unset"))
      << "; this process runs on CPUs " << or_dash(r.env.process_cpus) << "\n";
  if (r.env.launch_blocking) out << "CUDA_LAUNCH_BLOCKING=1: every launch and copy is synchronous\n";
  out << "MPI: "
      << (r.env.mpi_built ? or_dash(r.env.mpi_library) + (r.env.mpi_cuda_aware ? " (CUDA-aware)" : " (not CUDA-aware: host-staged)")
                          : std::string("not built"))
      << "; NCCL: "
      << (!r.env.nccl_built ? std::string("not built")
                            : r.env.nccl_version > 0 ? nccl_version_text(r.env.nccl_version) : std::string("library not found"))
      << "\n";

  out << "\nDevices\n";
  std::vector<row> rows;
  for (const device_info& d : m.devices)
    rows.push_back({std::to_string(d.ordinal), join(d.slots), d.name, bytes_text(d.memory_bytes),
                    bytes_text(d.free_memory_bytes),
                    std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor),
                    std::to_string(d.multiprocessors), d.pci_bus_id,
                    d.numa_node >= 0 ? std::to_string(d.numa_node) : "-", or_dash(d.local_cpus),
                    d.pcie_link.empty() ? "-" : d.pcie_link + " (max " + or_dash(d.pcie_link_max) + ")"});
  print_rows(out, {"device", "slots", "name", "memory", "free", "cc", "SMs", "PCI bus id", "NUMA",
                   "local CPUs", "PCIe link now (max)"},
             rows);

  out << "\nPeer access (every ordered pair; enabled and verified by the group's data check)\n";
  if (m.peers.empty()) {
    out << "  no pairs: a single device in a single slot\n";
  } else {
    rows.clear();
    for (const peer_info& p : m.peers)
      rows.push_back({std::to_string(p.from) + " -> " + std::to_string(p.to),
                      p.same_device ? "same device" : yes_no(p.can_access), peer_cell(p, p.enabled),
                      peer_cell(p, p.verified),
                      p.performance_rank >= 0 ? std::to_string(p.performance_rank) : "-",
                      peer_cell(p, p.native_atomics), std::string(to_string(p.used_route))});
    print_rows(out, {"from -> to", "can access", "enabled", "verified", "perf rank", "atomics", "route"}, rows);
  }

  out << "\nHost <-> device copies (GB/s; held: share of the copy the host spent inside cudaMemcpyAsync)\n";
  rows.clear();
  for (const host_copy_measurement& h : m.host_copies)
    rows.push_back({std::to_string(h.device), std::string(to_string(h.direction)), gbps(h.pageable_sync_gbps),
                    gbps(h.pageable_async_gbps), percent(h.pageable_async_host_blocked),
                    gbps(h.pinned_sync_gbps), gbps(h.pinned_async_gbps),
                    percent(h.pinned_async_host_blocked)});
  print_rows(out, {"device", "dir", "pageable sync", "pageable async", "held", "pinned sync", "pinned async", "held"},
             rows);

  out << "\nDevice -> device copies (GB/s; direct: cudaMemcpyPeerAsync, or cudaMemcpyAsync on one device)\n";
  if (m.peer_copies.empty()) {
    out << "  no pairs: a single device in a single slot\n";
  } else {
    rows.clear();
    for (const peer_copy_measurement& p : m.peer_copies) {
      std::string used = "-";
      for (const peer_info& link : m.peers)
        if (link.from == p.from && link.to == p.to) used = std::string(to_string(link.used_route));
      rows.push_back({std::to_string(p.from) + " -> " + std::to_string(p.to), used, gbps(p.direct_gbps),
                      gbps(p.host_staged_gbps)});
    }
    print_rows(out, {"from -> to", "route", "direct", "host staged"}, rows);
  }

  out << "\nCopy and kernel overlap (ms; pinned host-to-device copy, a kernel of the same length)\n";
  rows.clear();
  for (const overlap_measurement& o : m.overlaps)
    rows.push_back({std::to_string(o.device), ms(o.copy_ms), ms(o.kernel_ms), ms(o.serial_ms),
                    ms(o.overlapped_ms), percent(hidden_fraction(o))});
  print_rows(out, {"device", "copy", "kernel", "one after the other", "two streams", "hidden"}, rows);

  out << "\nChecks\n";
  std::size_t check_width = 0, subject_width = 0;
  for (const verdict& v : r.verdicts) {
    check_width = std::max(check_width, v.check.size());
    subject_width = std::max(subject_width, v.subject.size());
  }
  for (const verdict& v : r.verdicts) {
    std::string status(to_string(v.result));
    std::transform(status.begin(), status.end(), status.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    out << "  " << status << "  " << v.check << std::string(check_width - v.check.size() + 2, ' ')
        << v.subject << std::string(subject_width - v.subject.size() + 2, ' ') << v.finding << "\n";
    if (!v.advice.empty())
      out << std::string(2 + 4 + 2 + check_width + 2 + subject_width + 2, ' ') << "what to do: " << v.advice << "\n";
  }
  const int code = exit_status(r.verdicts);
  out << "\n" << r.verdicts.size() << " check(s): " << count(r.verdicts, status::pass) << " pass, "
      << count(r.verdicts, status::info) << " info, " << count(r.verdicts, status::warn) << " warn, "
      << count(r.verdicts, status::fail) << " fail: "
      << (code == 0 ? "all checks pass" : "a check failed") << " (exit status " << code << ")\n";
}

void print_json(std::ostream& out, const report& r) {
  const measurements& m = r.data;
  json j;
  j["tool"] = "multigpu-doctor";
  j["version"] = MULTIGPU_DOCTOR_VERSION;
  j["exit_status"] = exit_status(r.verdicts);

  j["options"] = {{"devices", slot_devices(r)},
                  {"host_staged", m.host_staged},
                  {"transfer_bytes", m.transfer_bytes},
                  {"repetitions", m.repetitions}};

  j["environment"] = {
      {"cuda_driver_version", format_cuda_version(r.env.driver_version)},
      {"cuda_runtime_version", format_cuda_version(r.env.runtime_version)},
      {"visible_devices", r.env.visible_devices},
      {"cuda_visible_devices", r.env.cuda_visible_devices_set ? json(r.env.cuda_visible_devices) : json(nullptr)},
      {"cuda_launch_blocking", r.env.launch_blocking},
      {"process_cpus", text_or_null(r.env.process_cpus)},
      {"mpi_library", r.env.mpi_built ? text_or_null(r.env.mpi_library) : json(nullptr)},
      {"mpi_cuda_aware", r.env.mpi_built ? json(r.env.mpi_cuda_aware) : json(nullptr)},
      {"nccl_version", r.env.nccl_built && r.env.nccl_version > 0 ? json(nccl_version_text(r.env.nccl_version))
                                                                   : json(nullptr)}};

  json devices = json::array();
  for (const device_info& d : m.devices)
    devices.push_back({{"ordinal", d.ordinal},
                       {"slots", d.slots},
                       {"name", d.name},
                       {"memory_bytes", d.memory_bytes},
                       {"free_memory_bytes", d.free_memory_bytes},
                       {"compute_capability", std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor)},
                       {"multiprocessors", d.multiprocessors},
                       {"pci_bus_id", d.pci_bus_id},
                       {"numa_node", int_or_null(d.numa_node)},
                       {"local_cpus", text_or_null(d.local_cpus)},
                       {"pcie_link", text_or_null(d.pcie_link)},
                       {"pcie_link_max", text_or_null(d.pcie_link_max)},
                       {"pageable_uses_host_page_tables", d.pageable_uses_host_page_tables}});
  j["devices"] = std::move(devices);

  json peers = json::array();
  for (const peer_info& p : m.peers)
    peers.push_back({{"from", p.from},
                     {"to", p.to},
                     {"same_device", p.same_device},
                     {"can_access", p.can_access},
                     {"enabled", p.enabled},
                     {"verified", p.verified},
                     {"performance_rank", int_or_null(p.performance_rank)},
                     {"native_atomics", p.native_atomics},
                     {"route", std::string(to_string(p.used_route))}});
  j["peers"] = std::move(peers);

  json host = json::array();
  for (const host_copy_measurement& h : m.host_copies)
    host.push_back({{"device", h.device},
                    {"direction", std::string(to_string(h.direction))},
                    {"pageable_sync_gbps", number(h.pageable_sync_gbps)},
                    {"pageable_async_gbps", number(h.pageable_async_gbps)},
                    {"pageable_async_host_blocked", number(h.pageable_async_host_blocked)},
                    {"pinned_sync_gbps", number(h.pinned_sync_gbps)},
                    {"pinned_async_gbps", number(h.pinned_async_gbps)},
                    {"pinned_async_host_blocked", number(h.pinned_async_host_blocked)}});
  json peer = json::array();
  for (const peer_copy_measurement& p : m.peer_copies)
    peer.push_back({{"from", p.from},
                    {"to", p.to},
                    {"same_device", p.same_device},
                    {"direct_gbps", number(p.direct_gbps)},
                    {"host_staged_gbps", number(p.host_staged_gbps)}});
  json overlap = json::array();
  for (const overlap_measurement& o : m.overlaps)
    overlap.push_back({{"device", o.device},
                       {"copy_ms", number(o.copy_ms)},
                       {"kernel_ms", number(o.kernel_ms)},
                       {"serial_ms", number(o.serial_ms)},
                       {"overlapped_ms", number(o.overlapped_ms)},
                       {"hidden_fraction", number(hidden_fraction(o))}});
  j["bandwidths"] = {{"unit", "GB/s (1e9 bytes per second); overlap times in ms"},
                     {"host", std::move(host)},
                     {"peer", std::move(peer)},
                     {"overlap", std::move(overlap)}};

  json checks = json::array();
  for (const verdict& v : r.verdicts)
    checks.push_back({{"check", v.check},
                      {"subject", v.subject},
                      {"status", std::string(to_string(v.result))},
                      {"finding", v.finding},
                      {"advice", v.advice}});
  j["checks"] = std::move(checks);

  json summary = json::object();
  for (status s : {status::pass, status::info, status::warn, status::fail})
    summary[std::string(to_string(s))] = count(r.verdicts, s);
  j["summary"] = std::move(summary);
  write(out, j);
}

void print_json_error(std::ostream& out, const std::string& message) {
  json j;
  j["tool"] = "multigpu-doctor";
  j["version"] = MULTIGPU_DOCTOR_VERSION;
  j["exit_status"] = 2;
  j["error"] = message;
  write(out, j);
}

}  // namespace multigpu::doctor
