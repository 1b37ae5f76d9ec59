#include "options.hpp"

#include <charconv>
#include <string_view>

namespace multigpu::doctor {
namespace {

// A whole decimal number in [low, high], or nothing.
bool parse_number(std::string_view text, long long low, long long high, long long& out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, out);
  return error == std::errc{} && stop == end && out >= low && out <= high;
}

bool parse_device_list(std::string_view text, std::vector<int>& devices, std::string& error) {
  devices.clear();
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    long long id = 0;
    if (!parse_number(item, 0, 1 << 20, id)) {
      error = "--devices takes CUDA ordinals separated by commas, like 0,1 or 0,0; got '" +
              std::string(item) + "'";
      return false;
    }
    devices.push_back(static_cast<int>(id));
    if (comma == std::string_view::npos) return true;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace

std::string usage() {
  return "usage: multigpu-doctor [--devices 0,1] [--host-staged] [--json] [--size-mib N] "
         "[--repetitions N]\n"
         "\n"
         "Measures the GPUs and says what is wrong, after the memory chapter's checklist:\n"
         "async copies as slow as sync copies (host memory not pinned), peer copies below the\n"
         "host-staged route (P2P not enabled), copies and kernels that do not overlap.\n"
         "\n"
         "  --devices LIST    CUDA ordinals to inspect, comma separated; repeats allowed (0,0\n"
         "                    gives two slots on one device). Default: every visible GPU.\n"
         "  --host-staged     refuse peer access: copies between devices go through pinned\n"
         "                    host memory, as with multigpu::peer_policy::host_staged.\n"
         "  --json            print JSON (devices, peers, bandwidths, checks, summary).\n"
         "  --size-mib N      MiB per transfer (default 256).\n"
         "  --repetitions N   timed runs per measurement after a warm-up (default 3).\n"
         "\n"
         "Exit status: 0 all checks pass, 1 a check failed, 2 the doctor could not run.\n";
}

parsed_options parse_options(const std::vector<std::string>& arguments) {
  parsed_options result;
  options& o = result.value;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    std::string_view argument = arguments[i];
    // --name=value and --name value are both accepted.
    std::string_view name = argument;
    std::string_view inline_value;
    bool has_inline_value = false;
    if (const std::size_t equals = argument.find('='); argument.starts_with("--") && equals != std::string_view::npos) {
      name = argument.substr(0, equals);
      inline_value = argument.substr(equals + 1);
      has_inline_value = true;
    }
    auto take_value = [&](std::string_view& value) {
      if (has_inline_value) {
        value = inline_value;
        return true;
      }
      if (i + 1 >= arguments.size()) {
        result.error = std::string(name) + " needs a value";
        return false;
      }
      value = arguments[++i];
      return true;
    };
    auto refuse_value = [&] {
      if (has_inline_value) result.error = std::string(name) + " takes no value";
      return !has_inline_value;
    };

    std::string_view value;
    if (name == "-h" || name == "--help") {
      if (!refuse_value()) return result;
      o.help = true;
    } else if (name == "--json") {
      if (!refuse_value()) return result;
      o.json = true;
    } else if (name == "--host-staged") {
      if (!refuse_value()) return result;
      o.host_staged = true;
    } else if (name == "--devices") {
      if (!take_value(value)) return result;
      if (!parse_device_list(value, o.devices, result.error)) return result;
    } else if (name == "--size-mib") {
      long long mib = 0;
      if (!take_value(value)) return result;
      if (!parse_number(value, 1, 65536, mib)) {
        result.error = "--size-mib takes a whole number of MiB from 1 to 65536; got '" +
                       std::string(value) + "'";
        return result;
      }
      o.size_mib = static_cast<std::size_t>(mib);
    } else if (name == "--repetitions") {
      long long count = 0;
      if (!take_value(value)) return result;
      if (!parse_number(value, 1, 1000, count)) {
        result.error = "--repetitions takes a whole number from 1 to 1000; got '" +
                       std::string(value) + "'";
        return result;
      }
      o.repetitions = static_cast<int>(count);
    } else {
      result.error = "unknown argument '" + std::string(argument) + "'";
      return result;
    }
  }
  return result;
}

}  // namespace multigpu::doctor
