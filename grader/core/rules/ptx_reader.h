/// @file ptx_reader.h
/// @brief Reads PTX text into functions and instructions: just enough structure for the CDP
///        rule checker (rules/launch_graph.h), not a PTX validator.
///
/// PTX is a sequence of statements ended by `;`, grouped by `{ }` blocks. Comments are dropped,
/// labels name the statement after them, and a few module directives (`.version`, `.target`,
/// `.address_size`, `.file`, `.loc`) end at the end of their line. Function definitions
/// (`.entry`, `.func`) become Function objects with their instructions in text order; nested
/// blocks (call sequences, scoped registers) are flattened into the function body. `.file` and
/// `.loc` (nvcc -lineinfo) are not instructions: they give each instruction its source place.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace cdplab::rules::ptx {

/// One instruction or in-function directive: `@%p1 st.u64 [%rd2+8], %rd3;` has guard `%p1`,
/// opcode `st.u64` and operands `[%rd2+8]` and `%rd3`.
struct Instruction {
  int line = 0;        ///< 1-based PTX line where the statement starts
  std::string guard;   ///< predicate guard without `@` (`%p1`, `!%p1`); empty if none
  std::string opcode;  ///< `st.u64`, `call.uni`, or a directive such as `.reg`
  std::vector<std::string> operands;  ///< split at top-level commas, all white space removed
  std::vector<std::string> labels;    ///< the labels that name this statement (`$L__BB0_2`)
};

/// A kernel (`.entry`) or device function (`.func`) of the module.
struct Function {
  std::string name;               ///< the symbol as written: `_Z6parentPii`, `_Z6helperPi$11`
  bool is_kernel = false;         ///< `.entry` (a kernel) rather than `.func`
  bool defined = false;           ///< has a body here (not only a declaration)
  int line = 0;                   ///< PTX line of its first header or declaration
  std::vector<Instruction> body;  ///< the body in text order (empty when not defined)
};

/// Where an instruction came from in the source (nvcc -lineinfo writes `.loc` directives): the
/// file index of a `.file` directive and the line; for code inlined from a function of another
/// file, also the place of the call it was inlined at.
struct SourcePlace {
  int file = 0;
  int line = 0;
  int outer_file = 0;  ///< `inlined_at`: the call's file, 0 when not inlined
  int outer_line = 0;
};

/// What the reader found in one PTX module.
struct Module {
  std::vector<Function> functions;       ///< in order of first appearance; one per symbol
  std::set<std::string> shared_symbols;  ///< variables declared `.shared` (any scope)
  /// The bytes of each `.shared` array declared with a size (`.b8 name[12]`, `.u32 name[3]`);
  /// dynamic shared memory (`name[]`) has none.
  std::map<std::string, std::size_t> shared_bytes;
  std::set<std::string> local_symbols;   ///< variables declared `.local` (stack depots)
  std::string version;                   ///< the `.version` directive's argument
  std::string target;                    ///< the `.target` directive's argument
  std::map<int, std::string> files;      ///< `.file` index -> the path the compiler wrote
  std::map<int, SourcePlace> places;     ///< PTX line of an instruction -> its `.loc` (-lineinfo)

  /// The function with this symbol, or nullptr.
  const Function* find(std::string_view symbol) const;
};

/// Reads a PTX module. Throws std::runtime_error when the text is not PTX (no `.version`
/// directive, unbalanced braces, a statement left unterminated, code outside any function).
Module read_module(std::string_view ptx);

/// The operands of a `call`: `call.uni (retval0), f, (param0, param1);`.
struct CallOperands {
  std::string callee;                  ///< `f`; a register for an indirect call
  std::vector<std::string> results;    ///< `retval0`
  std::vector<std::string> arguments;  ///< `param0`, `param1`
};

/// Splits the operands of a `call` instruction.
CallOperands call_operands(const Instruction& call);

/// The bytes of a PTX scalar type, with or without its dot: `u32` and `.f32` give 4, `.b8` 1;
/// 0 for anything else (`v4`, `shared`, `align`).
std::size_t type_bytes(std::string_view type);

/// The registers (`%name`) named in an operand: `[%rd2+8]` gives `%rd2`, `{%r1,%r2}` both.
std::vector<std::string> registers_in(std::string_view operand);

/// The name inside an address operand: `[%rd2+8]` gives `%rd2`, `[param0+0]` gives `param0`,
/// `[x]` gives `x`; empty when the operand is not an address.
std::string address_base(std::string_view operand);

/// The first component of a dotted opcode: `st` of `st.global.u32`.
std::string opcode_base(const std::string& opcode);

/// Whether a component of a dotted opcode is `part` or `part::scope` (`atom.shared::cta.add`
/// has `shared`).
bool has_component(const std::string& opcode, std::string_view part);

/// Where each label of the function's body sits: label -> index into `function.body`.
std::map<std::string, std::size_t> label_positions(const Function& function);

/// Where a `bra` at `function.body[i]` may go: its target's index, or every labelled instruction
/// when the target is not a label of the function (an indirect branch). Empty for anything else.
std::vector<std::size_t> branch_targets(const Function& function, std::size_t i,
                                        const std::map<std::string, std::size_t>& labels);

/// The registers an instruction writes: its first operand (both predicates of `setp`'s
/// `%p1|%p2`), unless it writes memory or nothing (`st`, `bra`, `call`, barriers, ...).
std::vector<std::string> written_registers(const Instruction& instruction);

/// Whether the instruction is a `bra`, `ret`, `exit` or `trap`, guarded or not.
bool transfers_control(const Instruction& instruction);

/// Whether control may go on to the next instruction: not after a `bra`, `ret`, `exit` or `trap`
/// that has no guard.
bool falls_through(const Instruction& instruction);

/// True when the operand is an integer literal (decimal, `0x` hex, optional sign).
bool is_integer_literal(std::string_view operand);

/// The value of an integer literal; requires is_integer_literal(operand).
long long integer_value(std::string_view operand);

/// True when the operand is a symbol name (not a register, literal, address or list).
bool is_symbol(std::string_view operand);

}  // namespace cdplab::rules::ptx
