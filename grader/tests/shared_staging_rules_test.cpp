// Every kernel that stages data in __shared__ memory has a barrier rule of the fitting kind in its
// exercise's chapter.toml. The kernels are found in the PTX of every reference solution, and of the
// mutation catalogue's alternatives (correct variants) that declare __shared__ memory of their own,
// with a reading of the PTX of this test's own, not the rule checker's:
//
// - a kernel reads staged data when, in code of the exercise file (or of a function inlined straight
//   into it, as atomicAdd is; not a library's code deeper down, CUB's block scan), it writes __shared__ memory (a store or an atomic) and loads some that may hold another
//   thread's value: a load at an address the same in every thread (a variable, or an entry at a
//   constant offset), any load in a kernel with shared atomics, or a load at an address no store of
//   its function writes (the thread's own entry is stored and loaded through the same address);
//   it needs `barrier_before_shared_reads`;
// - a kernel updates staged data atomically when it stores to __shared__ memory (or sets a value
//   with an atomic exchange, compare-and-swap or and) and performs atomics on it; it needs
//   `barrier_before_shared_atomics`.
//
// Code the starter hands out may be guarded by a `barrier_lines` rule instead, which counts its
// barriers. What a device function does counts for every kernel that calls it. Compiles with the
// build's nvcc (as `cdplab rules` does); no GPU needed.
#include "files/files.h"
#include "manifest/manifest.h"
#include "process/process.h"
#include "rules/launch_graph.h"
#include "rules/ptx_reader.h"
#include "test_folders.h"

#include <doctest/doctest.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace ptx = cdplab::rules::ptx;

namespace {

const fs::path kRoot = CDPLAB_SOURCE_DIR;

/// One file to read: a reference solution or an alternative of it.
struct Source {
  const cdplab::manifest::Exercise* exercise = nullptr;
  std::string label;  ///< "solutions/01-fundamentals/child_grids.cu", or "... alternative NAME"
  std::string text;
  fs::path ptx;       ///< where its PTX goes
  std::string error;  ///< why it did not compile, if it did not
};

/// The catalogue's alternatives of an exercise whose edits declare __shared__ memory, applied to
/// the solution. A find that does not occur once is the catalogue test's finding: skipped here.
std::vector<std::pair<std::string, std::string>> shared_alternatives(const cdplab::manifest::Exercise& e,
                                                                     const std::string& solution) {
  std::vector<std::pair<std::string, std::string>> found;
  const fs::path file = kRoot / "grader/tests/mutants" / e.chapter / (e.stem + ".toml");
  if (!fs::exists(file)) return found;
  const toml::table root = toml::parse_file(file.string());
  const toml::array* alternatives = root["alternative"].as_array();
  if (alternatives == nullptr) return found;
  const auto strings = [](const toml::node* node) {
    std::vector<std::string> out;
    if (node == nullptr) return out;
    if (const auto* text = node->as_string()) out.push_back(text->get());
    if (const auto* list = node->as_array())
      for (const auto& item : *list)
        if (const auto* text = item.as_string()) out.push_back(text->get());
    return out;
  };
  for (const auto& node : *alternatives) {
    const toml::table& table = *node.as_table();
    const auto finds = strings(table.get("find"));
    const auto replaces = strings(table.get("replace"));
    if (finds.size() != replaces.size() ||
        std::none_of(replaces.begin(), replaces.end(),
                     [](const std::string& r) { return r.find("__shared__") != std::string::npos; }))
      continue;
    std::string text = solution;
    bool applies = true;
    for (std::size_t i = 0; i < finds.size() && applies; ++i) {
      const auto at = text.find(finds[i]);
      applies = !finds[i].empty() && at != std::string::npos && text.find(finds[i], at + 1) == std::string::npos;
      if (applies) text.replace(at, finds[i].size(), replaces[i]);
    }
    if (applies) found.emplace_back(table["name"].value_or(std::string("?")), text);
  }
  return found;
}

/// Compiles a source to PTX as `cdplab rules` does.
void compile(Source& source, const fs::path& work) {
  const cdplab::manifest::Exercise& e = *source.exercise;
  const fs::path file = work / e.chapter / e.file;
  cdplab::testing::write_file(file, source.text);
  std::vector<std::string> argv = {CDPLAB_CUDA_COMPILER, "-ptx", "-rdc=true", "-std=c++17", "-lineinfo",
                                   std::string("-arch=compute_") + CDPLAB_PTX_ARCHITECTURE,
                                   "-I" + (kRoot / "starter/include").string()};
  const fs::path support = kRoot / "grader/suites" / e.chapter / "support";
  if (fs::is_directory(support)) argv.push_back("-I" + support.string());
  source.ptx = work / e.chapter / (e.stem + ".ptx");
  argv.insert(argv.end(), {"-o", source.ptx.string(), file.string()});
  cdplab::process::Options options;
  options.timeout_seconds = 600;
  const auto result = cdplab::process::run(argv, options);
  if (!result.ok()) source.error = result.describe() + "\n" + result.output;
}

/// One access to __shared__ memory, as this test reads it.
struct Access {
  enum Kind { load, store, atomic } kind = load;
  std::string address;     ///< the address operand as written
  bool uniform = false;    ///< the same address in every thread: a variable, plus constants only
  bool sets = false;       ///< an atomic that sets a value (exchange, compare-and-swap, and)
  int line = 0;            ///< PTX line
};

bool among(const std::string& value, std::initializer_list<const char*> values) {
  return std::any_of(values.begin(), values.end(), [&](const char* v) { return value == v; });
}

/// The accesses to __shared__ memory of one function that lie in the exercise file (`mine` tells
/// a PTX line's file apart).
std::vector<Access> shared_accesses(const ptx::Function& function, const ptx::Module& module,
                                    const std::function<bool(int)>& mine) {
  // Registers that hold an address of __shared__ memory, and those of them that hold the same
  // address in every thread (made of shared symbols and constants only, at every definition).
  std::set<std::string> pointers;
  std::map<std::string, bool> uniform;  // register -> every definition so far uniform
  const auto address_math = [](const std::string& base) {
    return among(base, {"mov", "cvta", "cvt", "add", "sub", "mad", "mul", "shl", "selp", "and", "or"});
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& ins : function.body) {
      const auto& ops = ins.operands;
      const std::string base = ptx::opcode_base(ins.opcode);
      if (ops.size() < 2 || !address_math(base)) continue;
      bool from_shared = false;
      bool all_uniform = among(base, {"mov", "cvta", "cvt", "add", "sub"});
      for (std::size_t i = 1; i < ops.size(); ++i) {
        const bool symbol = module.shared_symbols.count(ops[i]) > 0;
        const bool pointer = pointers.count(ops[i]) > 0;
        from_shared = from_shared || symbol || pointer;
        const auto it = uniform.find(ops[i]);
        all_uniform = all_uniform && (symbol || ptx::is_integer_literal(ops[i]) || (it != uniform.end() && it->second));
      }
      if (!from_shared) continue;
      for (const auto& reg : ptx::registers_in(ops[0])) {
        changed = pointers.insert(reg).second || changed;
        const auto it = uniform.find(reg);
        const bool now = (it == uniform.end() || it->second) && all_uniform && ins.guard.empty();
        if (it == uniform.end() || it->second != now) {
          uniform[reg] = now;
          changed = true;
        }
      }
    }
  }
  std::vector<Access> accesses;
  for (const auto& ins : function.body) {
    const std::string base = ptx::opcode_base(ins.opcode);
    if (!among(base, {"ld", "st", "atom", "red"}) || !mine(ins.line)) continue;
    bool other_space = false;
    for (const char* space : {"global", "local", "const", "param", "tex"})
      other_space = other_space || ptx::has_component(ins.opcode, space);
    if (other_space) continue;
    std::string address;
    for (const auto& op : ins.operands)
      if (!ptx::address_base(op).empty()) {
        address = op;
        break;
      }
    const std::string at = ptx::address_base(address);
    const bool symbol = module.shared_symbols.count(at) > 0;
    if (!ptx::has_component(ins.opcode, "shared") && !symbol && !pointers.count(at)) continue;
    Access access;
    access.kind = base == "ld" ? Access::load : base == "st" ? Access::store : Access::atomic;
    access.address = address;
    const auto it = uniform.find(at);
    access.uniform = symbol || (it != uniform.end() && it->second);
    access.sets = access.kind == Access::atomic &&
                  (ptx::has_component(ins.opcode, "exch") || ptx::has_component(ins.opcode, "cas") ||
                   ptx::has_component(ins.opcode, "and"));
    access.line = ins.line;
    accesses.push_back(access);
  }
  return accesses;
}

/// What one kernel needs, with a PTX line that shows why.
struct Needs {
  int reads = 0;    ///< a load of staged data (PTX line), 0 if none
  int atomics = 0;  ///< an atomic after a store (PTX line), 0 if none
};

/// The needs of every kernel of a PTX module, by its symbol. A function's accesses count for every
/// kernel that reaches it through calls; a load counts as its own entry only beside a store of its
/// own function.
std::map<std::string, Needs> staging_kernels(const ptx::Module& module, const std::string& exercise_file) {
  std::set<int> files;
  for (const auto& [index, path] : module.files)
    if (fs::path(path).filename() == exercise_file) files.insert(index);
  // Written in the exercise file, or in a function inlined straight into it (atomicAdd); not in a
  // library's code that a call in the exercise file reaches deeper down (CUB's block scan).
  const auto mine = [&](int line) {
    if (module.places.empty()) return true;
    const auto it = module.places.find(line);
    return it != module.places.end() && (files.count(it->second.file) > 0 || files.count(it->second.outer_file) > 0);
  };
  std::map<std::string, std::vector<Access>> by_function;
  for (const auto& function : module.functions)
    if (function.defined) by_function[function.name] = shared_accesses(function, module, mine);

  std::map<std::string, Needs> needs;
  for (const auto& kernel : module.functions) {
    if (!kernel.is_kernel || !kernel.defined) continue;
    std::vector<const ptx::Function*> reached = {&kernel};
    std::set<std::string> seen = {kernel.name};
    for (std::size_t i = 0; i < reached.size(); ++i)
      for (const auto& ins : reached[i]->body)
        if (ptx::opcode_base(ins.opcode) == "call") {
          const ptx::Function* callee = module.find(ptx::call_operands(ins).callee);
          if (callee != nullptr && callee->defined && seen.insert(callee->name).second) reached.push_back(callee);
        }
    bool writes = false, atomics = false, stores = false;
    for (const auto* f : reached)
      for (const auto& a : by_function[f->name]) {
        writes = writes || a.kind != Access::load;
        atomics = atomics || a.kind == Access::atomic;
        stores = stores || a.kind == Access::store || a.sets;
      }
    Needs n;
    for (const auto* f : reached) {
      const auto& accesses = by_function[f->name];
      for (const auto& a : accesses) {
        if (a.kind == Access::atomic && stores && n.atomics == 0) n.atomics = a.line;
        if (a.kind != Access::load || !writes || n.reads != 0) continue;
        const bool own = std::any_of(accesses.begin(), accesses.end(), [&](const Access& s) {
          return s.kind == Access::store && s.address == a.address;
        });
        if (a.uniform || atomics || !own) n.reads = a.line;
      }
    }
    if (n.reads != 0 || n.atomics != 0) needs[kernel.name] = n;
  }
  return needs;
}

}  // namespace

TEST_CASE("every kernel that stages data in __shared__ memory has a barrier rule of the fitting kind") {
  const auto book = cdplab::manifest::load_workbook(kRoot);
  const fs::path work = cdplab::testing::empty_folder(fs::path(CDPLAB_TEST_BINARY_DIR) / "shared-staging");
  std::vector<Source> sources;
  for (const auto* e : book.exercises()) {
    if (e->is_quiz()) continue;
    const fs::path solution = kRoot / "solutions" / e->path();
    REQUIRE_MESSAGE(fs::exists(solution), "no reference solution " << solution.string());
    const std::string text = cdplab::files::read_text(solution);
    sources.push_back({e, "solutions/" + e->path(), text, {}, {}});
    for (auto& [name, variant] : shared_alternatives(*e, text))
      sources.push_back({e, "solutions/" + e->path() + " with the alternative " + name, variant, {}, {}});
  }
  // Two compilers at a time: the project's machines without a GPU have two cores.
  for (std::size_t i = 0; i < sources.size(); i += 2) {
    std::vector<std::future<void>> running;
    for (std::size_t j = i; j < std::min(i + 2, sources.size()); ++j)
      running.push_back(std::async(std::launch::async, [&, j] { compile(sources[j], work / std::to_string(j)); }));
    for (auto& r : running) r.get();
  }

  std::string listing;  // every staging kernel found, for the log
  int staging = 0;
  for (const Source& source : sources) {
    INFO(source.label);
    REQUIRE_MESSAGE(source.error.empty(), "does not compile to PTX: " << source.error);
    const std::string text = cdplab::files::read_text(source.ptx);
    const ptx::Module module = ptx::read_module(text);
    const cdplab::rules::LaunchGraph graph = cdplab::rules::analyze_ptx(text);
    const auto needs = staging_kernels(module, source.exercise->file);
    for (const auto& [symbol, n] : needs) {
      ++staging;
      std::string name = symbol;
      for (const auto& k : graph.kernels)
        if (k.mangled == symbol) name = k.short_name;
      // The rules of the exercise that name this kernel, by kind.
      std::set<std::string> kinds;
      for (const auto& rule : source.exercise->rules)
        for (const std::size_t k : graph.find_all(rule.kernel))
          if (graph.kernels[k].mangled == symbol) kinds.insert(rule.kind);
      const bool lines = kinds.count("barrier_lines") > 0;
      listing += source.label + ": " + name + (n.reads ? " reads staged data (PTX line " + std::to_string(n.reads) + ")" : "") +
                 (n.atomics ? " updates staged data atomically (PTX line " + std::to_string(n.atomics) + ")" : "") + "\n";
      if (n.reads != 0)
        CHECK_MESSAGE((kinds.count("barrier_before_shared_reads") > 0 || lines),
                      name << " loads __shared__ memory another thread may have written (PTX line " << n.reads
                           << "), but " << source.exercise->chapter << "/chapter.toml has no barrier_before_shared_reads "
                           << "rule for it in exercise " << source.exercise->id);
      if (n.atomics != 0)
        CHECK_MESSAGE((kinds.count("barrier_before_shared_atomics") > 0 || lines),
                      name << " performs atomics on __shared__ memory it also stores to (PTX line " << n.atomics
                           << "), but " << source.exercise->chapter << "/chapter.toml has no barrier_before_shared_atomics "
                           << "rule for it in exercise " << source.exercise->id);
    }
  }
  MESSAGE("kernels that stage data in __shared__ memory:\n" << listing);
  CHECK(staging > 0);
}
