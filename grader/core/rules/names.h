/// @file names.h
/// @brief Kernel names as PTX spells them (mangled) and as people write them.
///
/// `_ZN6cdplab11fundamentals12expand_childEPfj` demangles to
/// `cdplab::fundamentals::expand_child(float*, unsigned int)`; its qualified name is
/// `cdplab::fundamentals::expand_child` and its unqualified name `expand_child`.
#pragma once

#include <string>
#include <string_view>

namespace cdplab::rules {

/// Demangles a PTX function symbol with the C++ ABI. A clone suffix that NVVM appends to
/// internal copies (`_Z6helperPi$11`) is dropped first. Names that are not mangled
/// (`extern "C"` kernels) come back unchanged.
std::string demangle(std::string_view symbol);

/// The qualified name of a demangled signature: no return type (function templates have one)
/// and no parameter list. `void lab::scan<int>(int*)` gives `lab::scan<int>`.
std::string qualified_name(std::string_view demangled);

/// The last component of a qualified name: `lab::scan<int>` gives `scan<int>`.
std::string unqualified_name(std::string_view qualified);

/// A PTX function symbol as the launch tree and the timeline name it: demangled, without its
/// namespaces and parameters (`_ZN3lab5childEPi` gives `child`); empty for an empty symbol.
std::string short_name(std::string_view symbol);

/// A name without a trailing template argument list: `scan<int>` gives `scan`.
std::string without_template_arguments(std::string_view name);

/// Whether a name written in a manifest designates a function. A name without `::` is compared
/// with the unqualified name; a name with `::` with the qualified name or its trailing
/// components (`inner::child` designates `lab::inner::child`; `::child` only a global `child`).
/// Template arguments may be left out (`tile` designates `tile<4>`). The mangled symbol itself
/// also matches.
bool name_matches(std::string_view written, std::string_view mangled, std::string_view qualified);

}  // namespace cdplab::rules
