#include <multigpu/core/schedule.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

namespace multigpu {

std::size_t schedule_graph::count(const std::string& label) const {
  return static_cast<std::size_t>(
      std::count_if(nodes.begin(), nodes.end(), [&](const schedule_node& n) { return n.label == label; }));
}

std::size_t schedule_graph::streams() const {
  std::set<cudaStream_t> seen;
  for (const auto& n : nodes) seen.insert(n.stream);
  return seen.size();
}

std::size_t critical_path(const schedule_graph& graph) {
  const std::size_t n = graph.nodes.size();
  std::vector<std::vector<std::size_t>> successors(n);
  std::vector<std::size_t> indegree(n, 0);
  for (auto [from, to] : graph.edges) {
    if (from >= n || to >= n)
      throw std::invalid_argument("critical_path: an edge (" + std::to_string(from) + ", " + std::to_string(to) +
                                  ") names a node outside the " + std::to_string(n) + " nodes of the graph");
    successors[from].push_back(to);
    ++indegree[to];
  }
  // Kahn's order; depth[v] = nodes on the longest chain ending at v.
  std::vector<std::size_t> ready, depth(n, 1);
  for (std::size_t v = 0; v < n; ++v)
    if (indegree[v] == 0) ready.push_back(v);
  std::size_t visited = 0, longest = 0;
  while (!ready.empty()) {
    const std::size_t v = ready.back();
    ready.pop_back();
    ++visited;
    longest = std::max(longest, depth[v]);
    for (std::size_t w : successors[v]) {
      depth[w] = std::max(depth[w], depth[v] + 1);
      if (--indegree[w] == 0) ready.push_back(w);
    }
  }
  if (visited != n) throw std::invalid_argument("critical_path: the dependencies form a cycle");
  return longest;
}

namespace {

// A stream's frontier: the work its next node must follow (its own last node and the nodes
// behind the events it waited on since). An event stands for the frontier of its stream when
// it was recorded.
struct recorder {
  std::mutex mutex;
  schedule_graph graph;
  std::map<cudaStream_t, std::set<std::size_t>> frontier;
  std::map<cudaEvent_t, std::set<std::size_t>> events;
};

std::atomic<bool> active{false};
recorder& the_recorder() {
  static recorder* r = new recorder;  // never destroyed: hooks may run during static teardown
  return *r;
}

}  // namespace

schedule_recording::schedule_recording() {
  bool expected = false;
  recorder& r = the_recorder();
  std::lock_guard lock(r.mutex);
  if (!active.compare_exchange_strong(expected, true))
    throw std::logic_error("multigpu::schedule_recording: another recording is already alive");
  r.graph = {};
  r.frontier.clear();
  r.events.clear();
}

schedule_recording::~schedule_recording() {
  recorder& r = the_recorder();
  std::lock_guard lock(r.mutex);
  active.store(false);
}

schedule_graph schedule_recording::graph() const {
  recorder& r = the_recorder();
  std::lock_guard lock(r.mutex);
  return r.graph;
}

void schedule_recording::clear() {
  recorder& r = the_recorder();
  std::lock_guard lock(r.mutex);
  r.graph = {};
  r.frontier.clear();
  r.events.clear();
}

namespace detail {

bool schedule_recording_active() noexcept { return active.load(std::memory_order_relaxed); }

void schedule_note_work(cudaStream_t stream, const char* label) {
  if (!schedule_recording_active()) return;
  recorder& r = the_recorder();
  std::lock_guard lock(r.mutex);
  const std::size_t node = r.graph.nodes.size();
  r.graph.nodes.push_back({stream, label});
  auto& before = r.frontier[stream];
  for (std::size_t from : before) r.graph.edges.emplace_back(from, node);
  before = {node};
}

void schedule_note_record(cudaEvent_t event, cudaStream_t stream) {
  if (!schedule_recording_active()) return;
  recorder& r = the_recorder();
  std::lock_guard lock(r.mutex);
  r.events[event] = r.frontier[stream];
}

void schedule_note_wait(cudaStream_t stream, cudaEvent_t event) {
  if (!schedule_recording_active()) return;
  recorder& r = the_recorder();
  std::lock_guard lock(r.mutex);
  auto it = r.events.find(event);
  if (it == r.events.end()) return;  // recorded before the recording began: nothing to follow
  r.frontier[stream].insert(it->second.begin(), it->second.end());
}

}  // namespace detail
}  // namespace multigpu
