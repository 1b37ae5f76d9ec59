// NVTX ranges reach a tool in the "multigpu" domain with their names and payloads. The test
// links in a static NVTX injection (the mechanism profilers' static libraries use): NVTX calls
// from this process, the library's included, land in the recorder below. Under a real tool
// (NVTX_INJECTION64_PATH set, e.g. nsys) the tool wins and the test is skipped.
#include <cstdint>

// This file defines the injection pointer (a strong symbol), so NVTX's own weak definition
// is left out here; NVTX's loader reads it, so it is declared before the NVTX headers.
#define NVTX_STATIC_INJECTION_IMPL
extern "C" int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(std::uint32_t));

#include <multigpu/core/nvtx.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace {

struct event {
  std::string kind;  // "push" or "pop"
  std::string domain;
  std::string message;
  bool has_payload = false;
  std::uint64_t payload = 0;
};

std::vector<event>& events() {
  static std::vector<event> recorded;
  return recorded;
}
// Domain handles are addresses of the names the tool keeps.
std::map<std::string, int>& domains() {
  static std::map<std::string, int> names;
  return names;
}
std::string domain_name(nvtxDomainHandle_t handle) {
  for (auto& [name, slot] : domains())
    if (reinterpret_cast<nvtxDomainHandle_t>(&slot) == handle) return name;
  return "?";
}

nvtxDomainHandle_t NVTX_API create_domain(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(&domains()[name]);
}
int NVTX_API push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  event e{"push", domain_name(domain), "", false, 0};
  if (attributes->messageType == NVTX_MESSAGE_TYPE_ASCII) e.message = attributes->message.ascii;
  if (attributes->payloadType == NVTX_PAYLOAD_TYPE_UNSIGNED_INT64) {
    e.has_payload = true;
    e.payload = attributes->payload.ullValue;
  }
  events().push_back(e);
  return 0;
}
int NVTX_API pop(nvtxDomainHandle_t domain) {
  events().push_back({"pop", domain_name(domain), "", false, 0});
  return 0;
}

bool injected = false;

int NVTX_API initialize(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return 0;
  if (size <= NVTX_CBID_CORE2_DomainCreateA) return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&create_domain);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&push);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  injected = true;
  return 1;
}

}  // namespace

NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = &initialize;

TEST(Nvtx, RangesAreNamedInTheMultigpuDomain) {
  if (std::getenv("NVTX_INJECTION64_PATH")) GTEST_SKIP() << "a profiler's NVTX injection is active";
  events().clear();
  {
    const multigpu::nvtx_range outer("transform", 1000003);
    const multigpu::nvtx_range inner("host to devices: pinned, direct");
  }
  ASSERT_TRUE(injected) << "the static NVTX injection was not called";
  ASSERT_EQ(events().size(), 4u);
  EXPECT_EQ(events()[0].kind, "push");
  EXPECT_EQ(events()[0].domain, "multigpu");
  EXPECT_EQ(events()[0].message, "transform");
  EXPECT_TRUE(events()[0].has_payload);
  EXPECT_EQ(events()[0].payload, 1000003u);
  EXPECT_EQ(events()[1].kind, "push");
  EXPECT_EQ(events()[1].domain, "multigpu");
  EXPECT_EQ(events()[1].message, "host to devices: pinned, direct");
  EXPECT_FALSE(events()[1].has_payload);
  EXPECT_EQ(events()[2].kind, "pop");  // inner first
  EXPECT_EQ(events()[3].kind, "pop");
  EXPECT_EQ(events()[3].domain, "multigpu");
  EXPECT_EQ(std::string(multigpu::nvtx_domain::name), "multigpu");
}
