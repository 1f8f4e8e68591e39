// Default deny on the exercise's device code (device_calls.h).
#include "device_calls.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <set>

namespace cdplab::harness::device_code {
namespace {

/// Device-runtime calls (nvcc's `__cudaCDP2` names) and system calls that read the device, time
/// or write text, and never launch, allocate from the device heap or touch another grid: what the
/// grader does not need to see. Asynchronous copies and sets act on memory the code already holds.
const std::set<std::string>& harmless_names() {
  static const std::set<std::string> names{
      "vprintf", "__assertfail",
      "__cudaCDP2DeviceGetAttribute", "__cudaCDP2DeviceGetCacheConfig", "__cudaCDP2DeviceGetLimit",
      "__cudaCDP2DeviceGetSharedMemConfig", "__cudaCDP2EventCreateWithFlags", "__cudaCDP2EventDestroy",
      "__cudaCDP2FuncGetAttributes", "__cudaCDP2GetDevice", "__cudaCDP2GetDeviceCount", "__cudaCDP2GetErrorName",
      "__cudaCDP2GetErrorString", "__cudaCDP2OccupancyMaxActiveBlocksPerMultiprocessor",
      "__cudaCDP2OccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "__cudaCDP2RuntimeGetVersion",
      "__cudaCDP2StreamWaitEvent", "__cudaCDP2MemcpyAsync", "__cudaCDP2Memcpy2DAsync", "__cudaCDP2Memcpy3DAsync",
      "__cudaCDP2MemsetAsync", "__cudaCDP2Memset2DAsync", "__cudaCDP2Memset3DAsync"};
  return names;
}

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int line_at(const std::string& text, std::size_t at) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

/// A name the PTX declares, and whether it also defines it.
struct Declared {
  std::string name;
  bool is_function = true;
  std::size_t at = 0;  ///< where the declaration ends
  bool defined = false;
};

/// Every function the PTX declares or defines, once per name: defined unless every header of it
/// is an `.extern` declaration (PTX asks that a function of another module be declared `.extern`).
std::vector<Declared> functions(const std::string& ptx) {
  std::vector<Declared> found;
  std::map<std::string, std::size_t> index;
  for (const auto& h : ptx_function_headers(ptx)) {
    const auto [it, added] = index.emplace(h.name, found.size());
    if (added) found.push_back({h.name, true, h.body != std::string::npos ? h.body : ptx.find(';', h.at), !h.external});
    else found[it->second].defined = found[it->second].defined || !h.external;
  }
  return found;
}

/// The variables the PTX declares `.extern` in global, constant or local memory.
std::vector<Declared> extern_variables(const std::string& ptx) {
  static const std::regex declaration(
      R"(\.extern\s+\.(?:global|const|local)\b[^;]*?([A-Za-z_$][A-Za-z0-9_$]*)\s*(?:\[[^\]]*\]\s*)*;)");
  std::vector<Declared> found;
  for (std::sregex_iterator it(ptx.begin(), ptx.end(), declaration), end; it != end; ++it)
    found.push_back({(*it)[1].str(), false, static_cast<std::size_t>(it->position(0) + it->length(0)), false});
  return found;
}

/// The first whole use of `name` after `from`, or npos.
std::size_t first_use(const std::string& ptx, const std::string& name, std::size_t from) {
  for (std::size_t at = ptx.find(name, from); at != std::string::npos; at = ptx.find(name, at + 1)) {
    const std::size_t end = at + name.size();
    if ((at == 0 || !identifier_char(ptx[at - 1])) && (end == ptx.size() || !identifier_char(ptx[end]))) return at;
  }
  return std::string::npos;
}

/// "file.cu:42" for the `.loc` nearest before `at` (the call's place where code was inlined).
std::string source_place(const std::string& ptx, std::size_t at) {
  static const std::regex file(R"(\.file\s+([0-9]+)\s+\"([^\"]*)\")");
  static const std::regex loc(R"(\.loc\s+([0-9]+)\s+([0-9]+)\s+[0-9]+(?:\s*,.*inlined_at\s+([0-9]+)\s+([0-9]+))?)");
  const std::size_t loc_at = ptx.rfind(".loc", at);
  if (loc_at == std::string::npos) return "";
  const std::size_t line_end = ptx.find('\n', loc_at);
  const std::string line = ptx.substr(loc_at, line_end == std::string::npos ? std::string::npos : line_end - loc_at);
  std::smatch m;
  if (!std::regex_search(line, m, loc)) return "";
  const std::string index = m[3].matched ? m[3].str() : m[1].str();
  const std::string number = m[3].matched ? m[4].str() : m[2].str();
  std::string path;
  for (std::sregex_iterator it(ptx.begin(), ptx.end(), file), end; it != end; ++it)
    if ((*it)[1].str() == index) path = (*it)[2].str();
  const std::size_t slash = path.rfind('/');
  return (slash == std::string::npos ? path : path.substr(slash + 1)) + ":" + number;
}

}  // namespace

std::string demangled(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && text ? std::string(text.get()) : name;
}

std::vector<PtxFunctionHeader> ptx_function_headers(const std::string& ptx) {
  std::vector<PtxFunctionHeader> headers;
  for (const std::string keyword : {".entry", ".func"}) {
    for (std::size_t at = ptx.find(keyword); at != std::string::npos; at = ptx.find(keyword, at + 1)) {
      const std::size_t end = at + keyword.size();
      if ((at > 0 && !blank(ptx[at - 1])) || end >= ptx.size() || !blank(ptx[end])) continue;
      std::size_t name_at = end;
      while (name_at < ptx.size() && blank(ptx[name_at])) ++name_at;
      if (name_at < ptx.size() && ptx[name_at] == '(') {  // a function's return value comes first
        const std::size_t close = ptx.find(')', name_at);
        if (close == std::string::npos) continue;
        name_at = close + 1;
        while (name_at < ptx.size() && blank(ptx[name_at])) ++name_at;
      }
      std::size_t name_end = name_at;
      while (name_end < ptx.size() && identifier_char(ptx[name_end])) ++name_end;
      if (name_end == name_at) continue;
      PtxFunctionHeader header;
      header.at = at;
      header.name = ptx.substr(name_at, name_end - name_at);
      header.kernel = keyword == ".entry";
      const std::size_t line = ptx.rfind('\n', at);
      const std::size_t statement = line == std::string::npos ? 0 : line + 1;
      header.external = ptx.substr(statement, at - statement).find(".extern") != std::string::npos;
      // The parameters are in one pair of parentheses; then a body or the end of a declaration.
      int depth = 0;
      for (std::size_t i = name_end; i < ptx.size(); ++i) {
        const char c = ptx[i];
        if (c == '(') ++depth;
        else if (c == ')') --depth;
        else if (depth == 0 && c == ';') break;
        else if (depth == 0 && c == '{') {
          header.body = i + 1;
          break;
        }
      }
      headers.push_back(header);
    }
  }
  std::sort(headers.begin(), headers.end(),
            [](const PtxFunctionHeader& a, const PtxFunctionHeader& b) { return a.at < b.at; });
  return headers;
}

const std::vector<HookedCall>& hooked_runtime_calls() {
  static const std::vector<HookedCall> calls{
      {"__cudaCDP2LaunchDeviceV2", "LaunchDeviceV2"},
      {"__cudaCDP2GetParameterBufferV2", "GetParameterBufferFrom"},  // with the caller: with_callers
      {"__cudaCDP2GetLastError", "GetLastError"},
      {"__cudaCDP2PeekAtLastError", "PeekAtLastError"},
      {"__cudaCDP2StreamCreateWithFlags", "StreamCreateWithFlags"},
      {"__cudaCDP2StreamDestroy", "StreamDestroy"},
      {"__cudaCDP2Malloc", "Malloc"},
      {"__cudaCDP2Free", "Free"},
      {"__cudaCDP2EventRecord", "EventRecord"},
      {"__cudaCDP2EventRecordWithFlags", "EventRecordWithFlags"},
      {"malloc", "malloc"},
      {"free", "free"},
      {"__cuda_syscall_aligned_malloc", "aligned_malloc"},  // __nv_aligned_device_malloc
  };
  return calls;
}

DeviceCallVerdict judge_device_name(const std::string& name, bool is_function) {
  const std::string readable = demangled(name);
  const bool kit = readable.rfind("cdplab::", 0) == 0 && readable.rfind("cdplab::oracle::", 0) != 0 &&
                   readable.rfind("cdplab::harness::", 0) != 0;
  if (!is_function) {
    // The kit's device report (cdplab_device_report) and the kit's namespaced variables.
    const bool kit_variable = name.rfind("cdplab_", 0) == 0 && name.rfind("cdplab_hook_", 0) != 0;
    return kit || kit_variable ? DeviceCallVerdict::kit : DeviceCallVerdict::refused;
  }
  for (const auto& call : hooked_runtime_calls())
    if (call.ptx_name == name) return DeviceCallVerdict::hooked;
  if (harmless_names().count(name) != 0) return DeviceCallVerdict::harmless;
  return kit ? DeviceCallVerdict::kit : DeviceCallVerdict::refused;
}

std::vector<RefusedDeviceName> refused_device_names(const std::string& ptx) {
  std::vector<Declared> declared;
  for (auto& f : functions(ptx))
    if (!f.defined) declared.push_back(f);
  for (auto& v : extern_variables(ptx)) declared.push_back(v);
  std::vector<RefusedDeviceName> refused;
  std::set<std::string> seen;
  for (const auto& d : declared) {
    if (!seen.insert(d.name).second || judge_device_name(d.name, d.is_function) != DeviceCallVerdict::refused)
      continue;
    std::size_t use = first_use(ptx, d.name, d.at);
    if (use == std::string::npos) use = d.at;
    refused.push_back({d.name, d.is_function, line_at(ptx, use), source_place(ptx, use)});
  }
  return refused;
}

std::string refused_device_names_problem(const std::string& ptx) {
  const auto refused = refused_device_names(ptx);
  if (refused.empty()) return "";
  std::string names;
  bool launches = false;
  for (const auto& r : refused) {
    const std::string readable = demangled(r.name);
    names += (names.empty() ? "" : ", ") + readable + (r.place.empty() ? "" : " (" + r.place + ")");
    launches = launches || r.name.find("Launch") != std::string::npos || r.name.find("ParameterBuffer") != std::string::npos;
  }
  return "the device code uses " + names +
         ", which the grader does not observe and refuses: " +
         (launches ? "launch child grids with <<< >>> and " : "") +
         "use only the device-runtime calls the lessons teach (launches, streams, cudaMalloc/cudaFree, malloc/free, "
         "events, cudaGetLastError, printf)";
}

}  // namespace cdplab::harness::device_code
