// multigpu-doctor on a real GPU: runs the installed-to-be binary with --json on {0} and on
// {0,0} host staged, parses the output with a parser of its own, and checks that every
// section is there with values that agree with what the CUDA runtime says here.
#include <multigpu/runtime/device_group.hpp>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef MULTIGPU_DOCTOR_PATH
#error "MULTIGPU_DOCTOR_PATH must name the multigpu-doctor binary"
#endif

namespace {

// ---- a small JSON reader, independent of the doctor's writer ----------------------------

struct json {
  enum class kind { null, boolean, number, string, array, object } type = kind::null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<json> items;
  std::map<std::string, json> members;

  bool has(const std::string& key) const { return type == kind::object && members.count(key) > 0; }
  const json& operator[](const std::string& key) const {
    if (!has(key)) throw std::runtime_error("JSON has no member '" + key + "'");
    return members.at(key);
  }
  const json& operator[](std::size_t i) const { return items.at(i); }
  std::size_t size() const { return type == kind::array ? items.size() : members.size(); }
};

class json_reader {
 public:
  explicit json_reader(const std::string& text) : s_(text) {}
  json document() {
    json value = parse();
    skip_space();
    if (pos_ != s_.size()) fail("trailing characters");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    throw std::runtime_error("bad JSON at offset " + std::to_string(pos_) + ": " + why);
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool take(const std::string& word) {
    if (s_.compare(pos_, word.size(), word) != 0) return false;
    pos_ += word.size();
    return true;
  }
  void expect(char c) {
    skip_space();
    if (pos_ >= s_.size() || s_[pos_] != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    expect('"');
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u':
          if (pos_ + 4 > s_.size()) fail("short \\u escape");
          out += static_cast<char>(std::stoi(s_.substr(pos_, 4), nullptr, 16));
          pos_ += 4;
          break;
        default: fail("unknown escape");
      }
    }
    expect('"');
    return out;
  }
  json parse() {
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end");
    json v;
    const char c = s_[pos_];
    if (c == '{') {
      v.type = json::kind::object;
      ++pos_;
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return v;
      }
      while (true) {
        std::string key = parse_string();
        if (v.members.count(key)) fail("duplicate key " + key);
        expect(':');
        v.members[key] = parse();
        skip_space();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.type = json::kind::array;
      ++pos_;
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return v;
      }
      while (true) {
        v.items.push_back(parse());
        skip_space();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.type = json::kind::string;
      v.text = parse_string();
      return v;
    }
    if (take("true")) {
      v.type = json::kind::boolean;
      v.boolean = true;
      return v;
    }
    if (take("false")) {
      v.type = json::kind::boolean;
      return v;
    }
    if (take("null")) return v;
    std::size_t used = 0;
    try {
      v.number = std::stod(s_.substr(pos_, 64), &used);
    } catch (const std::exception&) {
      fail("not a value");
    }
    v.type = json::kind::number;
    pos_ += used;
    return v;
  }

  const std::string& s_;
  std::size_t pos_ = 0;
};

// ---- running the doctor ----------------------------------------------------------------

struct run_result {
  int exit_status = -1;
  std::string output;  // stdout only; stderr goes to the test log
};

run_result run_doctor(const std::string& arguments) {
  const std::string command = std::string("\"") + MULTIGPU_DOCTOR_PATH + "\" " + arguments;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) throw std::runtime_error("could not run " + command);
  run_result r;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof(buffer), pipe.get())) r.output.append(buffer, n);
  const int raw = pclose(pipe.release());
  r.exit_status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

json run_json(const std::string& arguments, int& exit_status) {
  run_result r = run_doctor(arguments);
  exit_status = r.exit_status;
  std::printf("multigpu-doctor %s exited with %d\n%s\n", arguments.c_str(), r.exit_status, r.output.c_str());
  return json_reader(r.output).document();
}

// ---- checks shared by both runs ------------------------------------------------------------

void expect_bandwidth(const json& value, const std::string& what) {
  ASSERT_EQ(value.type, json::kind::number) << what;
  // Above 10 MB/s and below 20 TB/s: anything outside is a unit or timing bug.
  EXPECT_GT(value.number, 0.01) << what;
  EXPECT_LT(value.number, 20000.0) << what;
}

void expect_fraction(const json& value, const std::string& what) {
  ASSERT_EQ(value.type, json::kind::number) << what;
  EXPECT_GE(value.number, 0.0) << what;
  EXPECT_LE(value.number, 1.0) << what;
}

void expect_device_0_as_cuda_sees_it(const json& device) {
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  char bus[32] = {};
  ASSERT_EQ(cudaDeviceGetPCIBusId(bus, sizeof(bus), 0), cudaSuccess);
  EXPECT_EQ(device["ordinal"].number, 0);
  EXPECT_EQ(device["name"].text, prop.name);
  EXPECT_EQ(device["memory_bytes"].number, static_cast<double>(prop.totalGlobalMem));
  EXPECT_GT(device["free_memory_bytes"].number, 0);
  EXPECT_LE(device["free_memory_bytes"].number, device["memory_bytes"].number);
  EXPECT_EQ(device["compute_capability"].text, std::to_string(prop.major) + "." + std::to_string(prop.minor));
  EXPECT_EQ(device["multiprocessors"].number, prop.multiProcessorCount);
  EXPECT_EQ(device["pci_bus_id"].text, bus);
  for (const char* key : {"numa_node", "local_cpus", "pcie_link", "pcie_link_max", "pageable_uses_host_page_tables"})
    EXPECT_TRUE(device.has(key)) << key;
}

// Every section, the host copies of device 0 and its overlap figures; returns the checks.
void expect_common_sections(const json& doc, int exit_status, std::size_t expected_pairs,
                            std::size_t expected_slots) {
  for (const char* section : {"tool", "version", "exit_status", "options", "environment", "devices",
                              "peers", "bandwidths", "checks", "summary"})
    ASSERT_TRUE(doc.has(section)) << "missing section " << section;
  EXPECT_EQ(doc["tool"].text, "multigpu-doctor");
  EXPECT_EQ(doc["exit_status"].number, exit_status);
  ASSERT_TRUE(exit_status == 0 || exit_status == 1) << "2 means it could not run";

  EXPECT_EQ(doc["options"]["devices"].size(), expected_slots);
  EXPECT_EQ(doc["options"]["transfer_bytes"].number, 256.0 * 1024 * 1024);
  EXPECT_GE(doc["environment"]["visible_devices"].number, 1);
  EXPECT_FALSE(doc["environment"]["cuda_driver_version"].text.empty());

  ASSERT_EQ(doc["devices"].size(), 1u);
  expect_device_0_as_cuda_sees_it(doc["devices"][0]);
  EXPECT_EQ(doc["devices"][0]["slots"].size(), expected_slots);

  ASSERT_EQ(doc["peers"].type, json::kind::array);
  EXPECT_EQ(doc["peers"].size(), expected_pairs);

  const json& bw = doc["bandwidths"];
  ASSERT_EQ(bw["host"].size(), 2u);  // H2D and D2H of device 0
  std::set<std::string> directions;
  for (const json& h : bw["host"].items) {
    EXPECT_EQ(h["device"].number, 0);
    directions.insert(h["direction"].text);
    for (const char* key : {"pageable_sync_gbps", "pageable_async_gbps", "pinned_sync_gbps", "pinned_async_gbps"})
      expect_bandwidth(h[key], h["direction"].text + " " + key);
    expect_fraction(h["pageable_async_host_blocked"], "pageable held");
    expect_fraction(h["pinned_async_host_blocked"], "pinned held");
  }
  EXPECT_EQ(directions, (std::set<std::string>{"H2D", "D2H"}));
  ASSERT_EQ(bw["peer"].size(), expected_pairs);
  ASSERT_EQ(bw["overlap"].size(), 1u);
  const json& o = bw["overlap"][0];
  for (const char* key : {"copy_ms", "kernel_ms", "serial_ms", "overlapped_ms"}) {
    EXPECT_GT(o[key].number, 0.0) << key;
    EXPECT_LT(o[key].number, 10000.0) << key;
  }
  // One after the other cannot beat either part alone (5% for timing noise).
  EXPECT_GE(o["serial_ms"].number, 0.95 * std::max(o["copy_ms"].number, o["kernel_ms"].number));
  expect_fraction(o["hidden_fraction"], "hidden");

  // pinned_copy and pageable_async per host copy, peer_copy per pair, one overlap check.
  const json& checks = doc["checks"];
  EXPECT_EQ(checks.size(), 2 * 2 + expected_pairs + 1);
  std::map<std::string, double> tally;
  for (const json& c : checks.items) {
    for (const char* key : {"check", "subject", "status", "finding", "advice"}) ASSERT_TRUE(c.has(key)) << key;
    EXPECT_TRUE(c["status"].text == "pass" || c["status"].text == "info" || c["status"].text == "warn" ||
                c["status"].text == "fail")
        << c["status"].text;
    EXPECT_FALSE(c["finding"].text.empty());
    if (c["status"].text == "fail") EXPECT_FALSE(c["advice"].text.empty()) << "a failure says what to do";
    tally[c["status"].text] += 1;
  }
  const json& summary = doc["summary"];
  for (const char* s : {"pass", "info", "warn", "fail"}) EXPECT_EQ(summary[s].number, tally[s]) << s;
  EXPECT_EQ(exit_status, tally["fail"] > 0 ? 1 : 0) << "exit status 1 exactly when a check failed";
}

}  // namespace

TEST(Doctor, OneDeviceReportsEverySection) {
  int status = -1;
  const json doc = run_json("--json --devices 0", status);
  expect_common_sections(doc, status, 0, 1);
  EXPECT_FALSE(doc["options"]["host_staged"].boolean);
}

TEST(Doctor, RepeatedDeviceHostStagedReportsASameDevicePair) {
  int status = -1;
  const json doc = run_json("--json --devices 0,0 --host-staged", status);
  expect_common_sections(doc, status, 1, 2);
  EXPECT_TRUE(doc["options"]["host_staged"].boolean);

  const json& link = doc["peers"][0];
  EXPECT_EQ(link["from"].number, 0);
  EXPECT_EQ(link["to"].number, 0);
  EXPECT_TRUE(link["same_device"].boolean);
  EXPECT_EQ(link["route"].text, "host staged");

  const json& copy = doc["bandwidths"]["peer"][0];
  EXPECT_TRUE(copy["same_device"].boolean);
  expect_bandwidth(copy["direct_gbps"], "same-device copy");
  expect_bandwidth(copy["host_staged_gbps"], "host-staged copy");

  for (const json& c : doc["checks"].items)
    if (c["check"].text == "peer_copy") {
      EXPECT_EQ(c["status"].text, "info");
      EXPECT_NE(c["finding"].text.find("same device"), std::string::npos) << c["finding"].text;
    }
}

TEST(Doctor, TableIsTheDefaultOutput) {
  const run_result r = run_doctor("--devices 0 --size-mib 16 --repetitions 1");
  ASSERT_TRUE(r.exit_status == 0 || r.exit_status == 1) << r.output;
  for (const char* heading : {"Devices", "Peer access", "Host <-> device copies", "Device -> device copies",
                              "Copy and kernel overlap", "Checks"})
    EXPECT_NE(r.output.find(heading), std::string::npos) << heading << "\n" << r.output;
}

TEST(Doctor, DeviceOutOfRangeCannotRun) {
  int status = -1;
  const json doc = run_json("--json --devices 0," + std::to_string(multigpu::visible_device_count()), status);
  EXPECT_EQ(status, 2);
  EXPECT_EQ(doc["exit_status"].number, 2);
  EXPECT_NE(doc["error"].text.find("visible"), std::string::npos) << doc["error"].text;
}
