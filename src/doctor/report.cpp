#include "report.hpp"

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

// A streaming writer: commas, nesting and indentation, nothing more.
class json_writer {
 public:
  explicit json_writer(std::ostream& out) : out_(out) {}
  ~json_writer() { out_ << "\n"; }

  json_writer& begin_object() { return open('{'); }
  json_writer& end_object() { return close('}'); }
  json_writer& begin_array() { return open('['); }
  json_writer& end_array() { return close(']'); }
  json_writer& key(std::string_view name) {
    separate();
    out_ << json_quote(std::string(name)) << ": ";
    after_key_ = true;
    return *this;
  }
  json_writer& value(const std::string& text) { return raw(json_quote(text)); }
  json_writer& value(const char* text) { return raw(json_quote(text)); }
  json_writer& value(bool b) { return raw(b ? "true" : "false"); }
  json_writer& value(int n) { return raw(std::to_string(n)); }
  json_writer& value(std::size_t n) { return raw(std::to_string(n)); }
  json_writer& value(double x) { return raw(std::isfinite(x) ? fixed(x, 3) : "null"); }
  json_writer& null() { return raw("null"); }
  /// A string, or null when it is empty (the driver did not tell).
  json_writer& text_or_null(const std::string& text) { return text.empty() ? null() : value(text); }

  template <class T>
  json_writer& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

 private:
  json_writer& raw(const std::string& token) {
    separate();
    out_ << token;
    return *this;
  }
  json_writer& open(char bracket) {
    separate();
    out_ << bracket;
    first_.push_back(true);
    return *this;
  }
  json_writer& close(char bracket) {
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_ << bracket;
    return *this;
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ << ',';
    first_.back() = false;
    newline();
  }
  void newline() { out_ << '\n' << std::string(2 * first_.size(), ' '); }

  std::ostream& out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

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
  json_writer j(out);
  j.begin_object();
  j.field("tool", "multigpu-doctor").field("version", MULTIGPU_DOCTOR_VERSION);
  j.field("exit_status", exit_status(r.verdicts));

  j.key("options").begin_object();
  j.key("devices").begin_array();
  for (int id : slot_devices(r)) j.value(id);
  j.end_array();
  j.field("host_staged", m.host_staged).field("transfer_bytes", m.transfer_bytes).field("repetitions", m.repetitions);
  j.end_object();

  j.key("environment").begin_object();
  j.field("cuda_driver_version", format_cuda_version(r.env.driver_version));
  j.field("cuda_runtime_version", format_cuda_version(r.env.runtime_version));
  j.field("visible_devices", r.env.visible_devices);
  j.key("cuda_visible_devices");
  if (r.env.cuda_visible_devices_set)
    j.value(r.env.cuda_visible_devices);
  else
    j.null();
  j.field("cuda_launch_blocking", r.env.launch_blocking);
  j.key("process_cpus").text_or_null(r.env.process_cpus);
  j.end_object();

  j.key("devices").begin_array();
  for (const device_info& d : m.devices) {
    j.begin_object();
    j.field("ordinal", d.ordinal);
    j.key("slots").begin_array();
    for (std::size_t s : d.slots) j.value(s);
    j.end_array();
    j.field("name", d.name).field("memory_bytes", d.memory_bytes).field("free_memory_bytes", d.free_memory_bytes);
    j.field("compute_capability", std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor));
    j.field("multiprocessors", d.multiprocessors).field("pci_bus_id", d.pci_bus_id);
    j.key("numa_node");
    if (d.numa_node >= 0)
      j.value(d.numa_node);
    else
      j.null();
    j.key("local_cpus").text_or_null(d.local_cpus);
    j.key("pcie_link").text_or_null(d.pcie_link);
    j.key("pcie_link_max").text_or_null(d.pcie_link_max);
    j.field("pageable_uses_host_page_tables", d.pageable_uses_host_page_tables);
    j.end_object();
  }
  j.end_array();

  j.key("peers").begin_array();
  for (const peer_info& p : m.peers) {
    j.begin_object();
    j.field("from", p.from).field("to", p.to).field("same_device", p.same_device);
    j.field("can_access", p.can_access).field("enabled", p.enabled).field("verified", p.verified);
    j.key("performance_rank");
    if (p.performance_rank >= 0)
      j.value(p.performance_rank);
    else
      j.null();
    j.field("native_atomics", p.native_atomics).field("route", std::string(to_string(p.used_route)));
    j.end_object();
  }
  j.end_array();

  j.key("bandwidths").begin_object();
  j.field("unit", "GB/s (1e9 bytes per second); overlap times in ms");
  j.key("host").begin_array();
  for (const host_copy_measurement& h : m.host_copies) {
    j.begin_object();
    j.field("device", h.device).field("direction", std::string(to_string(h.direction)));
    j.field("pageable_sync_gbps", h.pageable_sync_gbps).field("pageable_async_gbps", h.pageable_async_gbps);
    j.field("pageable_async_host_blocked", h.pageable_async_host_blocked);
    j.field("pinned_sync_gbps", h.pinned_sync_gbps).field("pinned_async_gbps", h.pinned_async_gbps);
    j.field("pinned_async_host_blocked", h.pinned_async_host_blocked);
    j.end_object();
  }
  j.end_array();
  j.key("peer").begin_array();
  for (const peer_copy_measurement& p : m.peer_copies) {
    j.begin_object();
    j.field("from", p.from).field("to", p.to).field("same_device", p.same_device);
    j.field("direct_gbps", p.direct_gbps).field("host_staged_gbps", p.host_staged_gbps);
    j.end_object();
  }
  j.end_array();
  j.key("overlap").begin_array();
  for (const overlap_measurement& o : m.overlaps) {
    j.begin_object();
    j.field("device", o.device).field("copy_ms", o.copy_ms).field("kernel_ms", o.kernel_ms);
    j.field("serial_ms", o.serial_ms).field("overlapped_ms", o.overlapped_ms);
    j.field("hidden_fraction", hidden_fraction(o));
    j.end_object();
  }
  j.end_array();
  j.end_object();

  j.key("checks").begin_array();
  for (const verdict& v : r.verdicts) {
    j.begin_object();
    j.field("check", v.check).field("subject", v.subject).field("status", std::string(to_string(v.result)));
    j.field("finding", v.finding).field("advice", v.advice);
    j.end_object();
  }
  j.end_array();

  j.key("summary").begin_object();
  for (status s : {status::pass, status::info, status::warn, status::fail})
    j.field(to_string(s), count(r.verdicts, s));
  j.end_object();
  j.end_object();
}

void print_json_error(std::ostream& out, const std::string& message) {
  json_writer j(out);
  j.begin_object();
  j.field("tool", "multigpu-doctor").field("version", MULTIGPU_DOCTOR_VERSION);
  j.field("exit_status", 2).field("error", message);
  j.end_object();
}

}  // namespace multigpu::doctor
