/// @file launch_graph.h
/// @brief The launch graph of one exercise, rebuilt from the PTX nvcc emits for it
///        (`nvcc -ptx -rdc=true -arch=compute_90`): which kernel launches which, into which
///        stream, and the CDP-relevant things each kernel does.
///
/// How device code looks in PTX (CDP2, nvcc 13):
/// - `child<<<g, b, smem, s>>>(args)` is a call to `__cudaCDP2GetParameterBufferV2` whose first
///   parameter is the child's symbol; the arguments are stored into the buffer it returns; then
///   `__cudaCDP2LaunchDeviceV2(buffer, stream)` launches it. The stream is an immediate for the
///   special streams (0 NULL, 3 `cudaStreamTailLaunch`, 4 `cudaStreamFireAndForget`) or a
///   register for a stream the kernel created or was given.
/// - Device-side runtime calls are `__cudaCDP2StreamCreateWithFlags`, `__cudaCDP2Malloc`,
///   `__cudaCDP2Free`; device `malloc`/`free` keep their names.
/// - Addresses of local variables derive from the frame (`__local_depot`, `%SP`), addresses of
///   `__shared__` memory from `.shared` symbols (`cvta.shared`). The checker follows them
///   through register copies and arithmetic, and into the parameters of the device functions
///   a kernel calls, and flags a launch whose parameter buffer receives one.
///
/// What happens in a device function (`.func`) is attributed to every kernel that calls it,
/// directly or through other device functions.
#pragma once

#include "rules/ptx_reader.h"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cdplab::rules {

/// The stream a device-side launch goes into.
enum class StreamKind {
  null_stream,      ///< the NULL (default) stream: launches of a block run one after another
  tail,             ///< `cudaStreamTailLaunch`: runs after the parent grid and all its work
  fire_and_forget,  ///< `cudaStreamFireAndForget`: runs at once, independent of the parent
  named,            ///< a stream held in a variable: created in device code or passed in
};

/// The manifest spelling: `null`, `tail`, `fire_and_forget`, `named`.
const char* to_string(StreamKind kind);

/// The manifest spelling back to the kind; nullopt for anything else.
std::optional<StreamKind> parse_stream_kind(std::string_view text);

/// In words, for messages: "the NULL stream", "cudaStreamTailLaunch", ...
std::string stream_phrase(StreamKind kind);

/// The flags of a device-side stream creation in words: "cudaStreamNonBlocking",
/// "cudaStreamDefault", "flags 6", or "flags that are not a compile-time constant".
std::string flags_phrase(const std::optional<unsigned>& flags);

/// The memory an atomic instruction works on.
enum class AddressSpace { shared, global, generic };

/// Where something happens in the PTX.
struct Site {
  int ptx_line = 0;  ///< 1-based line of the PTX text
  std::string via;   ///< the device function it is in (demangled); empty: the kernel's own body
};

/// A `cudaStreamCreateWithFlags` in device code.
struct StreamCreation {
  Site site;
  std::optional<unsigned> flags;  ///< the flags argument; nullopt when not a constant
};

/// A device-heap call: `cudaMalloc`, `malloc`, `cudaFree` or `free` (nvcc compiles device
/// `new` and `delete` to `malloc` and `free`).
struct HeapCall {
  Site site;
  std::string function;  ///< as the student wrote it: "cudaMalloc", "malloc", "cudaFree", "free"
};

/// An atomic (`atom`) or reduction (`red`) instruction.
struct Atomic {
  Site site;
  /// `shared` also for a generic instruction on an address known to be shared
  AddressSpace space = AddressSpace::generic;
  std::string instruction;  ///< the opcode: "atom.shared.add.u32"
};

/// An instruction left unguarded by a barrier: a shared-memory atomic, or a launch, that a store
/// to memory reaches with no block barrier (`__syncthreads()`, `bar.sync`) or warp barrier
/// (`__syncwarp()`) in between. For atomics the stores are those before it in the text of one
/// function's body; for launches they are followed along the control flow, without the
/// launching thread's own (barrier_flow.h). A call of another device function counts as a
/// barrier (it may hold one), so only what is certain is reported.
struct Unguarded {
  Site site;       ///< the atomic or the launch
  int store_line;  ///< the store it follows, PTX line
};

/// An access past the end of a `__shared__` array: where, and what it touched.
struct SharedOverrunSite {
  Site site;
  std::string array;        ///< the array's name in the source (`cursors`)
  std::size_t offset = 0;   ///< the access's first byte
  std::size_t width = 0;    ///< the bytes it moves
  std::size_t size = 0;     ///< the bytes the array was declared with
};

/// A kernel of the exercise, or a kernel it launches that is only declared there.
struct Kernel {
  std::string mangled;         ///< the PTX symbol: "_ZN3lab5childEPii"
  std::string name;            ///< demangled: "lab::child(int*, int)"
  std::string qualified_name;  ///< "lab::child"
  std::string short_name;      ///< unqualified: "child"
  bool defined = true;         ///< false for a launched kernel whose code is not in this PTX
  std::vector<StreamCreation> stream_creations;
  std::vector<Site> stream_destructions;  ///< device `cudaStreamDestroy`
  std::vector<HeapCall> allocations;    ///< device `cudaMalloc` / `malloc`
  std::vector<HeapCall> deallocations;  ///< device `cudaFree` / `free`
  std::vector<Atomic> atomics;
  /// Shared-memory atomics after a store to shared memory with no barrier in between.
  std::vector<Unguarded> unguarded_shared_atomics;
  /// Loads of __shared__ memory that may read what another thread wrote between the same two block
  /// barriers: a value one thread publishes for the block (a store at the same address in every
  /// thread), another thread's entry, a counter the block's atomics update. A load of an entry the
  /// loading thread itself writes there is not one, nor one a __syncwarp() orders after a write,
  /// both in entries of the warp's own (made from threadIdx.x / 32).
  std::vector<Unguarded> unguarded_shared_reads;
  int shared_publications = 0;  ///< such stores (the kernel stages values in __shared__ memory)
  /// Launches that another thread's store to global or shared memory (or atomic) reaches with no
  /// barrier in between: the child sees the launching thread's own writes, not the others'.
  std::vector<Unguarded> unguarded_launches;
  /// Global counters of a last-block pattern (counter_fences.h) seen, and their sides without
  /// a fence: `store_line` is the write before (release side) or the read after the atomic.
  int counters = 0;
  std::vector<Unguarded> unfenced_counters_before;   ///< no fence between a write and the atomic
  std::vector<Unguarded> unbarriered_counters;       ///< no block barrier between them
  std::vector<Unguarded> unfenced_counters_after;
  /// Accesses at a constant offset past the end of a sized `__shared__` array (shared_bounds.h).
  std::vector<SharedOverrunSite> shared_overruns;
  /// Block barriers (`__syncthreads()`: `bar.sync`, `barrier.sync`, `bar.red`), the library's
  /// inlined ones included.
  std::vector<Site> block_barriers;
  /// Launches from which the kernel may end with no `cudaGetLastError()` (or
  /// `cudaPeekAtLastError()`) after them, as `CDPLAB_CHECK_LAUNCH()` makes (launch_check_flow.h).
  std::vector<Site> unchecked_launches;

  bool creates_stream() const { return !stream_creations.empty(); }
  bool device_malloc() const { return !allocations.empty(); }
  bool device_free() const { return !deallocations.empty(); }
  bool shared_atomics() const;  ///< some atomic works on `__shared__` memory
  /// Whether a manifest's kernel name designates this kernel (see name_matches()).
  bool matches(std::string_view written) const;
};

/// One device-side launch, from a kernel (the launch may sit in a device function it calls).
struct Launch {
  static constexpr std::size_t unknown = static_cast<std::size_t>(-1);

  std::size_t parent = 0;       ///< index into LaunchGraph::kernels
  std::size_t child = unknown;  ///< index into LaunchGraph::kernels; unknown for a function pointer
  StreamKind stream = StreamKind::null_stream;
  bool passes_local_address = false;   ///< a parameter holds an address of a local variable
  bool passes_shared_address = false;  ///< a parameter holds an address of `__shared__` memory
  /// For a named stream: where its handle was read, when the checker can tell ("frame 8 #1": the
  /// local variable at offset 8 as written by its first creation; "parameter <name>": a kernel
  /// parameter); empty otherwise. Two launches with the same non-empty source use one stream.
  std::string stream_source;
  Site site;                           ///< the `__cudaCDP2LaunchDevice*` call
  /// The PTX symbol of the function the launch is written in: the parent kernel's own, or the
  /// device function's (Site::via) that the parent reaches; the caller the grader's hooks name.
  std::string function;
};

/// The kernels of one exercise and the launches between them.
struct LaunchGraph {
  std::vector<Kernel> kernels;   ///< in order of appearance in the PTX
  std::vector<Launch> launches;  ///< in order of appearance, per parent kernel
  /// For each function of the PTX some kernel reaches through direct calls (mangled symbol), the
  /// kernels that reach it (indices into `kernels`); a kernel reaches its own body. A launch
  /// written in a device function is made for every kernel listed here.
  std::map<std::string, std::vector<std::size_t>> kernels_reaching;
  std::map<int, std::string> files;       ///< the PTX's `.file` paths (nvcc -lineinfo)
  std::map<int, ptx::SourcePlace> places;  ///< PTX line -> source place (`.loc`)
  std::string source_name;                 ///< the exercise file's name, once attach_source() ran
  std::vector<std::string> source_lines;   ///< its text, line by line

  /// Names the file the PTX was compiled from (its base name is what the PTX's `.file` paths are
  /// matched by) and its text, so that where() can quote the line of a finding.
  void attach_source(const std::string& file_name, const std::string& text);
  /// Where a site is, for a student: "child_grids.cu:48: `expand_child<<<...>>>(...);`", the
  /// exercise file's line (of the call a helper was inlined at, if need be) and its text, when the
  /// PTX has line information; "PTX line 123" otherwise. ", in helper(int*)" for a device function.
  std::string where(const Site& site) const;
  /// where() of a bare PTX line.
  std::string where(int ptx_line) const { return where(Site{ptx_line, {}}); }
  /// The line of the exercise file an instruction itself was written on (a `__syncthreads()` in
  /// the student's code, not one of a library function inlined there); 0 when it comes from
  /// another file or the PTX has no line information.
  int exercise_line(int ptx_line) const;
  /// Whether the PTX's file number `index` is the exercise file (by the name attach_source()
  /// gave; before it, any .cu file).
  bool is_exercise_file(int index) const;

  /// The first kernel a manifest name designates, or nullptr.
  const Kernel* find(std::string_view name) const;
  /// Indices of every kernel the name designates (overloads, templates).
  std::vector<std::size_t> find_all(std::string_view name) const;
  /// The launches whose parent is kernel `parent`.
  std::vector<const Launch*> launches_from(std::size_t parent) const;
  /// A shortest chain of launches from kernel `from` to kernel `to` (at least one launch, so
  /// `from == to` asks for a cycle); empty when there is none.
  std::vector<const Launch*> chain(std::size_t from, std::size_t to) const;
  /// Whether some kernel named `from` launches some kernel named `to`, directly or through
  /// other kernels. `reaches(k, k)` means k is recursive.
  bool reaches(std::string_view from, std::string_view to) const;
  /// The name used in messages: the unqualified name, or the qualified one when another kernel
  /// has the same unqualified name; "an unknown kernel" for Launch::unknown.
  std::string label(std::size_t kernel) const;
};

/// Builds the launch graph of a PTX module. Throws std::runtime_error when the text is not PTX,
/// or is PTX compiled for device debugging (`nvcc -G`), which the checker cannot follow.
LaunchGraph analyze_ptx(std::string_view ptx);

/// A readable listing: the kernels with what they do, and the launches with their streams.
std::string describe(const LaunchGraph& graph);

/// The graph in Graphviz DOT: kernels as nodes, launches as edges labelled by their stream;
/// launches that hand a child a local or shared address are drawn red.
std::string to_dot(const LaunchGraph& graph);

}  // namespace cdplab::rules
