#include "options.hpp"

#include <CLI/CLI.hpp>

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

// CUDA ordinals separated by commas ("0,1", "0,0"); the message names the first bad item.
std::string parse_device_list(std::string_view text, std::vector<int>* devices) {
  if (devices) devices->clear();
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    long long id = 0;
    if (!parse_number(item, 0, 1 << 20, id))
      return "takes CUDA ordinals separated by commas, like 0,1 or 0,0; got '" +
             std::string(item) + "'";
    if (devices) devices->push_back(static_cast<int>(id));
    if (comma == std::string_view::npos) return {};
    text.remove_prefix(comma + 1);
  }
}

// A CLI11 check that the value is a whole number in [low, high]. CLI11 runs checks on the
// text before converting it, so the message names what was typed.
CLI::Validator whole_number(long long low, long long high, std::string unit) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        long long value = 0;
        if (parse_number(text, low, high, value)) return {};
        return "takes a whole number" + unit + " from " + std::to_string(low) + " to " +
               std::to_string(high) + "; got '" + text + "'";
      },
      "");
}

// The parser, filled in `o` when it runs. Built afresh for each parse and for the usage text.
std::unique_ptr<CLI::App> make_parser(options& o, std::string& devices_text) {
  auto app = std::make_unique<CLI::App>(
      "Measures the GPUs and says what is wrong, after the memory chapter's checklist:\n"
      "async copies as slow as sync copies (host memory not pinned), peer copies below the\n"
      "host-staged route (P2P not enabled), copies and kernels that do not overlap.",
      "multigpu-doctor");
  app->footer("Exit status: 0 all checks pass, 1 a check failed, 2 the doctor could not run.");
  // As with most tools, an option given twice keeps its last value.
  app->option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app->add_option("--devices", devices_text,
                  "CUDA ordinals to inspect, comma separated; repeats allowed (0,0 gives two slots "
                  "on one device). Default: every visible GPU.")
      ->type_name("LIST")
      ->check(CLI::Validator(
          [](std::string& text) { return parse_device_list(text, nullptr); }, ""));
  app->add_flag("--host-staged", o.host_staged,
                "refuse peer access: copies between devices go through pinned host memory, as "
                "with multigpu::peer_policy::host_staged.")
      ->disable_flag_override();
  app->add_flag("--json", o.json, "print JSON (devices, peers, bandwidths, checks, summary).")
      ->disable_flag_override();
  app->add_option("--size-mib", o.size_mib, "MiB per transfer.")
      ->type_name("N")
      ->check(whole_number(1, 65536, " of MiB"));
  app->add_option("--repetitions", o.repetitions, "timed runs per measurement after a warm-up.")
      ->type_name("N")
      ->check(whole_number(1, 1000, ""));
  return app;
}

}  // namespace

std::string usage() {
  options defaults;
  std::string devices_text;
  return make_parser(defaults, devices_text)->help();
}

parsed_options parse_options(const std::vector<std::string>& arguments) {
  parsed_options result;
  std::string devices_text;
  const std::unique_ptr<CLI::App> app = make_parser(result.value, devices_text);
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(arguments.rbegin(), arguments.rend());
  try {
    app->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    result.value.help = true;
    return result;
  } catch (const CLI::ParseError& e) {
    result.error = e.what();
    return result;
  }
  if (app->count("--devices") > 0) {
    result.error = parse_device_list(devices_text, &result.value.devices);
    if (!result.error.empty()) result.error = "--devices: " + result.error;
  }
  return result;
}

}  // namespace multigpu::doctor
