#pragma once
// The doctor's two faces: a table for people and JSON for machines. Both show every
// section (devices, peers, bandwidths, checks) from the same data.

#include "options.hpp"
#include "probe.hpp"

#include "verdicts.hpp"

#include <iosfwd>
#include <string>
#include <vector>

namespace multigpu::doctor {

struct report {
  options settings;
  environment env;
  measurements data;
  std::vector<verdict> verdicts;
};

void print_table(std::ostream& out, const report& r);
void print_json(std::ostream& out, const report& r);

/// The JSON printed when the doctor cannot run (exit status 2): the reason, and no sections.
void print_json_error(std::ostream& out, const std::string& message);

}  // namespace multigpu::doctor
