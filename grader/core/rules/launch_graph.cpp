#include "rules/launch_graph.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "rules/barrier_flow.h"
#include "rules/counter_fences.h"
#include "rules/shared_bounds.h"
#include "rules/launch_check_flow.h"
#include "rules/names.h"
#include "rules/ptx_reader.h"

namespace cdplab::rules {
namespace {

using ptx::has_component;
using ptx::Instruction;
using ptx::opcode_base;

// Address taint bits: a register holds an address of local or of shared memory, or (in a device
// function) a value derived from its parameter i: bit kFirstParameter << i. Parameter bits are
// resolved at each call with what the caller hands over, so a private address is followed
// through device functions that are not inlined.
constexpr unsigned kLocal = 1;
constexpr unsigned kShared = 2;
constexpr unsigned kPrivate = kLocal | kShared;
constexpr unsigned kFirstParameter = 4;
constexpr int kTrackedParameters = 28;

// The parameter bit of a device function's `ld.param` source `[<function>_param_<i>]`; 0 for
// anything else (a call's own `retval0` or `param0`, a parameter beyond the tracked ones).
unsigned parameter_bit(const std::string& address) {
  const std::size_t at = address.rfind("_param_");
  if (at == std::string::npos || at == 0) return 0;
  const std::string digits = address.substr(at + 7);
  if (digits.empty() || digits.size() > 2 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  const int index = std::stoi(digits);
  return index < kTrackedParameters ? kFirstParameter << index : 0;
}

// The device runtime's entry points as they appear in PTX (a `_ptsz` suffix is dropped first).
constexpr std::string_view kGetBufferV2 = "__cudaCDP2GetParameterBufferV2";
constexpr std::string_view kGetBuffer = "__cudaCDP2GetParameterBuffer";
constexpr std::string_view kLaunchV2 = "__cudaCDP2LaunchDeviceV2";
constexpr std::string_view kLaunch = "__cudaCDP2LaunchDevice";
constexpr std::string_view kStreamCreate = "__cudaCDP2StreamCreateWithFlags";
constexpr std::string_view kStreamDestroy = "__cudaCDP2StreamDestroy";
constexpr std::string_view kGetLastError = "__cudaCDP2GetLastError";
constexpr std::string_view kPeekAtLastError = "__cudaCDP2PeekAtLastError";

// The stream handles of cuda_runtime_api.h that device code may pass as constants.
constexpr long long kStreamLegacy = 1;
constexpr long long kStreamPerThread = 2;
constexpr long long kStreamTailLaunch = 3;
constexpr long long kStreamFireAndForget = 4;

constexpr unsigned kStreamNonBlocking = 1;

/// Bytes one load, store or atomic moves: its type's size times its vector's length
/// (`ld.shared.u64`: 8, `st.shared.v2.u32`: 8, `atom.shared.add.noftz.bf16x2`: 4); 1 when the
/// opcode names no size.
long long access_bytes(const std::string& opcode) {
  const auto digits = [](const std::string& text) {
    return !text.empty() &&
           std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  };
  long long lanes = 1, bytes = 0;
  std::size_t at = 0;
  while (at <= opcode.size()) {
    std::size_t end = opcode.find('.', at);
    if (end == std::string::npos) end = opcode.size();
    std::string part = opcode.substr(at, end - at);
    at = end + 1;
    if (part.size() >= 2 && part[0] == 'v' && digits(part.substr(1))) {
      lanes = std::stoll(part.substr(1));
      continue;
    }
    // A type: b, f, s, u or bf, its bits, and for packed types xN (f16x2, bf16x2).
    long long packed = 1;
    if (const auto x = part.find('x'); x != std::string::npos && digits(part.substr(x + 1))) {
      packed = std::stoll(part.substr(x + 1));
      part.resize(x);
    }
    const std::size_t letters = part.rfind("bf", 0) == 0 ? 2 : 1;
    if (part.size() > letters && std::string("bfsu").find(part[0]) != std::string::npos && digits(part.substr(letters)))
      bytes = std::stoll(part.substr(letters)) / 8 * packed;
  }
  return bytes > 0 ? bytes * lanes : 1;
}

// Instructions whose result is an address when a source is: copies and address arithmetic.
bool derives_address(const std::string& base) {
  return base == "mov" || base == "add" || base == "sub" || base == "mad" || base == "cvt" ||
         base == "cvta" || base == "selp" || base == "and" || base == "or";
}

// Whether a call of a function this PTX does not define may read a launch's error: anything but
// the device runtime's own entry points, printf, assert and the workbook's reporting functions.
bool may_read_launch_error(const std::string& callee) {
  if (callee.rfind("__cudaCDP2", 0) == 0 || callee == "vprintf" || callee == "__assertfail") return false;
  return callee.find("record_device_launch") == std::string::npos &&
         callee.find("record_device_todo") == std::string::npos;
}

// Whether `function`, or a function it calls, may do something: `does` says it of an instruction
// of a body, `outside` of a call of a function this PTX does not define. A call through a pointer,
// or back into a function being looked at, is taken to do it: the analysis cannot tell.
bool may_do(const ptx::Module& module, const ptx::Function& function, std::set<std::string>& visiting,
            const std::function<bool(const ptx::Instruction&)>& does,
            const std::function<bool(const std::string&)>& outside) {
  if (!visiting.insert(function.name).second) return true;
  for (const auto& ins : function.body) {
    if (does(ins)) return true;
    if (opcode_base(ins.opcode) != "call") continue;
    const std::string callee = ptx::call_operands(ins).callee;
    if (callee.empty() || callee.front() == '%') return true;
    const ptx::Function* target = module.find(callee);
    const bool may = target == nullptr || !target->defined ? outside(callee)
                                                           : may_do(module, *target, visiting, does, outside);
    if (may) return true;
  }
  return false;
}

// Whether a call of `function` may read a launch's error: it, or a function it calls, calls
// cudaGetLastError() or cudaPeekAtLastError(), or a function outside this PTX that
// may_read_launch_error() does not know to leave the error alone.
bool calls_error_reader(const ptx::Module& module, const ptx::Function& function, std::set<std::string>& visiting) {
  return may_do(
      module, function, visiting, [](const ptx::Instruction&) { return false; },
      [](const std::string& callee) {
        return callee == kGetLastError || callee == kPeekAtLastError || may_read_launch_error(callee);
      });
}

bool is_barrier(const std::string& opcode);

// Whether `function` holds a block barrier, itself or in a function it calls. A call of a function
// this PTX only declares is the runtime's own and holds none; one it does not know at all may.
bool holds_barrier(const ptx::Module& module, const ptx::Function& function, std::set<std::string>& visiting) {
  return may_do(
      module, function, visiting, [](const ptx::Instruction& ins) { return is_barrier(ins.opcode); },
      [&module](const std::string& callee) { return module.find(callee) == nullptr; });
}

std::string without_suffix(std::string name, std::string_view suffix) {
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0)
    name.resize(name.size() - suffix.size());
  return name;
}

// What a device-heap call is called in CUDA C++ ("" when the callee is none of them).
std::string heap_function(const std::string& callee, bool& allocates) {
  allocates = true;
  if (callee == "__cudaCDP2Malloc") return "cudaMalloc";
  if (callee == "malloc") return "malloc";
  allocates = false;
  if (callee == "__cudaCDP2Free") return "cudaFree";
  if (callee == "free") return "free";
  return {};
}

// A call of a defined device function: what each argument holds.
struct CallSite {
  std::string callee;
  std::vector<unsigned> argument_taint;
};

// A launch found in one function's own body.
struct LaunchSite {
  std::string child;  // the child's symbol; empty when not known
  StreamKind stream = StreamKind::null_stream;
  std::string stream_source;  // Launch::stream_source
  unsigned taint = 0;
  int line = 0;
};

// What one function does in its own body (Site::via is filled in when attributed to a kernel).
struct FunctionFacts {
  std::vector<LaunchSite> launches;
  std::vector<StreamCreation> stream_creations;
  std::vector<Site> stream_destructions;
  std::vector<HeapCall> allocations;
  std::vector<HeapCall> deallocations;
  std::vector<Atomic> atomics;
  std::vector<Unguarded> unguarded_shared_atomics;
  std::vector<Unguarded> unguarded_shared_reads;
  int shared_publications = 0;  // stores to __shared__ memory at an address the same in every thread
  std::vector<Unguarded> unguarded_launches;
  std::vector<int> unchecked_launches;  // PTX lines; kernels only (a device function's caller may check)
  CounterFences counter_fences;
  std::vector<SharedOverrun> shared_overruns;
  std::vector<int> block_barriers;  // PTX lines of `bar.sync` and its kin
  std::vector<std::string> callees;
  std::vector<CallSite> calls;  // the calls of `callees`, with their arguments' taint
};

// The constant or symbol a register holds, when every `mov` into it agrees.
class Values {
 public:
  explicit Values(const ptx::Function& function) {
    for (const auto& ins : function.body)
      if (opcode_base(ins.opcode) == "mov" && ins.operands.size() == 2 &&
          ptx::registers_in(ins.operands[0]).size() == 1)
        sources_[ins.operands[0]].push_back(ins.operands[1]);
  }

  // A literal or symbol as written, or the single value a register was given; empty otherwise.
  std::string resolve(const std::string& operand) const {
    std::set<std::string> visiting;
    return resolve(operand, visiting);
  }

  std::optional<long long> integer(const std::string& operand) const {
    const std::string value = resolve(operand);
    if (!ptx::is_integer_literal(value)) return std::nullopt;
    return ptx::integer_value(value);
  }

 private:
  std::string resolve(const std::string& operand, std::set<std::string>& visiting) const {
    if (operand.empty() || operand.front() != '%') return operand;
    const auto it = sources_.find(operand);
    if (it == sources_.end() || !visiting.insert(operand).second) return {};
    std::string value;
    for (const auto& source : it->second) {
      const std::string v = resolve(source, visiting);
      if (v.empty() || (!value.empty() && v != value)) return {};
      value = v;
    }
    return value;
  }

  std::map<std::string, std::vector<std::string>> sources_;
};

// Which registers hold addresses of local or shared memory: a fixed point over the function's
// copies and address arithmetic, regardless of control flow.
std::map<std::string, unsigned> address_taint(const ptx::Function& function,
                                              const ptx::Module& module) {
  std::map<std::string, unsigned> taint;
  if (!function.is_kernel) {  // a device function's parameters: resolved by its callers
    for (const auto& ins : function.body) {
      if (ins.opcode.rfind("ld.param", 0) != 0 || ins.operands.size() != 2) continue;
      if (const unsigned bit = parameter_bit(ptx::address_base(ins.operands[1])))
        for (const auto& reg : ptx::registers_in(ins.operands[0])) taint[reg] |= bit;
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& ins : function.body) {
      const std::string base = opcode_base(ins.opcode);
      if (!derives_address(base) || ins.operands.size() < 2) continue;
      unsigned bits = 0;
      if (base == "cvta") {
        if (has_component(ins.opcode, "local")) bits |= kLocal;
        if (has_component(ins.opcode, "shared")) bits |= kShared;
      }
      for (std::size_t i = 1; i < ins.operands.size(); ++i) {
        const std::string& operand = ins.operands[i];
        if (module.local_symbols.count(operand)) bits |= kLocal;
        if (module.shared_symbols.count(operand)) bits |= kShared;
        for (const auto& reg : ptx::registers_in(operand)) {
          const auto it = taint.find(reg);
          if (it != taint.end()) bits |= it->second;
        }
      }
      if (bits == 0) continue;
      for (const auto& reg : ptx::registers_in(ins.operands[0])) {
        unsigned& target = taint[reg];
        if ((target | bits) != target) {
          target |= bits;
          changed = true;
        }
      }
    }
  }
  return taint;
}

// Registers that hold the index of the thread's warp in its block (threadIdx.x / 32, as `shr` by 5
// or `div` by 32 of a value derived from %tid.x), or a value made from it by arithmetic that keeps
// the warps apart (copies, add, sub, mul, mad, shl, cvt, cvta, with nothing else derived from
// %tid.x): an address in one of them is one warp's own, which __syncwarp() orders. None in a
// function that reads threadIdx.y or threadIdx.z, where a block's rows need not fill whole warps.
// A fixed point, regardless of control flow.
std::set<std::string> warp_indexed_registers(const ptx::Function& function) {
  std::set<std::string> thread_x;
  std::set<std::string> warp;
  for (const auto& ins : function.body)
    for (const auto& op : ins.operands)
      if (op == "%tid.y" || op == "%tid.z") return warp;
  const auto from = [](const std::set<std::string>& set, const std::string& operand) {
    for (const auto& reg : ptx::registers_in(operand))
      if (set.count(reg)) return true;
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& ins : function.body) {
      const auto& ops = ins.operands;
      if (ops.size() < 2) continue;
      const std::string base = opcode_base(ins.opcode);
      bool of_thread = false;
      bool of_warp = false;
      for (std::size_t i = 1; i < ops.size(); ++i) {
        of_thread = of_thread || ops[i] == "%tid.x" || from(thread_x, ops[i]);
        of_warp = of_warp || from(warp, ops[i]);
      }
      const bool keeps = base == "mov" || base == "cvt" || base == "cvta" || base == "add" || base == "sub" ||
                         base == "mul" || base == "mad" || base == "shl";
      const bool to_warp = (of_warp && keeps && !of_thread) ||
                           (ops.size() == 3 && from(thread_x, ops[1]) &&
                            ((base == "shr" && ops[2] == "5") || (base == "div" && ops[2] == "32")));
      const bool to_thread = of_thread && (base == "mov" || base == "cvt" || base == "add" || base == "sub");
      for (const auto& reg : ptx::registers_in(ops[0])) {
        if (to_warp && warp.insert(reg).second) changed = true;
        if (to_thread && thread_x.insert(reg).second) changed = true;
      }
    }
  }
  return warp;
}

// The offsets into the function's stack frame that registers hold: `mov %r, %SP` (or %SPL, or
// the depot symbol) and `add %r, <frame register>, <constant>`, when a register is defined once.
class FrameOffsets {
 public:
  FrameOffsets(const ptx::Function& function, const ptx::Module& module) : module_(module) {
    for (const auto& ins : function.body) {
      const std::string base = opcode_base(ins.opcode);
      if ((base != "mov" && base != "add") || ins.operands.size() < 2) continue;
      for (const auto& reg : ptx::registers_in(ins.operands[0])) definitions_[reg].push_back(&ins);
    }
  }

  // The frame offset an operand holds ("%rd2", or an address "[%rd2+8]" read as %rd2 + 8).
  std::optional<long long> of(const std::string& operand) const {
    std::string text = operand;
    long long extra = 0;
    if (text.size() > 2 && text.front() == '[' && text.back() == ']') {
      text = text.substr(1, text.size() - 2);
      const std::size_t plus = text.find('+');
      if (plus != std::string::npos) {
        const std::string offset = text.substr(plus + 1);
        if (!ptx::is_integer_literal(offset)) return std::nullopt;
        extra = ptx::integer_value(offset);
        text = text.substr(0, plus);
      }
    }
    std::set<std::string> visiting;
    const auto base = offset_of(text, visiting);
    if (!base) return std::nullopt;
    return *base + extra;
  }

 private:
  std::optional<long long> offset_of(const std::string& operand, std::set<std::string>& visiting) const {
    if (operand == "%SP" || operand == "%SPL" || module_.local_symbols.count(operand)) return 0;
    const auto it = definitions_.find(operand);
    if (it == definitions_.end() || it->second.size() != 1 || !visiting.insert(operand).second) return std::nullopt;
    const Instruction& ins = *it->second.front();
    if (opcode_base(ins.opcode) == "mov") return offset_of(ins.operands[1], visiting);
    if (ins.operands.size() != 3) return std::nullopt;
    for (int frame = 1; frame <= 2; ++frame) {
      const std::string& constant = ins.operands[3 - frame];
      if (!ptx::is_integer_literal(constant)) continue;
      if (const auto base = offset_of(ins.operands[frame], visiting)) return *base + ptx::integer_value(constant);
    }
    return std::nullopt;
  }

  const ptx::Module& module_;
  std::map<std::string, std::vector<const Instruction*>> definitions_;
};

// Whether an opcode waits for other threads: a block barrier (`bar.sync`, `barrier.sync`,
// `bar.red` of __syncthreads_count and friends) or a warp barrier (`bar.warp.sync`).
// `bar.arrive` does not wait.
bool is_barrier(const std::string& opcode) {
  const std::string base = opcode_base(opcode);
  return (base == "bar" || base == "barrier") && !has_component(opcode, "arrive");
}

StreamKind stream_kind(const std::optional<long long>& handle) {
  if (!handle) return StreamKind::named;
  switch (*handle) {
    case 0:
    case kStreamLegacy:
    case kStreamPerThread:
      return StreamKind::null_stream;
    case kStreamTailLaunch:
      return StreamKind::tail;
    case kStreamFireAndForget:
      return StreamKind::fire_and_forget;
    default:
      return StreamKind::named;
  }
}

// Walks one function's body in text order: launches (parameter buffer, stores into it, the
// launch call), device runtime calls, atomics, and calls of other functions.
FunctionFacts analyze_function(const ptx::Function& function, const ptx::Module& module) {
  FunctionFacts facts;
  const Values values(function);
  const FrameOffsets frame(function, module);
  const std::map<std::string, unsigned> taint = address_taint(function, module);
  // The taint of an operand: its registers', or a shared or local symbol's own.
  auto taint_of = [&](const std::string& operand) {
    unsigned bits = 0;
    if (module.local_symbols.count(operand)) bits |= kLocal;
    if (module.shared_symbols.count(operand)) bits |= kShared;
    for (const auto& reg : ptx::registers_in(operand)) {
      const auto it = taint.find(reg);
      if (it != taint.end()) bits |= it->second;
    }
    return bits;
  };

  struct Buffer {
    std::string child;
    unsigned taint = 0;
  };
  std::vector<Buffer> buffers;
  std::map<std::string, std::size_t> buffer_of;  // register -> buffer it points into
  std::map<std::string, std::string> params;     // call parameter -> value stored at offset 0
  constexpr std::size_t kNoBuffer = static_cast<std::size_t>(-1);
  std::size_t pending_buffer = kNoBuffer;  // returned by the last call, not read yet

  auto buffer_in = [&](const std::string& operand) -> std::optional<std::size_t> {
    for (const auto& reg : ptx::registers_in(operand)) {
      const auto it = buffer_of.find(reg);
      if (it != buffer_of.end()) return it->second;
    }
    return std::nullopt;
  };
  auto symbol = [&](const std::string& operand) {
    const std::string value = values.resolve(operand);
    return ptx::is_symbol(value) ? value : std::string();
  };
  // Where registers got the values they hold, as far as a stream handle needs it: a variable of
  // the frame (with how often that variable had been written when it was read) or a kernel
  // parameter. A later definition of the register replaces its source.
  std::map<long long, int> frame_writes;
  std::map<std::string, std::string> source_of;
  auto note_frame_write = [&](const std::string& address) {
    if (const auto offset = frame.of(address)) ++frame_writes[*offset];
  };
  // The last store to shared memory not yet followed by a barrier (0: none), in text order. The
  // stores that reach a launch are followed along the control flow instead (barrier_flow.h).
  int shared_store = 0;
  // Stores to shared memory since the last block barrier, each at an address of its warp's own
  // (warp_indexed_registers): then a warp barrier orders them for the same warp's atomics. Once a
  // warp barrier did so, the line of the last such store (an atomic of other warps' counters
  // after it is unguarded still).
  bool pending_warp_private = true;
  int warp_guarded_store = 0;
  const std::set<std::string> warp_indexed = warp_indexed_registers(function);
  const auto in_warp_own = [&](const std::string& address) {
    for (const auto& reg : ptx::registers_in(address))
      if (warp_indexed.count(reg)) return true;
    return false;
  };
  // Stores to a __shared__ variable at an address that is the same in every thread (the variable
  // itself, or an entry at a constant offset): one thread publishing a value for the block. A load
  // that may read that byte in a stretch of code that began at the same barrier as the store's
  // (barrier_stretches) may run before the store, in another warp.
  struct SharedPlace {
    std::string variable;
    long long offset = 0;  // from the variable's start: exact when `known`, else the least it can be
    bool known = true;
  };
  // Each such store, and each load from a __shared__ variable at a place known at least from below.
  struct SharedAccess {
    SharedPlace place;
    std::size_t at = 0;
    int line = 0;
    long long bytes = 1;  // how many bytes from the place on it moves
  };
  std::vector<SharedAccess> publications, shared_loads;
  // Every store, atomic and load on __shared__ memory, for the writes that are not publications: a
  // thread's own entry (an index made from threadIdx.x), a counter many threads add to. A load in
  // the same stretch as such a write may read another thread's entry, unless it reads an address
  // the loading thread itself writes there (the same address operand: its own entry), or both
  // address the warp's own entries (made from threadIdx.x / 32) and a __syncwarp() lies between.
  struct SharedTouch {
    std::optional<SharedPlace> place;  // where in a __shared__ variable, when the address says
    std::string address;               // the address operand as written: "[%rd4+8]"
    std::size_t at = 0;
    int line = 0;
    long long bytes = 1;
    bool atomic = false;
    bool warp_own = false;
  };
  std::vector<SharedTouch> shared_writes, shared_reads;
  // Calls of device functions that hold no barrier: the other analyses take every call as one.
  std::vector<std::size_t> calls_without_barrier;
  std::map<std::string, SharedPlace> place_of;  // register -> where in a __shared__ variable it points
  // Where an address operand ("[x+8]", "[%r3+4]") points, when into a __shared__ variable.
  const auto shared_place = [&](const std::string& operand) -> std::optional<SharedPlace> {
    const std::string base = ptx::address_base(operand);
    if (base.empty()) return std::nullopt;
    long long displacement = 0;
    if (const auto plus = operand.find('+'); plus != std::string::npos) {
      const std::string tail = operand.substr(plus + 1, operand.find(']') - plus - 1);
      if (!ptx::is_integer_literal(tail)) return std::nullopt;
      displacement = ptx::integer_value(tail);
    }
    SharedPlace place;
    if (base.front() != '%') {
      if (!module.shared_symbols.count(base)) return std::nullopt;
      place.variable = base;
    } else {
      const auto it = place_of.find(base);
      if (it == place_of.end()) return std::nullopt;
      place = it->second;
    }
    place.offset += displacement;
    return place;
  };
  // What an address computation leaves in its destination register (see derives_address).
  const auto note_address = [&](const std::string& base_opcode, const std::vector<std::string>& ops) {
    std::optional<SharedPlace> from;
    bool other_register = false;
    long long constant = 0;
    for (std::size_t i = 1; i < ops.size(); ++i) {
      if (module.shared_symbols.count(ops[i]) && !from) from = SharedPlace{ops[i], 0, true};
      else if (const auto it = place_of.find(ops[i]); it != place_of.end() && !from) from = it->second;
      else if (ptx::is_integer_literal(ops[i])) constant += ptx::integer_value(ops[i]);
      else other_register = true;
    }
    for (const auto& reg : ptx::registers_in(ops[0])) place_of.erase(reg);
    if (!from || ops.empty()) return;
    SharedPlace place = *from;
    if (base_opcode == "add" && !other_register) place.offset += constant;
    else if (base_opcode != "mov" && base_opcode != "cvt" && base_opcode != "cvta") place.known = false;
    for (const auto& reg : ptx::registers_in(ops[0])) place_of[reg] = place;
  };
  std::vector<FlowEvent> events(function.body.size(), FlowEvent::none);
  // Instructions that read the launch error, or may (a call of another device function).
  std::vector<bool> error_checks(function.body.size(), false);

  for (const Instruction& ins : function.body) {
    const auto at = static_cast<std::size_t>(&ins - function.body.data());
    FlowEvent& event = events[at];
    const std::string base = opcode_base(ins.opcode);
    const auto& ops = ins.operands;
    // A register written by anything but an address computation points nowhere known any more.
    if (!ops.empty() && base != "st" && base != "red" && !derives_address(base) && ptx::address_base(ops[0]).empty())
      for (const auto& reg : ptx::registers_in(ops[0])) place_of.erase(reg);

    if (ins.opcode.rfind("st.param", 0) == 0 && ops.size() == 2) {
      const std::string name = ptx::address_base(ops[0]);
      const bool at_zero =
          ops[0].find('+') == std::string::npos || ops[0].find("+0]") != std::string::npos;
      if (!name.empty() && at_zero) params[name] = ops[1];
      continue;
    }
    if (ins.opcode.rfind("ld.param", 0) == 0 && ops.size() == 2) {
      const std::string address = ptx::address_base(ops[1]);
      if (pending_buffer != kNoBuffer && address.rfind("retval", 0) == 0) {
        for (const auto& reg : ptx::registers_in(ops[0])) buffer_of[reg] = pending_buffer;
        pending_buffer = kNoBuffer;
      }
      for (const auto& reg : ptx::registers_in(ops[0]))
        source_of[reg] = function.is_kernel && parameter_bit(address) ? "parameter " + address : std::string();
      continue;
    }
    if (base == "ld" && ops.size() == 2) {
      const auto place = shared_place(ops[1]);
      if (place) shared_loads.push_back({*place, at, ins.line, access_bytes(ins.opcode)});
      if (place || has_component(ins.opcode, "shared") ||
          (!has_component(ins.opcode, "global") && !has_component(ins.opcode, "local") &&
           !has_component(ins.opcode, "const") && (taint_of(ptx::address_base(ops[1])) & kShared)))
        shared_reads.push_back({place, ops[1], at, ins.line, access_bytes(ins.opcode), false, in_warp_own(ops[1])});
      const auto offset = frame.of(ops[1]);
      for (const auto& reg : ptx::registers_in(ops[0]))
        source_of[reg] = offset ? "frame " + std::to_string(*offset) + " #" + std::to_string(frame_writes[*offset])
                                : std::string();
      continue;
    }
    if (is_barrier(ins.opcode)) {
      event = has_component(ins.opcode, "warp") ? FlowEvent::warp_barrier : FlowEvent::barrier;
      // __syncwarp() orders a warp's own stores only: the block's other warps may still be storing.
      if (event == FlowEvent::barrier) {
        shared_store = 0;
        warp_guarded_store = 0;
        pending_warp_private = true;
        facts.block_barriers.push_back(ins.line);
      } else if (shared_store != 0 && pending_warp_private) {
        warp_guarded_store = shared_store;
        shared_store = 0;
      }
      continue;
    }
    if (base == "st" && ops.size() >= 2) {
      if (const auto buffer = buffer_in(ops[0])) {
        for (std::size_t i = 1; i < ops.size(); ++i) buffers[*buffer].taint |= taint_of(ops[i]);
        continue;
      }
      note_frame_write(ops[0]);
      const unsigned target = taint_of(ptx::address_base(ops[0]));
      const bool local = has_component(ins.opcode, "local") || (target & kLocal);
      const bool shared = has_component(ins.opcode, "shared") || (target & kShared);
      if (shared) {
        const auto place = shared_place(ops[0]);
        if (place && place->known) {
          publications.push_back({*place, at, ins.line, access_bytes(ins.opcode)});
          ++facts.shared_publications;
        } else {
          shared_writes.push_back({place, ops[0], at, ins.line, access_bytes(ins.opcode), false, in_warp_own(ops[0])});
        }
        shared_store = ins.line;
        pending_warp_private = pending_warp_private && in_warp_own(ops[0]);
      }
      if (!local) event = FlowEvent::store;
      continue;
    }
    if (base == "mov" && ops.size() == 2) {  // a copy keeps the source of what it copies
      const auto it = source_of.find(ops[1]);
      for (const auto& reg : ptx::registers_in(ops[0]))
        source_of[reg] = it != source_of.end() ? it->second : std::string();
    }
    if (derives_address(base) && ops.size() >= 2) note_address(base, ops);
    if (derives_address(base) && ops.size() >= 2) {
      for (std::size_t i = 1; i < ops.size(); ++i)
        if (const auto buffer = buffer_in(ops[i]))
          for (const auto& reg : ptx::registers_in(ops[0])) buffer_of[reg] = *buffer;
      continue;
    }
    if ((base == "atom" || base == "red") && !ops.empty()) {
      Atomic atomic{{ins.line, {}}, AddressSpace::generic, ins.opcode};
      std::string address;
      for (const auto& op : ops)
        if (!ptx::address_base(op).empty()) address = ptx::address_base(op);
      if (has_component(ins.opcode, "shared") || (taint_of(address) & kShared))
        atomic.space = AddressSpace::shared;
      else if (has_component(ins.opcode, "global"))
        atomic.space = AddressSpace::global;
      facts.atomics.push_back(atomic);
      if (atomic.space == AddressSpace::shared) {
        std::string operand;
        for (const auto& op : ops)
          if (!ptx::address_base(op).empty()) operand = op;
        shared_writes.push_back({shared_place(operand), operand, at, ins.line, access_bytes(ins.opcode), true,
                                 in_warp_own(address)});
      }
      event = FlowEvent::store;  // it writes memory too: a child must not read it unordered
      const bool warp_own = atomic.space == AddressSpace::shared && in_warp_own(address);
      if (atomic.space == AddressSpace::shared && shared_store != 0)
        facts.unguarded_shared_atomics.push_back({{ins.line, {}}, shared_store});
      else if (atomic.space == AddressSpace::shared && warp_guarded_store != 0 && !warp_own)
        facts.unguarded_shared_atomics.push_back({{ins.line, {}}, warp_guarded_store});
      // An atomic that sets a value rather than adds to it (atomicExch(&c, 0), atomicAnd(&c, 0),
      // atomicCAS) is a store as far as the atomics after it are concerned: zeroing counters
      // with atomics needs the barrier before counting all the same.
      if (atomic.space == AddressSpace::shared &&
          (has_component(ins.opcode, "exch") || has_component(ins.opcode, "cas") || has_component(ins.opcode, "and"))) {
        shared_store = ins.line;
        pending_warp_private = pending_warp_private && warp_own;
      }
      continue;
    }
    if (base != "call") continue;

    const ptx::CallOperands call = ptx::call_operands(ins);
    const std::string callee = without_suffix(call.callee, "_ptsz");
    auto argument = [&](std::size_t i) {
      if (i >= call.arguments.size()) return std::string();
      const auto it = params.find(call.arguments[i]);
      return it == params.end() ? std::string() : it->second;
    };
    pending_buffer = kNoBuffer;
    bool allocates = false;
    const std::string heap = heap_function(callee, allocates);

    if (callee == kGetBufferV2 || callee == kGetBuffer) {
      buffers.push_back({callee == kGetBufferV2 ? symbol(argument(0)) : std::string(), 0});
      pending_buffer = buffers.size() - 1;
    } else if (callee == kLaunchV2 || callee == kLaunch) {
      const bool v2 = callee == kLaunchV2;
      LaunchSite site;
      site.line = ins.line;
      const std::string stream = argument(v2 ? 1 : 5);
      site.stream = stream_kind(values.integer(stream));
      if (site.stream == StreamKind::named) {
        const auto it = source_of.find(stream);
        if (it != source_of.end()) site.stream_source = it->second;
      }
      event = FlowEvent::launch;
      if (const auto buffer = buffer_in(argument(v2 ? 0 : 1))) {
        site.child = buffers[*buffer].child;
        site.taint = buffers[*buffer].taint;
      }
      if (!v2) site.child = symbol(argument(0));
      facts.launches.push_back(site);
    } else if (callee == kStreamDestroy) {
      facts.stream_destructions.push_back({ins.line, {}});
    } else if (callee == kStreamCreate) {
      note_frame_write(argument(0));
      StreamCreation creation{{ins.line, {}}, std::nullopt};
      if (const auto flags = values.integer(argument(1)))
        creation.flags = static_cast<unsigned>(*flags);
      facts.stream_creations.push_back(creation);
    } else if (!heap.empty()) {
      (allocates ? facts.allocations : facts.deallocations).push_back({{ins.line, {}}, heap});
    } else if (callee == kGetLastError || callee == kPeekAtLastError) {
      error_checks[at] = true;
    } else if (const ptx::Function* target = module.find(callee); target && target->defined) {
      shared_store = 0;  // the function may hold a barrier: nothing certain
      warp_guarded_store = 0;
      pending_warp_private = true;
      event = FlowEvent::barrier;
      std::set<std::string> looked_at;
      if (!holds_barrier(module, *target, looked_at)) calls_without_barrier.push_back(at);
      std::set<std::string> visiting;  // a helper checks the error only if it reads it somewhere
      error_checks[at] = calls_error_reader(module, *target, visiting);
      facts.callees.push_back(target->name);
      CallSite call_site{target->name, {}};
      for (std::size_t i = 0; i < call.arguments.size(); ++i) call_site.argument_taint.push_back(taint_of(argument(i)));
      facts.calls.push_back(call_site);
    } else if (may_read_launch_error(callee)) {  // code outside this PTX, or a call through a pointer
      error_checks[at] = true;
    }
    params.clear();
  }
  const BarrierFlow flow = barrier_flow(function, events);
  for (const auto& site : flow.unguarded_launches)
    facts.unguarded_launches.push_back({{site.launch_line, {}}, site.store_line});
  if ((!publications.empty() && !shared_loads.empty()) || (!shared_writes.empty() && !shared_reads.empty())) {
    std::vector<FlowEvent> barriers_only = events;
    for (const std::size_t at : calls_without_barrier) barriers_only[at] = FlowEvent::none;
    const auto stretches = barrier_stretches(function, barriers_only);
    const auto& thread = flow.running_thread;
    std::set<int> flagged;  // the loads found unguarded, by line
    for (const SharedAccess& load : shared_loads) {
      for (const SharedAccess& store : publications) {
        // An exact place reads its bytes (a u64 read as two halves: either half), from anywhere in
        // the store's stretch. A place known only from below may read any byte from there on: only
        // a load after the store in the text counts then (an indexed read of a scan's storage
        // before thread 0 stores its total).
        const long long store_end = store.place.offset + store.bytes;
        const bool same_bytes =
            load.place.variable == store.place.variable &&
            (load.place.known ? load.place.offset < store_end && store.place.offset < load.place.offset + load.bytes
                              : store_end > load.place.offset && store.at < load.at);
        // Both in code one and the same thread runs: it reads what it wrote itself, in its order.
        const bool same_thread = thread[load.at] != kAnyThread && thread[load.at] == thread[store.at];
        if (same_bytes && !same_thread && share_a_stretch(stretches[load.at], stretches[store.at])) {
          facts.unguarded_shared_reads.push_back({{load.line, {}}, store.line});
          flagged.insert(load.line);
          break;
        }
      }
    }
    // The other writes: entries of a thread's own, counters many threads update. A __syncwarp()
    // ends a stretch only for what a warp writes and reads in entries of its own.
    std::vector<FlowEvent> warp_barriers = barriers_only;
    for (auto& event : warp_barriers)
      if (event == FlowEvent::warp_barrier) event = FlowEvent::barrier;
    const auto warp_stretches = barrier_stretches(function, warp_barriers);
    // A place known only from below is an entry of an array at a run-time index: the array is
    // taken to end where the next array indexed in the same variable begins (the members of a
    // struct in __shared__ memory: `s.staged[r]` and `s.run_start[q]`), or at the variable's end.
    std::map<std::string, std::set<long long>> array_starts;
    for (const auto* touches : {&shared_writes, &shared_reads})
      for (const SharedTouch& touch : *touches)
        if (touch.place && !touch.place->known) array_starts[touch.place->variable].insert(touch.place->offset);
    const auto end_of = [&](const SharedTouch& t) {
      if (t.place->known) return t.place->offset + t.bytes;
      const auto& starts = array_starts[t.place->variable];
      const auto next = starts.upper_bound(t.place->offset);
      return next == starts.end() ? std::numeric_limits<long long>::max() : *next;
    };
    // Whether two accesses may share a byte: the same variable (or one not known), and bytes that meet.
    const auto may_meet = [&](const SharedTouch& a, const SharedTouch& b) {
      if (!a.place || !b.place) return true;
      if (a.place->variable != b.place->variable) return false;
      return a.place->offset < end_of(b) && b.place->offset < end_of(a);
    };
    // A load at an address the loading thread itself stores to between the same barriers: its own
    // entry (an address the same in every thread is a publication, judged above).
    const auto own_entry = [&](const SharedTouch& load) {
      if (load.place && load.place->known) return false;
      for (const SharedTouch& write : shared_writes)
        if (!write.atomic && write.address == load.address && share_a_stretch(stretches[load.at], stretches[write.at]))
          return true;
      return false;
    };
    for (const SharedTouch& load : shared_reads) {
      if (flagged.count(load.line) || own_entry(load)) continue;
      for (const SharedTouch& write : shared_writes) {
        const bool same_thread = thread[load.at] != kAnyThread && thread[load.at] == thread[write.at];
        const bool warp_ordered = load.warp_own && write.warp_own &&
                                  !share_a_stretch(warp_stretches[load.at], warp_stretches[write.at]);
        if (may_meet(load, write) && !same_thread && !warp_ordered &&
            share_a_stretch(stretches[load.at], stretches[write.at])) {
          facts.unguarded_shared_reads.push_back({{load.line, {}}, write.line});
          flagged.insert(load.line);
          break;
        }
      }
    }
  }
  facts.counter_fences = counter_fences(function, module);
  facts.shared_overruns = shared_overruns(function, module);
  if (function.is_kernel) {
    std::vector<bool> launches(events.size());
    for (std::size_t i = 0; i < events.size(); ++i) launches[i] = events[i] == FlowEvent::launch;
    facts.unchecked_launches = unchecked_launches(function, launches, error_checks);
  }
  return facts;
}

Kernel make_kernel(const std::string& symbol, bool defined) {
  Kernel kernel;
  kernel.mangled = symbol;
  kernel.name = demangle(symbol);
  kernel.qualified_name = qualified_name(kernel.name);
  kernel.short_name = unqualified_name(kernel.qualified_name);
  kernel.defined = defined;
  return kernel;
}

std::string dot_quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

}  // namespace

const char* to_string(StreamKind kind) {
  switch (kind) {
    case StreamKind::null_stream:
      return "null";
    case StreamKind::tail:
      return "tail";
    case StreamKind::fire_and_forget:
      return "fire_and_forget";
    case StreamKind::named:
      return "named";
  }
  return "named";
}

std::optional<StreamKind> parse_stream_kind(std::string_view text) {
  for (StreamKind kind :
       {StreamKind::null_stream, StreamKind::tail, StreamKind::fire_and_forget, StreamKind::named})
    if (text == to_string(kind)) return kind;
  return std::nullopt;
}

std::string stream_phrase(StreamKind kind) {
  switch (kind) {
    case StreamKind::null_stream:
      return "the NULL stream";
    case StreamKind::tail:
      return "cudaStreamTailLaunch";
    case StreamKind::fire_and_forget:
      return "cudaStreamFireAndForget";
    case StreamKind::named:
      return "a named stream";
  }
  return "a named stream";
}

std::string flags_phrase(const std::optional<unsigned>& flags) {
  if (!flags) return "flags that are not a compile-time constant";
  if (*flags == kStreamNonBlocking) return "cudaStreamNonBlocking";
  if (*flags == 0) return "cudaStreamDefault";
  return "flags " + std::to_string(*flags);
}

void LaunchGraph::attach_source(const std::string& file_name, const std::string& text) {
  source_name = std::filesystem::path(file_name).filename().string();
  source_lines.clear();
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) source_lines.push_back(line);
}

bool LaunchGraph::is_exercise_file(int index) const {
  const auto found = files.find(index);
  if (found == files.end()) return false;
  const std::string name = std::filesystem::path(found->second).filename().string();
  if (!source_name.empty()) return name == source_name;
  return name.size() > 3 && name.compare(name.size() - 3, 3, ".cu") == 0;
}

int LaunchGraph::exercise_line(int ptx_line) const {
  const auto place = places.find(ptx_line);
  return place != places.end() && is_exercise_file(place->second.file) ? place->second.line : 0;
}

std::string LaunchGraph::where(const Site& site) const {
  const auto place = places.find(site.ptx_line);
  // The place in a file of the exercise's name: the instruction's own, or the call it was
  // inlined at (a kit macro or header function inlined into the student's code).
  auto file_name = [&](int index) {
    const auto found = files.find(index);
    return found == files.end() ? std::string() : std::filesystem::path(found->second).filename().string();
  };
  std::string text;
  if (place != places.end()) {
    const ptx::SourcePlace& p = place->second;
    int file = 0, line = 0;
    if (is_exercise_file(p.file)) file = p.file, line = p.line;
    else if (p.outer_file != 0 && is_exercise_file(p.outer_file)) file = p.outer_file, line = p.outer_line;
    if (line > 0) {
      text = file_name(file) + ":" + std::to_string(line);
      if (line <= static_cast<int>(source_lines.size())) {
        const std::string& raw = source_lines[static_cast<std::size_t>(line - 1)];
        const auto first = raw.find_first_not_of(" \t");
        std::string code = first == std::string::npos ? std::string() : raw.substr(first, raw.find_last_not_of(" \t\r") - first + 1);
        if (code.size() > 90) code = code.substr(0, 87) + "...";
        if (!code.empty()) text += ": `" + code + "`";
      }
    }
  }
  if (text.empty()) text = "PTX line " + std::to_string(site.ptx_line);
  if (!site.via.empty()) text += ", in " + site.via;
  return text;
}

bool Kernel::shared_atomics() const {
  for (const auto& atomic : atomics)
    if (atomic.space == AddressSpace::shared) return true;
  return false;
}

bool Kernel::matches(std::string_view written) const {
  return name_matches(written, mangled, qualified_name);
}

const Kernel* LaunchGraph::find(std::string_view name) const {
  for (const auto& kernel : kernels)
    if (kernel.matches(name)) return &kernel;
  return nullptr;
}

std::vector<std::size_t> LaunchGraph::find_all(std::string_view name) const {
  std::vector<std::size_t> found;
  for (std::size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i].matches(name)) found.push_back(i);
  return found;
}

std::vector<const Launch*> LaunchGraph::launches_from(std::size_t parent) const {
  std::vector<const Launch*> found;
  for (const auto& launch : launches)
    if (launch.parent == parent) found.push_back(&launch);
  return found;
}

std::vector<const Launch*> LaunchGraph::chain(std::size_t from, std::size_t to) const {
  if (from >= kernels.size() || to >= kernels.size()) return {};
  std::vector<const Launch*> reached_by(kernels.size(), nullptr);  // breadth-first tree
  std::deque<std::size_t> queue{from};
  while (!queue.empty()) {
    const std::size_t kernel = queue.front();
    queue.pop_front();
    for (const auto& launch : launches) {
      if (launch.parent != kernel || launch.child == Launch::unknown || reached_by[launch.child])
        continue;
      reached_by[launch.child] = &launch;
      if (launch.child == to) {
        std::vector<const Launch*> path;
        std::size_t at = to;
        do {
          path.insert(path.begin(), reached_by[at]);
          at = reached_by[at]->parent;
        } while (at != from);
        return path;
      }
      queue.push_back(launch.child);
    }
  }
  return {};
}

bool LaunchGraph::reaches(std::string_view from, std::string_view to) const {
  for (std::size_t f : find_all(from))
    for (std::size_t t : find_all(to))
      if (!chain(f, t).empty()) return true;
  return false;
}

std::string LaunchGraph::label(std::size_t kernel) const {
  if (kernel >= kernels.size()) return "an unknown kernel";
  const Kernel& named = kernels[kernel];
  for (const auto& other : kernels)
    if (&other != &named && other.short_name == named.short_name) return named.qualified_name;
  return named.short_name;
}

namespace {

// Replaces the parameter bits of `taint` with what the caller handed over in those parameters.
unsigned resolved(unsigned taint, const std::vector<unsigned>& parameters) {
  unsigned bits = taint & kPrivate;
  for (std::size_t i = 0; i < parameters.size() && i < kTrackedParameters; ++i)
    if (taint & (kFirstParameter << i)) bits |= parameters[i];
  return bits;
}

// For the kernel `kernel` and every device function it reaches: the private-address bits each
// launch site receives on some call path (one entry per FunctionFacts::launches). A function is
// walked again only when it is reached with parameters that carry bits not seen before.
std::map<std::string, std::vector<unsigned>> resolve_private_taint(const std::string& kernel,
                                                                   std::map<std::string, FunctionFacts>& facts) {
  std::map<std::string, std::vector<unsigned>> result;
  std::set<std::pair<std::string, std::vector<unsigned>>> walked;
  std::vector<std::pair<std::string, std::vector<unsigned>>> work{{kernel, {}}};
  while (!work.empty()) {
    auto [symbol, parameters] = work.back();
    work.pop_back();
    if (!walked.insert({symbol, parameters}).second) continue;
    const FunctionFacts& own = facts[symbol];
    auto& sites = result[symbol];
    sites.resize(own.launches.size(), 0);
    for (std::size_t i = 0; i < own.launches.size(); ++i) sites[i] |= resolved(own.launches[i].taint, parameters);
    for (const auto& call : own.calls) {
      std::vector<unsigned> handed;
      for (const unsigned taint : call.argument_taint) handed.push_back(resolved(taint, parameters));
      work.push_back({call.callee, handed});
    }
  }
  return result;
}

}  // namespace

LaunchGraph analyze_ptx(std::string_view text) {
  const ptx::Module module = ptx::read_module(text);
  // nvcc -G keeps every value in local memory and calls the launch API through wrapper functions;
  // the checker follows values through registers only, so it would report launches of unknown
  // kernels. Say so instead.
  if (module.target.find("debug") != std::string::npos)
    throw std::runtime_error(
        "the PTX was compiled for device debugging (nvcc -G, '.target " + module.target +
        "'); the rule checker reads optimized PTX: build the exercise without -G");

  std::map<std::string, FunctionFacts> facts;
  for (const auto& function : module.functions)
    if (function.defined) facts[function.name] = analyze_function(function, module);

  LaunchGraph graph;
  graph.files = module.files;
  graph.places = module.places;
  std::map<std::string, std::size_t> kernel_index;
  auto kernel_for = [&](const std::string& symbol, bool defined) {
    const auto [it, added] = kernel_index.emplace(symbol, graph.kernels.size());
    if (added) graph.kernels.push_back(make_kernel(symbol, defined));
    return it->second;
  };
  for (const auto& function : module.functions)
    if (function.is_kernel && function.defined) kernel_for(function.name, true);

  for (const auto& function : module.functions) {
    if (!function.is_kernel || !function.defined) continue;
    const std::size_t parent = kernel_index.at(function.name);
    const std::map<std::string, std::vector<unsigned>> private_taint = resolve_private_taint(function.name, facts);

    // The kernel's body and every device function it reaches through calls.
    std::vector<std::string> reached{function.name};
    std::set<std::string> seen{function.name};
    for (std::size_t i = 0; i < reached.size(); ++i)
      for (const auto& callee : facts[reached[i]].callees)
        if (seen.insert(callee).second) reached.push_back(callee);

    for (const auto& symbol : reached) {
      graph.kernels_reaching[symbol].push_back(parent);
      const FunctionFacts& own = facts[symbol];
      const std::string via = symbol == function.name ? std::string() : demangle(symbol);
      auto attributed = [&](auto item) {
        item.site.via = via;
        return item;
      };
      for (const auto& site : own.launches) {
        Launch launch;
        launch.parent = parent;
        if (!site.child.empty()) {
          const ptx::Function* child = module.find(site.child);
          launch.child = kernel_for(site.child, child && child->defined);
        }
        launch.stream = site.stream;
        launch.stream_source = site.stream_source;
        const unsigned taint = private_taint.at(symbol)[static_cast<std::size_t>(&site - own.launches.data())];
        launch.passes_local_address = (taint & kLocal) != 0;
        launch.passes_shared_address = (taint & kShared) != 0;
        launch.site = {site.line, via};
        launch.function = symbol;
        graph.launches.push_back(launch);
      }
      // after the launches: kernel_for() may have grown graph.kernels
      Kernel& kernel = graph.kernels[parent];
      for (const auto& c : own.stream_creations) kernel.stream_creations.push_back(attributed(c));
      for (const auto& d : own.stream_destructions) kernel.stream_destructions.push_back({d.ptx_line, via});
      for (const auto& a : own.allocations) kernel.allocations.push_back(attributed(a));
      for (const auto& d : own.deallocations) kernel.deallocations.push_back(attributed(d));
      for (const auto& a : own.atomics) kernel.atomics.push_back(attributed(a));
      for (const auto& u : own.unguarded_shared_atomics) kernel.unguarded_shared_atomics.push_back(attributed(u));
      for (const auto& u : own.unguarded_shared_reads) kernel.unguarded_shared_reads.push_back(attributed(u));
      kernel.shared_publications += own.shared_publications;
      for (const auto& u : own.unguarded_launches) kernel.unguarded_launches.push_back(attributed(u));
      for (const int line : own.unchecked_launches) kernel.unchecked_launches.push_back({line, via});
      kernel.counters += own.counter_fences.counters;
      for (const auto& u : own.counter_fences.unfenced)
        (u.gap == CounterGap::fence_before     ? kernel.unfenced_counters_before
         : u.gap == CounterGap::barrier_before ? kernel.unbarriered_counters
                                               : kernel.unfenced_counters_after)
            .push_back({{u.atomic_line, via}, u.access_line});
      for (const int line : own.block_barriers) kernel.block_barriers.push_back({line, via});
      for (const auto& o : own.shared_overruns)  // a function's static: its name in the source
        kernel.shared_overruns.push_back({{o.line, via}, unqualified_name(demangle(o.symbol)), o.offset, o.width, o.size});
    }
  }
  return graph;
}

std::string describe(const LaunchGraph& graph) {
  std::ostringstream out;
  out << "Kernels:";
  if (graph.kernels.empty()) out << " none";
  out << '\n';
  for (const auto& kernel : graph.kernels) {
    out << "  " << kernel.name;
    if (!kernel.defined) out << "  (launched; its code is not in this file)";
    out << '\n';
    for (const auto& c : kernel.stream_creations)
      out << "    creates a stream with " << flags_phrase(c.flags) << " (" << graph.where(c.site)
          << ")\n";
    for (const auto& a : kernel.allocations)
      out << "    allocates with " << a.function << " (" << graph.where(a.site) << ")\n";
    for (const auto& d : kernel.deallocations)
      out << "    frees with " << d.function << " (" << graph.where(d.site) << ")\n";
    for (const auto& a : kernel.atomics) {
      const char* space = a.space == AddressSpace::shared   ? "__shared__"
                          : a.space == AddressSpace::global ? "global"
                                                            : "generic";
      out << "    atomic on " << space << " memory: " << a.instruction << " (" << graph.where(a.site)
          << ")\n";
    }
  }
  out << "Launches:";
  if (graph.launches.empty()) out << " none";
  out << '\n';
  for (const auto& launch : graph.launches) {
    out << "  " << graph.label(launch.parent) << " -> " << graph.label(launch.child) << " into "
        << stream_phrase(launch.stream) << " (" << graph.where(launch.site) << ")";
    if (launch.passes_local_address) out << ": passes the address of a local variable";
    if (launch.passes_shared_address)
      out << (launch.passes_local_address ? " and" : ":")
          << " passes an address of __shared__ memory";
    out << '\n';
  }
  return out.str();
}

std::string to_dot(const LaunchGraph& graph) {
  std::ostringstream out;
  out << "digraph launch_graph {\n"
      << "  rankdir=LR;\n"
      << "  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=10];\n";
  bool unknown_child = false;
  for (std::size_t i = 0; i < graph.kernels.size(); ++i) {
    const Kernel& kernel = graph.kernels[i];
    std::string label = graph.label(i);
    std::vector<std::string> notes;
    if (kernel.creates_stream()) notes.push_back("creates streams");
    if (kernel.device_malloc()) notes.push_back("allocates");
    if (kernel.device_free()) notes.push_back("frees");
    if (kernel.shared_atomics()) notes.push_back("shared atomics");
    for (std::size_t n = 0; n < notes.size(); ++n) label += (n == 0 ? "\n" : ", ") + notes[n];
    out << "  k" << i << " [label=" << dot_quoted(label);
    if (!kernel.defined) out << ", style=\"rounded,dashed\"";
    out << "];\n";
  }
  for (const auto& launch : graph.launches) {
    std::string label = to_string(launch.stream);
    const bool bad = launch.passes_local_address || launch.passes_shared_address;
    if (launch.passes_local_address) label += "\nlocal address";
    if (launch.passes_shared_address) label += "\nshared address";
    out << "  k" << launch.parent << " -> ";
    if (launch.child == Launch::unknown) {
      out << "unknown";
      unknown_child = true;
    } else {
      out << 'k' << launch.child;
    }
    out << " [label=" << dot_quoted(label);
    if (bad) out << ", color=red, fontcolor=red";
    out << "];\n";
  }
  if (unknown_child) out << "  unknown [label=\"?\", shape=circle];\n";
  out << "}\n";
  return out.str();
}

}  // namespace cdplab::rules
