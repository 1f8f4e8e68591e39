#include "rules/rule.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <utility>

namespace cdplab::rules {
namespace {

constexpr unsigned kStreamNonBlockingFlag = 1;  // cudaStreamNonBlocking

// Which keys each kind takes besides kind, points and message.
struct KindKeys {
  std::string_view kind;
  bool needs_kernel;
  std::vector<std::string_view> keys;
};

const std::vector<KindKeys>& kind_keys() {
  static const std::vector<KindKeys> table = {
      {"launches", true, {"kernel", "child", "stream"}},
      {"recursion", true, {"kernel"}},
      {"creates_stream", true, {"kernel", "flags"}},
      {"device_malloc", false, {"kernel"}},
      {"device_free", false, {"kernel"}},
      {"shared_atomics", true, {"kernel"}},
      {"no_private_pointers", false, {"kernel"}},
      {"distinct_streams", true, {"kernel", "child"}},
      {"barrier_before_shared_atomics", true, {"kernel"}},
      {"barrier_before_shared_reads", true, {"kernel"}},
      {"barrier_before_launch", true, {"kernel"}},
      {"launch_checked", true, {"kernel"}},
      {"fenced_counter", true, {"kernel"}},
      {"destroys_stream", true, {"kernel"}},
      {"shared_in_bounds", true, {"kernel"}},
      {"barrier_lines", true, {"kernel", "at_least"}},
  };
  return table;
}

const KindKeys* keys_of(std::string_view kind) {
  for (const auto& entry : kind_keys())
    if (entry.kind == kind) return &entry;
  return nullptr;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator,
                 std::string_view last_separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += i + 1 == parts.size() ? last_separator : separator;
    out += parts[i];
  }
  return out;
}

std::string in_quotes(std::string_view text) { return "'" + std::string(text) + "'"; }

// Throws with the table's place in its file, when toml++ recorded one.
[[noreturn]] void fail(const toml::node& node, const std::string& what) {
  std::string prefix = "rule";
  const toml::source_region& source = node.source();
  if (source.begin.line > 0) {
    prefix += " at line " + std::to_string(source.begin.line);
    if (source.path && !source.path->empty()) prefix += " of " + *source.path;
  }
  throw std::runtime_error(prefix + ": " + what);
}

std::string string_value(const toml::table& table, std::string_view key) {
  const toml::node* node = table.get(key);
  if (!node->is_string()) fail(*node, in_quotes(key) + " must be a string");
  return node->as_string()->get();
}

std::vector<StreamKind> stream_values(const toml::node& node) {
  const std::string allowed = "null, tail, fire_and_forget or named";
  std::vector<StreamKind> kinds;
  auto add = [&](const toml::node& item) {
    if (!item.is_string()) fail(item, "'stream' must be a list of strings (" + allowed + ")");
    const std::string text = item.as_string()->get();
    const auto kind = parse_stream_kind(text);
    if (!kind) fail(item, "'stream' has " + in_quotes(text) + "; a stream kind is " + allowed);
    if (std::find(kinds.begin(), kinds.end(), *kind) == kinds.end()) kinds.push_back(*kind);
  };
  if (const toml::array* list = node.as_array()) {
    if (list->empty()) fail(node, "'stream' is an empty list; leave it out to allow any stream");
    for (const auto& item : *list) add(item);
  } else {
    add(node);
  }
  return kinds;
}

std::string stream_list(const std::vector<StreamKind>& streams) {
  std::vector<std::string> phrases;
  for (StreamKind kind : streams) phrases.push_back(stream_phrase(kind));
  return join(phrases, ", ", " or ");
}

// "no kernel named X in the exercise", or empty when the name designates some kernel.
std::string missing_kernel(const LaunchGraph& graph, const std::string& name) {
  if (!graph.find_all(name).empty()) return {};
  return "no kernel named " + name + " in the exercise";
}

// The kernels a rule is about: those named, or every kernel defined in the exercise.
std::vector<std::size_t> scope_of(const RuleSpec& rule, const LaunchGraph& graph) {
  if (!rule.kernel.empty()) return graph.find_all(rule.kernel);
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < graph.kernels.size(); ++i)
    if (graph.kernels[i].defined) all.push_back(i);
  return all;
}

std::vector<const Launch*> launches_from(const LaunchGraph& graph,
                                         const std::vector<std::size_t>& parents) {
  std::vector<const Launch*> found;
  for (const auto& launch : graph.launches)
    if (std::find(parents.begin(), parents.end(), launch.parent) != parents.end())
      found.push_back(&launch);
  return found;
}

// Those of `launches` whose child is one of `children`; all of them when `children` is empty.
std::vector<const Launch*> launches_to(const std::vector<const Launch*>& launches,
                                       const std::vector<std::size_t>& children) {
  if (children.empty()) return launches;
  std::vector<const Launch*> found;
  for (const Launch* launch : launches)
    if (std::find(children.begin(), children.end(), launch->child) != children.end()) found.push_back(launch);
  return found;
}

std::string launch_phrase(const LaunchGraph& graph, const Launch& launch) {
  return graph.label(launch.parent) + " launches " + graph.label(launch.child) + " into " +
         stream_phrase(launch.stream) + " (" + graph.where(launch.site) + ")";
}

std::string more(std::size_t count, std::string_view what) {
  if (count == 0) return {};
  return "; " + std::to_string(count) + " more " + std::string(what);
}

RuleVerdict verdict(bool passed, std::string found) { return {passed, {}, std::move(found)}; }

RuleVerdict check_launches(const RuleSpec& rule, const LaunchGraph& graph) {
  const std::vector<std::size_t> parents = graph.find_all(rule.kernel);
  const std::string who = parents.empty() ? rule.kernel : graph.label(parents.front());
  std::vector<std::size_t> children;
  if (!rule.child.empty()) {
    children = graph.find_all(rule.child);
    if (children.empty()) return verdict(false, missing_kernel(graph, rule.child));
  }
  const std::vector<const Launch*> all = launches_from(graph, parents);
  const std::vector<const Launch*> matching = launches_to(all, children);

  if (matching.empty()) {
    if (all.empty()) return verdict(false, who + " launches nothing");
    std::vector<std::string> others;
    for (const Launch* launch : all) {
      const std::string name = graph.label(launch->child) + " (" + graph.where(launch->site) + ")";
      if (std::find(others.begin(), others.end(), name) == others.end()) others.push_back(name);
    }
    return verdict(false, who + " launches " + join(others, ", ", " and ") + " but not " +
                              graph.label(children.front()));
  }
  std::vector<const Launch*> wrong_stream;
  for (const Launch* launch : matching)
    if (!rule.streams.empty() &&
        std::find(rule.streams.begin(), rule.streams.end(), launch->stream) == rule.streams.end())
      wrong_stream.push_back(launch);
  if (!wrong_stream.empty()) {
    const Launch& first = *wrong_stream.front();
    return verdict(false, "the launch of " + graph.label(first.child) + " from " +
                              graph.label(first.parent) + " uses " + stream_phrase(first.stream) +
                              " (" + graph.where(first.site) + ")" +
                              more(wrong_stream.size() - 1, "launches use other streams"));
  }
  return verdict(
      true, launch_phrase(graph, *matching.front()) + more(matching.size() - 1, "such launches"));
}

RuleVerdict check_recursion(const RuleSpec& rule, const LaunchGraph& graph) {
  const std::vector<std::size_t> kernels = graph.find_all(rule.kernel);
  for (std::size_t kernel : kernels) {
    const std::vector<const Launch*> cycle = graph.chain(kernel, kernel);
    if (cycle.empty()) continue;
    if (cycle.size() == 1)
      return verdict(true,
                     graph.label(kernel) + " launches itself (" + graph.where(cycle[0]->site) + ")");
    std::vector<std::string> steps;
    for (const Launch* launch : cycle)
      steps.push_back(graph.label(launch->parent) + " launches " + graph.label(launch->child) +
                      " (" + graph.where(launch->site) + ")");
    return verdict(true, join(steps, ", ", ", "));
  }
  const std::string who = graph.label(kernels.front());
  std::vector<std::string> children;
  for (const Launch* launch : launches_from(graph, kernels)) {
    const std::string name = graph.label(launch->child);
    if (std::find(children.begin(), children.end(), name) == children.end())
      children.push_back(name);
  }
  if (children.empty()) return verdict(false, who + " launches nothing");
  return verdict(false, who + " launches " + join(children, ", ", " and ") +
                            ", but no chain of launches leads back to " + who);
}

RuleVerdict check_creates_stream(const RuleSpec& rule, const LaunchGraph& graph) {
  const std::vector<std::size_t> kernels = graph.find_all(rule.kernel);
  const std::string who = graph.label(kernels.front());
  std::vector<const StreamCreation*> creations;
  for (std::size_t k : kernels)
    for (const auto& creation : graph.kernels[k].stream_creations) creations.push_back(&creation);
  if (creations.empty()) return verdict(false, who + " creates no stream in device code");
  if (rule.flags == "non_blocking") {
    for (const StreamCreation* creation : creations)
      if (!creation->flags || (*creation->flags & kStreamNonBlockingFlag) == 0)
        return verdict(false, who + " creates a stream with " + flags_phrase(creation->flags) +
                                  ", not cudaStreamNonBlocking (" + graph.where(creation->site) + ")");
  }
  return verdict(true, who + " creates a stream with " + flags_phrase(creations.front()->flags) +
                           " (" + graph.where(creations.front()->site) + ")" +
                           more(creations.size() - 1, "stream creations"));
}

RuleVerdict check_destroys_stream(const RuleSpec& rule, const LaunchGraph& graph) {
  const std::vector<std::size_t> kernels = graph.find_all(rule.kernel);
  const std::string who = graph.label(kernels.front());
  std::size_t created = 0, destroyed = 0;
  const Site* first_creation = nullptr;
  for (std::size_t k : kernels) {
    for (const auto& creation : graph.kernels[k].stream_creations)
      if (created++ == 0) first_creation = &creation.site;
    destroyed += graph.kernels[k].stream_destructions.size();
  }
  if (created == 0) return verdict(false, who + " creates no stream in device code");
  if (destroyed == 0)
    return verdict(false, who + " creates a stream (" + graph.where(*first_creation) +
                              ") and never calls cudaStreamDestroy: each thread's stream stays allocated");
  if (destroyed < created)
    return verdict(false, who + " creates streams at " + std::to_string(created) + " places and destroys them at only " +
                              std::to_string(destroyed));
  return verdict(true, who + " destroys the streams it creates (" + std::to_string(destroyed) + " cudaStreamDestroy calls)");
}

RuleVerdict check_heap(const RuleSpec& rule, const LaunchGraph& graph, bool allocation) {
  const std::vector<std::size_t> kernels = scope_of(rule, graph);
  for (std::size_t k : kernels) {
    const auto& calls = allocation ? graph.kernels[k].allocations : graph.kernels[k].deallocations;
    if (!calls.empty())
      return verdict(true, graph.label(k) + " calls " + calls.front().function + " (" +
                               graph.where(calls.front().site) + ")");
  }
  const std::string calls = allocation ? "cudaMalloc or malloc" : "cudaFree or free";
  if (rule.kernel.empty()) return verdict(false, "no kernel calls " + calls + " in device code");
  const std::string who = graph.label(kernels.front());
  if (!allocation) {  // say where the memory it never frees comes from
    for (std::size_t k : kernels)
      if (const auto& allocations = graph.kernels[k].allocations; !allocations.empty())
        return verdict(false, who + " allocates with " + allocations.front().function + " (" +
                                  graph.where(allocations.front().site) +
                                  ") but calls neither cudaFree nor free in device code");
  }
  return verdict(false, who +
                            (allocation ? " calls neither cudaMalloc nor malloc"
                                        : " calls neither cudaFree nor free") +
                            " in device code");
}

RuleVerdict check_shared_atomics(const RuleSpec& rule, const LaunchGraph& graph) {
  const std::vector<std::size_t> kernels = graph.find_all(rule.kernel);
  const std::string who = graph.label(kernels.front());
  const Atomic* other = nullptr;
  std::size_t others = 0;
  for (std::size_t k : kernels)
    for (const auto& atomic : graph.kernels[k].atomics) {
      if (atomic.space == AddressSpace::shared)
        return verdict(true,
                       who + " performs " + atomic.instruction + " (" + graph.where(atomic.site) + ")");
      if (!other) other = &atomic;
      ++others;
    }
  if (!other) return verdict(false, who + " performs no atomic operation");
  return verdict(false,
                 who + "'s atomic operations are not on __shared__ memory: " + other->instruction +
                     " (" + graph.where(other->site) + ")" + more(others - 1, "atomic operations"));
}

RuleVerdict check_no_private_pointers(const RuleSpec& rule, const LaunchGraph& graph) {
  const std::vector<std::size_t> kernels = scope_of(rule, graph);
  const std::vector<const Launch*> launches = launches_from(graph, kernels);
  std::vector<const Launch*> bad;
  for (const Launch* launch : launches)
    if (launch->passes_local_address || launch->passes_shared_address) bad.push_back(launch);
  if (!bad.empty()) {
    const Launch& first = *bad.front();
    const std::string what = first.passes_local_address && first.passes_shared_address
                                 ? "addresses of a local variable and of __shared__ memory"
                             : first.passes_local_address ? "the address of a local variable"
                                                          : "an address of __shared__ memory";
    return verdict(false, "the launch of " + graph.label(first.child) + " from " +
                              graph.label(first.parent) + " passes " + what + " (" +
                              graph.where(first.site) + ")" +
                              more(bad.size() - 1, "launches pass private addresses"));
  }
  const std::string who = rule.kernel.empty() ? "the exercise" : graph.label(kernels.front());
  if (launches.empty()) return verdict(true, who + " launches nothing from device code");
  return verdict(true, "none of the " + std::to_string(launches.size()) + " launches of " + who +
                           " passes a local or __shared__ address");
}

RuleVerdict check_distinct_streams(const RuleSpec& rule, const LaunchGraph& graph) {
  const std::vector<std::size_t> kernels = graph.find_all(rule.kernel);
  std::vector<std::size_t> children;
  if (!rule.child.empty()) {
    children = graph.find_all(rule.child);
    if (children.empty()) return verdict(false, missing_kernel(graph, rule.child));
  }
  const std::string who = graph.label(kernels.front());
  const std::string what = children.empty() ? "kernels" : graph.label(children.front());
  std::vector<const Launch*> named;
  for (const Launch* launch : launches_to(launches_from(graph, kernels), children))
    if (launch->stream == StreamKind::named) named.push_back(launch);
  for (std::size_t i = 0; i < named.size(); ++i)
    for (std::size_t j = i + 1; j < named.size(); ++j)
      if (!named[i]->stream_source.empty() && named[i]->stream_source == named[j]->stream_source)
        return verdict(false, "the launches of " + what + " at " + graph.where(named[i]->site) + " and " +
                                  graph.where(named[j]->site) + " go into the same stream (the same stream variable, "
                                  "not written between them): the second grid starts only after the first "
                                  "and everything it launched have finished");
  if (named.empty()) return verdict(false, who + " launches no " + what + " into a named stream");
  if (named.size() == 1)
    return verdict(true, who + " launches " + what + " into a named stream from one launch site (" +
                             graph.where(named.front()->site) + ")");
  return verdict(true, "the " + std::to_string(named.size()) + " launches of " + what + " from " + who +
                           " into named streams use different stream variables");
}

// A barrier rule's verdict: the first unguarded instruction of the kernels fails it.
RuleVerdict check_barrier(const RuleSpec& rule, const LaunchGraph& graph, bool launches) {
  const std::vector<std::size_t> kernels = graph.find_all(rule.kernel);
  const std::string who = graph.label(kernels.front());
  std::vector<const Unguarded*> found;
  bool any = false;
  for (std::size_t k : kernels) {
    const Kernel& kernel = graph.kernels[k];
    any = any || (launches ? !launches_from(graph, {k}).empty() : kernel.shared_atomics());
    for (const auto& u : launches ? kernel.unguarded_launches : kernel.unguarded_shared_atomics) found.push_back(&u);
  }
  if (!found.empty()) {
    const Unguarded& first = *found.front();
    const std::string target = launches ? "the launch at " : "the shared-memory atomic at ";
    const std::string store = launches ? "the store to memory at " : "the store to __shared__ memory at ";
    return verdict(false, target + graph.where(first.site) + " follows " + store + graph.where(first.store_line) +
                              " with no barrier in between" +
                              more(found.size() - 1, launches ? "launches" : "atomics"));
  }
  if (!any && !launches && deducts(rule))  // nothing to guard: the rule judges the atomics a kernel has
    return verdict(true, who + " performs no atomic on __shared__ memory: no barrier is needed before one");
  if (!any)
    return verdict(false, who + (launches ? " launches nothing from device code" : " performs no atomic on __shared__ memory"));
  return verdict(true, launches ? "a barrier lies between " + who + "'s stores and each of its launches"
                                : "a barrier lies between " + who + "'s stores to __shared__ memory and its atomics on it");
}

// A value one thread publishes in __shared__ memory for the block: the first read of it with no
// block barrier after the store fails the rule.
RuleVerdict check_shared_reads(const RuleSpec& rule, const LaunchGraph& graph) {
  const std::vector<std::size_t> kernels = graph.find_all(rule.kernel);
  const std::string who = graph.label(kernels.front());
  std::vector<const Unguarded*> found;
  int publications = 0;
  for (std::size_t k : kernels) {
    publications += graph.kernels[k].shared_publications;
    for (const auto& u : graph.kernels[k].unguarded_shared_reads) found.push_back(&u);
  }
  if (!found.empty()) {
    const Unguarded& first = *found.front();
    return verdict(false, "the read of __shared__ memory at " + graph.where(first.site) + " and the write at " +
                              graph.where(first.store_line) +
                              " have no __syncthreads() between them on some path: in another warp the read may run "
                              "before the write" +
                              more(found.size() - 1, "reads"));
  }
  if (deducts(rule))  // the rule judges what the kernel stages, and asks for nothing staged
    return verdict(true, "no read of __shared__ memory by " + who +
                             " may run between the same two barriers as another thread's write to it");
  if (publications == 0)
    return verdict(false, who + " stores no value in __shared__ memory for the block (at an address the same in "
                                "every thread)");
  return verdict(true, "a barrier lies between each store " + who +
                           " makes to __shared__ memory and the other threads' reads of it");
}

// A last-block counter's verdict: the first side of a counter left without a fence fails it.
RuleVerdict check_fenced_counter(const RuleSpec& rule, const LaunchGraph& graph) {
  const std::vector<std::size_t> kernels = graph.find_all(rule.kernel);
  const std::string who = graph.label(kernels.front());
  int counters = 0;
  for (std::size_t k : kernels) {
    const Kernel& kernel = graph.kernels[k];
    counters += kernel.counters;
    // The first gap found, in the order a reader fixes them: fence, barrier, then the last block's fence.
    const std::vector<std::pair<const std::vector<Unguarded>*, std::string>> gaps = {
        {&kernel.unfenced_counters_before,
         " with no __threadfence() in between: another block may count this one finished before its writes are visible"},
        {&kernel.unbarriered_counters,
         " with no __syncthreads() in between: the thread that counts the block finished may do so before the block's "
         "other threads have written"},
    };
    for (const auto& [found, why] : gaps)
      if (!found->empty())
        return verdict(false, "the counter's atomic at " + graph.where(found->front().site) + " follows the write at " +
                                  graph.where(Site{found->front().store_line, found->front().site.via}) + why);
    if (!kernel.unfenced_counters_after.empty()) {
      const Unguarded& u = kernel.unfenced_counters_after.front();
      return verdict(false, "after the counter's atomic at " + graph.where(u.site) + ", the read or launch at " +
                                graph.where(Site{u.store_line, u.site.via}) +
                                " comes with no __threadfence() before it: the last block, and the grids it "
                                "launches, may read what the other blocks wrote before it is visible");
    }
  }
  if (counters == 0)
    return verdict(false, who + " has no counter: no atomic on global memory whose result it compares "
                                "(a last-block test such as atomicAdd(&done, 1) == blocks - 1)");
  return verdict(true, "a fence lies on each side of " + who + "'s counter");
}

// The first access past the end of a __shared__ array fails the rule.
RuleVerdict check_shared_in_bounds(const RuleSpec& rule, const LaunchGraph& graph) {
  const std::vector<std::size_t> kernels = graph.find_all(rule.kernel);
  const std::string who = graph.label(kernels.front());
  for (std::size_t k : kernels) {
    const auto& overruns = graph.kernels[k].shared_overruns;
    if (overruns.empty()) continue;
    const SharedOverrunSite& o = overruns.front();
    return verdict(false, "the access at " + graph.where(o.site) + " touches bytes " + std::to_string(o.offset) +
                              " to " + std::to_string(o.offset + o.width - 1) + " of " + o.array +
                              ", a __shared__ array of " + std::to_string(o.size) +
                              " bytes: past its end, in another variable's memory or in padding" +
                              more(overruns.size() - 1, "accesses"));
  }
  return verdict(true, who + " stays inside its __shared__ arrays wherever the PTX shows the place");
}

// Counts the lines of the exercise file that hold a block barrier of the kernel (its device
// functions' included); a library's barriers inlined there are not the student's lines. Without
// line information each barrier instruction counts.
RuleVerdict check_barrier_lines(const RuleSpec& rule, const LaunchGraph& graph) {
  const std::vector<std::size_t> kernels = graph.find_all(rule.kernel);
  const std::string who = graph.label(kernels.front());
  std::set<int> lines;
  std::size_t instructions = 0;
  for (std::size_t k : kernels)
    for (const Site& barrier : graph.kernels[k].block_barriers) {
      ++instructions;
      if (const int line = graph.exercise_line(barrier.ptx_line); line > 0) lines.insert(line);
    }
  const bool by_line = !graph.places.empty();
  const std::size_t found = by_line ? lines.size() : instructions;
  const std::string what = by_line ? " lines of " + (graph.source_name.empty() ? std::string("the exercise file") : graph.source_name)
                                   : " barrier instructions of the PTX";
  std::string listed;
  for (const int line : lines) listed += (listed.empty() ? " (" : ", ") + std::to_string(line);
  if (!listed.empty()) listed += ")";
  const std::string counted = who + " has __syncthreads() on " + std::to_string(found) + what + listed;
  if (found < static_cast<std::size_t>(rule.at_least))
    return verdict(false, counted + "; the given code has " + std::to_string(rule.at_least) +
                              ": one of its barriers is gone");
  return verdict(true, counted);
}

RuleVerdict check_launch_checked(const RuleSpec& rule, const LaunchGraph& graph) {
  const std::vector<std::size_t> kernels = graph.find_all(rule.kernel);
  const std::string who = graph.label(kernels.front());
  std::vector<const Site*> found;
  bool any = false;
  for (std::size_t k : kernels) {
    any = any || !launches_from(graph, {k}).empty();
    for (const auto& site : graph.kernels[k].unchecked_launches) found.push_back(&site);
  }
  if (!found.empty())
    return verdict(false, "after the launch at " + graph.where(*found.front()) + ", " + who +
                              " can end with no cudaGetLastError() on the way (CDPLAB_CHECK_LAUNCH() calls it)" +
                              more(found.size() - 1, "launches"));
  if (!any) return verdict(false, who + " launches nothing from device code");
  return verdict(true, "every launch of " + who + " is followed by an error check");
}

}  // namespace

const std::vector<std::string>& rule_kinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> out;
    for (const auto& entry : kind_keys()) out.emplace_back(entry.kind);
    return out;
  }();
  return kinds;
}

RuleSpec parse_rule(const toml::table& table) {
  RuleSpec rule;
  const toml::node* kind = table.get("kind");
  if (!kind) fail(table, "'kind' is missing; it is one of " + join(rule_kinds(), ", ", " or "));
  if (!kind->is_string()) fail(*kind, "'kind' must be a string");
  rule.kind = kind->as_string()->get();
  const KindKeys* keys = keys_of(rule.kind);
  if (!keys)
    fail(*kind, "unknown kind " + in_quotes(rule.kind) + "; a kind is one of " +
                    join(rule_kinds(), ", ", " or "));

  std::vector<std::string> accepted = {"kind"};
  for (auto key : keys->keys) accepted.emplace_back(key);
  accepted.insert(accepted.end(), {"points", "given", "deduct", "message"});
  std::set<std::string_view> known = {"kind", "points", "given", "deduct", "message"};
  for (const auto& entry : kind_keys()) known.insert(entry.keys.begin(), entry.keys.end());

  for (const auto& [key, node] : table) {
    const std::string_view name = key.str();
    if (std::find(accepted.begin(), accepted.end(), name) != accepted.end()) continue;
    const std::string takes = "a " + rule.kind + " rule takes " + join(accepted, ", ", " and ");
    if (known.count(name)) fail(node, in_quotes(name) + " does not apply here: " + takes);
    fail(node, "unknown key " + in_quotes(name) + "; " + takes);
  }

  if (table.contains("kernel")) rule.kernel = string_value(table, "kernel");
  if (table.contains("child")) rule.child = string_value(table, "child");
  if (table.contains("message")) rule.message = string_value(table, "message");
  if (table.contains("kernel") && rule.kernel.empty())
    fail(*table.get("kernel"), "'kernel' is empty");
  if (table.contains("child") && rule.child.empty()) fail(*table.get("child"), "'child' is empty");
  if (keys->needs_kernel && rule.kernel.empty())
    fail(table, "a " + rule.kind + " rule needs 'kernel', the name of the kernel it is about");
  if (const toml::node* stream = table.get("stream")) rule.streams = stream_values(*stream);
  if (table.contains("flags")) {
    rule.flags = string_value(table, "flags");
    if (rule.flags != "non_blocking")
      fail(*table.get("flags"), "'flags' is " + in_quotes(rule.flags) +
                                    "; the one flag a rule can ask for is 'non_blocking'");
  }
  if (const toml::node* given = table.get("given")) {
    if (!given->is_boolean()) fail(*given, "'given' must be true or false");
    rule.given = given->as_boolean()->get();
  }
  if (const toml::node* deduct = table.get("deduct")) {
    if (!deduct->is_boolean()) fail(*deduct, "'deduct' must be true or false");
    rule.deduct = deduct->as_boolean()->get();
  }
  if (const toml::node* at_least = table.get("at_least")) {
    if (!at_least->is_integer() || at_least->as_integer()->get() < 1)
      fail(*at_least, "'at_least' must be a whole number of 1 or more");
    rule.at_least = static_cast<int>(at_least->as_integer()->get());
  }
  if (rule.kind == "barrier_lines") {
    if (rule.at_least == 0) fail(table, "a barrier_lines rule needs 'at_least', the given code's count of lines");
    if (!rule.given)
      fail(table, "a barrier_lines rule counts the barriers of code handed out with the starter: write given = true");
  }
  if (const toml::node* points = table.get("points")) {
    if (!points->is_number()) fail(*points, "'points' must be a number");
    rule.points = points->is_integer() ? static_cast<double>(points->as_integer()->get())
                                       : points->as_floating_point()->get();
    if (!std::isfinite(rule.points) || rule.points < 0)
      fail(*points, "'points' must be zero or more");
  }
  return rule;
}

bool deducts(const RuleSpec& rule) { return rule.given || rule.deduct || rule.kind == "shared_in_bounds"; }

std::string describe(const RuleSpec& rule) {
  return (rule.given ? "given code: " : "") + describe_requirement(rule);
}

std::string describe_requirement(const RuleSpec& rule) {
  const std::string who = rule.kernel.empty() ? "some kernel" : rule.kernel;
  if (rule.kind == "launches") {
    std::string text = rule.kernel + " launches " + (rule.child.empty() ? "a kernel" : rule.child) +
                       " from device code";
    if (!rule.streams.empty()) text += ", only into " + stream_list(rule.streams);
    return text;
  }
  if (rule.kind == "recursion")
    return rule.kernel + " launches itself, directly or through other kernels";
  if (rule.kind == "creates_stream")
    return rule.kernel + " creates a stream in device code" +
           (rule.flags == "non_blocking" ? " with cudaStreamNonBlocking" : "");
  if (rule.kind == "destroys_stream")
    return rule.kernel + " destroys each stream it creates (cudaStreamDestroy after the launches into it)";
  if (rule.kind == "device_malloc")
    return who + " allocates device-heap memory (cudaMalloc or malloc) in device code";
  if (rule.kind == "device_free")
    return who + " frees device-heap memory (cudaFree or free) in device code";
  if (rule.kind == "shared_atomics")
    return rule.kernel + " performs atomic operations on __shared__ memory";
  if (rule.kind == "no_private_pointers")
    return std::string("no launch") + (rule.kernel.empty() ? "" : " from " + rule.kernel) +
           " hands a child an address of local or __shared__ memory";
  if (rule.kind == "distinct_streams")
    return rule.kernel + " launches " + (rule.child.empty() ? "its children" : rule.child) +
           " into a different stream at each launch site";
  if (rule.kind == "barrier_before_shared_atomics")
    return rule.kernel + " has a barrier (__syncthreads) between its stores to __shared__ memory and the atomics on it";
  if (rule.kind == "barrier_before_shared_reads")
    return rule.kernel + " has a barrier (__syncthreads) between each write to __shared__ memory and the other "
                         "threads' reads of it";
  if (rule.kind == "barrier_before_launch")
    return rule.kernel + " has a barrier (__syncthreads, or __syncwarp where a lane launches for its warp) between the block's stores and each launch, so that the "
                         "child sees every thread's writes";
  if (rule.kind == "fenced_counter")
    return rule.kernel + " fences its last-block counter: __threadfence() and __syncthreads() between the block's "
                         "writes and the counter's atomic, and __threadfence() again before the last block reads the "
                         "others' writes";
  if (rule.kind == "shared_in_bounds")
    return rule.kernel + " stays inside its __shared__ arrays (no entry past the end of one, at a place the "
                         "compiler can see)";
  if (rule.kind == "barrier_lines")
    return rule.kernel + " keeps its __syncthreads() on at least " + std::to_string(rule.at_least) +
           " lines of the exercise file";
  if (rule.kind == "launch_checked")
    return rule.kernel + " checks its device-side launches for errors (cudaGetLastError(), as CDPLAB_CHECK_LAUNCH() "
                         "calls it) before it ends";
  return "a rule of unknown kind " + in_quotes(rule.kind);
}

RuleVerdict evaluate(const RuleSpec& rule, const LaunchGraph& graph) {
  const KindKeys* keys = keys_of(rule.kind);
  if (!keys) throw std::invalid_argument("unknown rule kind '" + rule.kind + "'");
  if (keys->needs_kernel && rule.kernel.empty())
    throw std::invalid_argument("a " + rule.kind + " rule needs a kernel");

  RuleVerdict result;
  if (!rule.kernel.empty() && graph.find_all(rule.kernel).empty()) {
    result = verdict(false, missing_kernel(graph, rule.kernel));
  } else if (rule.kind == "launches") {
    result = check_launches(rule, graph);
  } else if (rule.kind == "recursion") {
    result = check_recursion(rule, graph);
  } else if (rule.kind == "creates_stream") {
    result = check_creates_stream(rule, graph);
  } else if (rule.kind == "destroys_stream") {
    result = check_destroys_stream(rule, graph);
  } else if (rule.kind == "device_malloc" || rule.kind == "device_free") {
    result = check_heap(rule, graph, rule.kind == "device_malloc");
  } else if (rule.kind == "shared_atomics") {
    result = check_shared_atomics(rule, graph);
  } else if (rule.kind == "distinct_streams") {
    result = check_distinct_streams(rule, graph);
  } else if (rule.kind == "barrier_before_shared_atomics" || rule.kind == "barrier_before_launch") {
    result = check_barrier(rule, graph, rule.kind == "barrier_before_launch");
  } else if (rule.kind == "barrier_before_shared_reads") {
    result = check_shared_reads(rule, graph);
  } else if (rule.kind == "launch_checked") {
    result = check_launch_checked(rule, graph);
  } else if (rule.kind == "fenced_counter") {
    result = check_fenced_counter(rule, graph);
  } else if (rule.kind == "shared_in_bounds") {
    result = check_shared_in_bounds(rule, graph);
  } else if (rule.kind == "barrier_lines") {
    result = check_barrier_lines(rule, graph);
  } else {
    result = check_no_private_pointers(rule, graph);
  }
  result.expected = describe(rule);
  return result;
}

}  // namespace cdplab::rules
