#include <multigpu/testing/schedule.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

namespace multigpu::testing {

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

// A stream's frontier: the work its next node must follow (its own last node and the nodes
// behind the events it waited on since). An event stands for the frontier of its stream when
// it was recorded.
struct schedule_recording::state {
  mutable std::mutex mutex;
  schedule_graph graph;
  std::map<cudaStream_t, std::set<std::size_t>> frontier;
  std::map<cudaEvent_t, std::set<std::size_t>> events;
};

schedule_recording::schedule_recording() : state_(std::make_unique<state>()) { install_observer(*this); }

schedule_recording::~schedule_recording() { remove_observer(*this); }

schedule_graph schedule_recording::graph() const {
  std::lock_guard lock(state_->mutex);
  return state_->graph;
}

void schedule_recording::clear() {
  std::lock_guard lock(state_->mutex);
  state_->graph = {};
  state_->frontier.clear();
  state_->events.clear();
}

void schedule_recording::work(cudaStream_t stream, const char* label) {
  std::lock_guard lock(state_->mutex);
  const std::size_t node = state_->graph.nodes.size();
  state_->graph.nodes.push_back({stream, label});
  auto& before = state_->frontier[stream];
  for (std::size_t from : before) state_->graph.edges.emplace_back(from, node);
  before = {node};
}

void schedule_recording::record(cudaEvent_t event, cudaStream_t stream) {
  std::lock_guard lock(state_->mutex);
  state_->events[event] = state_->frontier[stream];
}

void schedule_recording::wait(cudaStream_t stream, cudaEvent_t event) {
  std::lock_guard lock(state_->mutex);
  auto it = state_->events.find(event);
  if (it == state_->events.end()) return;  // recorded before the recording began: nothing to follow
  state_->frontier[stream].insert(it->second.begin(), it->second.end());
}

}  // namespace multigpu::testing
