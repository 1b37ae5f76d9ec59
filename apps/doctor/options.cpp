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
// The description and footer keep their lines under 76 columns and unindented: CLI11 2.5
// and later wrap longer lines and drop leading spaces, older versions print them as they are.
std::unique_ptr<CLI::App> make_parser(options& o, std::string& devices_text) {
  auto app = std::make_unique<CLI::App>(
      "Measures the GPUs of this machine and says what holds multi-GPU programs\n"
      "back, and what to do about it. It measures:\n"
      "- copy bandwidth between host and GPU, from pinned and from pageable\n"
      "host memory, and whether an asynchronous copy lets the host go on at\n"
      "once (it cannot when the host memory is not pinned);\n"
      "- the peer links between GPUs: whether peer access (P2P) works, checked\n"
      "with real data, and how fast a direct GPU-to-GPU copy is next to the\n"
      "same copy staged through host memory;\n"
      "- whether a copy and a kernel on two streams run at the same time\n"
      "(copy/kernel overlap) or one after the other.\n"
      "Every check ends in a verdict: pass (healthy), info (worth knowing,\n"
      "nothing to fix), warn (a limit of this machine that multigpu works\n"
      "around) or fail (something is wrong; the report says what to do).",
      "multigpu-doctor");
  app->footer(
      "Exit status: 0 no check failed (warn and info are not failures),\n"
      "1 at least one check failed, 2 the doctor could not run (bad\n"
      "arguments, no visible GPU, or a CUDA error while measuring).");
  // As with most tools, an option given twice keeps its last value. The defaults are
  // written in the descriptions, so the help reads the same with every CLI11 version.
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app->add_option("--devices", devices_text,
                  "GPUs to inspect, as CUDA ordinals separated by commas (0,1). A GPU may "
                  "repeat: 0,0 tests two slots on one GPU. Default: every visible GPU.")
      ->type_name("LIST")
      ->check(CLI::Validator(
          [](std::string& text) { return parse_device_list(text, nullptr); }, ""));
  app->add_flag("--host-staged", o.host_staged,
                "Do not use peer access: copies between GPUs go through pinned host memory "
                "(multigpu::peer_policy::host_staged), as on a machine without P2P.")
      ->disable_flag_override();
  app->add_flag("--json", o.json,
                "Print the report as JSON instead of a table; errors too.")
      ->disable_flag_override();
  app->add_option("--size-mib", o.size_mib,
                  "Size of each test copy in MiB, 1 to 65536 (default 256).")
      ->type_name("N")
      ->check(whole_number(1, 65536, " of MiB"));
  app->add_option("--repetitions", o.repetitions,
                  "Timed runs of each measurement after one warm-up; the median is "
                  "reported. 1 to 1000 (default 3).")
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
    // Some CLI11 versions start a message with the program's name, which main prints too.
    const std::string own_name = app->get_name() + ": ";
    if (result.error.rfind(own_name, 0) == 0) result.error.erase(0, own_name.size());
    return result;
  }
  if (app->count("--devices") > 0) {
    result.error = parse_device_list(devices_text, &result.value.devices);
    if (!result.error.empty()) result.error = "--devices: " + result.error;
  }
  return result;
}

}  // namespace multigpu::doctor
