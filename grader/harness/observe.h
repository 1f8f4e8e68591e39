/// @file observe.h
/// @brief Observed steps: how a check is judged outside the process that runs the student's code.
///
/// A check wraps every step whose result depends on the GPU or on the exercise (a call of an
/// exercise's entry point, a device allocation or copy, a read-back of a device limit) in
/// observed("label", [&] { ...; return value; }). The check's inputs come from check_rng(), its
/// verdicts from the CPU oracles, and nothing else it does touches the GPU. The process then runs
/// in one of three modes, chosen once from its environment (observe_mode()):
///
///  - direct (neither variable below set; `cdplab check`): observed() calls the step and returns
///    its value. The process judges its own checks, as it always did.
///  - record (CDPLAB_OBSERVATIONS_DIR=<dir>; the student's process during `cdplab grade`, the
///    "runner"): observed() calls the step and writes its value, or the exception it threw, into
///    the running check's observation file, then returns the value or throws the exception again.
///    The runner still writes its results log, but nothing in it can pass a check: the grader
///    reads it only for why a check was stopped or skipped.
///  - judge (CDPLAB_JUDGE_DIR=<dir>; a process of the grader's own, with no student code and no
///    GPU: the suite's checks linked against the reference solutions): observed() never calls the
///    step. It reads the running check's next record, makes sure its label is `what`, and returns
///    the recorded value or throws an equivalent exception. The check regenerates its inputs from
///    the seed and judges the recorded results with the CPU oracles, exactly as the runner would
///    have. Where the record is missing or ends before a step (the runner crashed, hung, skipped
///    or never ran the check), the check ends "unobserved" (results_log.h), never passed; where
///    the record does not match the check's steps, or is corrupt, the check fails. The grader
///    runs it with CUDA_VISIBLE_DEVICES empty, so that a CUDA call left outside a step fails; a
///    speed check's reference alone gets the GPU back, in a child process (CDPLAB_JUDGE_GPUS,
///    speed.h).
///
/// Observation files: one per check run, `<dir>/<suite, '/' as '.'>/<16 hex digits>.obs`, the
/// digits the FNV-1a 64 hash of the check's name (observation_path()). The runner truncates it as
/// the check starts, so a later run of the same check replaces an earlier one. Layout (integers
/// in the host's byte order; a string is its u64 length and its bytes):
///
///     header  "CDPLOBS1" (8 bytes), u32 format version (kFormatVersion), u32 flags (bit 0: run
///             under compute-sanitizer), u64 seed, string suite, string check, string device
///     records u8 kind (RecordKind), string label, u64 payload length, payload
///
/// The last record of a check that finished is RecordKind::end (empty label and payload): a file
/// without it means the runner stopped during the check. A value's payload is its encoding by
/// Codec; an exception's is its message and codes. Reading checks every length against what is
/// left of the file (and kMaxRecordBytes) before it allocates anything.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace cdplab::harness {

/// How observed() treats a step in this process (see the file's comment).
enum class ObserveMode { direct, record, judge };

/// This process's mode, from CDPLAB_JUDGE_DIR and CDPLAB_OBSERVATIONS_DIR (read once; the judge's
/// variable wins when both are set).
ObserveMode observe_mode();

/// The folder of this process's observation files; empty in direct mode.
const std::string& observe_dir();

namespace observe {

// ----- the codec ------------------------------------------------------------------------

/// A payload that does not decode as the type the check expects.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Appends the bytes of values to a payload.
class Encoder {
 public:
  void bytes(const void* data, std::size_t size) { out_.append(static_cast<const char*>(data), size); }
  void u64(std::uint64_t value) { bytes(&value, sizeof value); }
  std::string& buffer() { return out_; }

 private:
  std::string out_;
};

/// Reads values back from a payload; throws DecodeError rather than reading past its end.
class Decoder {
 public:
  Decoder(const char* data, std::size_t size) : at_(data), left_(size) {}
  void bytes(void* out, std::size_t size) {
    if (size > left_) throw DecodeError("the recorded value ends too soon");
    if (size > 0) std::memcpy(out, at_, size);
    at_ += size;
    left_ -= size;
  }
  std::uint64_t u64() {
    std::uint64_t value = 0;
    bytes(&value, sizeof value);
    return value;
  }
  /// A count of elements that take at least `min_bytes` each: never more than what is left can hold.
  std::size_t count(std::size_t min_bytes) {
    const std::uint64_t n = u64();
    if (n > left_ / (min_bytes == 0 ? 1 : min_bytes)) throw DecodeError("a recorded length exceeds the record");
    return static_cast<std::size_t>(n);
  }
  std::size_t left() const { return left_; }

 private:
  const char* at_;
  std::size_t left_;
};

/// How values of type T are written into and read from a payload. The primary template covers
/// arithmetic types, enums, pointers (their value, never what they point to), std::string,
/// std::vector, std::array, std::pair, std::tuple, std::optional, trivially copyable structs (as
/// their bytes: floats round-trip bit for bit) and aggregates of up to 16 fields (field by field,
/// with structured bindings: structs with std::vector members, say). Specialise it for a type
/// that is none of these: `static void encode(Encoder&, const T&)`, `static void decode(Decoder&,
/// T&)` and `static constexpr std::size_t min_bytes()` (the fewest bytes a value takes, which
/// bounds the lengths a decoder accepts).
template <class T, class Enable = void>
struct Codec;

namespace detail {

template <class T, template <class...> class Template>
struct is_instance : std::false_type {};
template <template <class...> class Template, class... Args>
struct is_instance<Template<Args...>, Template> : std::true_type {};

template <class T>
struct is_std_array : std::false_type {};
template <class U, std::size_t N>
struct is_std_array<std::array<U, N>> : std::true_type {};

/// Converts to any field type: counts an aggregate's fields by brace initialisation.
struct AnyField {
  template <class U>
  operator U() const;  // never defined: used in unevaluated contexts only
};
template <std::size_t>
using any_field = AnyField;

template <class T, class Indices, class = void>
struct brace_constructible : std::false_type {};
template <class T, std::size_t... I>
struct brace_constructible<T, std::index_sequence<I...>, std::void_t<decltype(T{any_field<I>{}...})>>
    : std::true_type {};

template <class T, std::size_t N = 16>
constexpr std::size_t field_count() {
  if constexpr (N == 0) {
    return 0;
  } else if constexpr (brace_constructible<T, std::make_index_sequence<N>>::value) {
    return N;
  } else {
    return field_count<T, N - 1>();
  }
}

/// std::tie of an aggregate's fields (const or not, as `value` is).
template <class T>
auto fields_of(T& value) {
  constexpr std::size_t n = field_count<std::remove_const_t<T>>();
  static_assert(n >= 1 && n <= 16,
                "observed(): a type with no fields or more than 16 needs a Codec specialisation");
  // clang-format off
  if constexpr (n == 1) { auto& [a] = value; return std::tie(a); }
  else if constexpr (n == 2) { auto& [a, b] = value; return std::tie(a, b); }
  else if constexpr (n == 3) { auto& [a, b, c] = value; return std::tie(a, b, c); }
  else if constexpr (n == 4) { auto& [a, b, c, d] = value; return std::tie(a, b, c, d); }
  else if constexpr (n == 5) { auto& [a, b, c, d, e] = value; return std::tie(a, b, c, d, e); }
  else if constexpr (n == 6) { auto& [a, b, c, d, e, f] = value; return std::tie(a, b, c, d, e, f); }
  else if constexpr (n == 7) { auto& [a, b, c, d, e, f, g] = value; return std::tie(a, b, c, d, e, f, g); }
  else if constexpr (n == 8) { auto& [a, b, c, d, e, f, g, h] = value; return std::tie(a, b, c, d, e, f, g, h); }
  else if constexpr (n == 9) { auto& [a, b, c, d, e, f, g, h, i] = value; return std::tie(a, b, c, d, e, f, g, h, i); }
  else if constexpr (n == 10) { auto& [a, b, c, d, e, f, g, h, i, j] = value; return std::tie(a, b, c, d, e, f, g, h, i, j); }
  else if constexpr (n == 11) { auto& [a, b, c, d, e, f, g, h, i, j, k] = value; return std::tie(a, b, c, d, e, f, g, h, i, j, k); }
  else if constexpr (n == 12) { auto& [a, b, c, d, e, f, g, h, i, j, k, l] = value; return std::tie(a, b, c, d, e, f, g, h, i, j, k, l); }
  else if constexpr (n == 13) { auto& [a, b, c, d, e, f, g, h, i, j, k, l, m] = value; return std::tie(a, b, c, d, e, f, g, h, i, j, k, l, m); }
  else if constexpr (n == 14) { auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o] = value; return std::tie(a, b, c, d, e, f, g, h, i, j, k, l, m, o); }
  else if constexpr (n == 15) { auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o, p] = value; return std::tie(a, b, c, d, e, f, g, h, i, j, k, l, m, o, p); }
  else { auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o, p, q] = value; return std::tie(a, b, c, d, e, f, g, h, i, j, k, l, m, o, p, q); }
  // clang-format on
}

template <class Tuple, std::size_t... I>
constexpr std::size_t min_bytes_of_elements(std::index_sequence<I...>) {
  return (std::size_t{0} + ... + Codec<std::remove_cv_t<std::remove_reference_t<std::tuple_element_t<I, Tuple>>>>::min_bytes());
}
template <class Tuple>
constexpr std::size_t min_bytes_of_tuple() {
  return min_bytes_of_elements<Tuple>(std::make_index_sequence<std::tuple_size_v<Tuple>>{});
}

template <class T>
constexpr bool dependent_false = false;

}  // namespace detail

template <class T, class Enable>
struct Codec {
  static_assert(!std::is_reference_v<T> && !std::is_const_v<T>, "Codec of a plain type");

  static void encode(Encoder& out, const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      const unsigned char byte = value ? 1 : 0;
      out.bytes(&byte, 1);
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_pointer_v<T>) {
      out.bytes(&value, sizeof value);
    } else if constexpr (std::is_same_v<T, std::string>) {
      out.u64(value.size());
      out.bytes(value.data(), value.size());
    } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
      out.u64(value.size());
      for (const bool element : value) Codec<bool>::encode(out, element);
    } else if constexpr (detail::is_instance<T, std::vector>::value) {
      using U = typename T::value_type;
      out.u64(value.size());
      if constexpr (raw<U>()) {
        out.bytes(value.data(), value.size() * sizeof(U));
      } else {
        for (const U& element : value) Codec<U>::encode(out, element);
      }
    } else if constexpr (detail::is_std_array<T>::value) {
      using U = typename T::value_type;
      for (const U& element : value) Codec<U>::encode(out, element);
    } else if constexpr (detail::is_instance<T, std::pair>::value) {
      Codec<typename T::first_type>::encode(out, value.first);
      Codec<typename T::second_type>::encode(out, value.second);
    } else if constexpr (detail::is_instance<T, std::tuple>::value) {
      std::apply([&](const auto&... element) { (encode_one(out, element), ...); }, value);
    } else if constexpr (detail::is_instance<T, std::optional>::value) {
      Codec<bool>::encode(out, value.has_value());
      if (value) Codec<typename T::value_type>::encode(out, *value);
    } else if constexpr (std::is_trivially_copyable_v<T> && std::is_class_v<T>) {
      out.bytes(&value, sizeof value);
    } else if constexpr (std::is_aggregate_v<T>) {
      std::apply([&](const auto&... field) { (encode_one(out, field), ...); }, detail::fields_of(value));
    } else {
      static_assert(detail::dependent_false<T>,
                    "observed(): this type has no generic encoding; specialise cdplab::harness::observe::Codec");
    }
  }

  static void decode(Decoder& in, T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      unsigned char byte = 0;
      in.bytes(&byte, 1);
      if (byte > 1) throw DecodeError("a recorded bool is neither 0 nor 1");
      value = byte == 1;
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_pointer_v<T>) {
      in.bytes(&value, sizeof value);
    } else if constexpr (std::is_same_v<T, std::string>) {
      value.resize(in.count(1));
      in.bytes(value.data(), value.size());
    } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
      value.assign(in.count(1), false);
      for (std::size_t i = 0; i < value.size(); ++i) {
        bool element = false;
        Codec<bool>::decode(in, element);
        value[i] = element;
      }
    } else if constexpr (detail::is_instance<T, std::vector>::value) {
      using U = typename T::value_type;
      value.clear();
      value.resize(in.count(Codec<U>::min_bytes()));
      if constexpr (raw<U>()) {
        in.bytes(value.data(), value.size() * sizeof(U));
      } else {
        for (U& element : value) Codec<U>::decode(in, element);
      }
    } else if constexpr (detail::is_std_array<T>::value) {
      for (auto& element : value) Codec<typename T::value_type>::decode(in, element);
    } else if constexpr (detail::is_instance<T, std::pair>::value) {
      Codec<std::remove_const_t<typename T::first_type>>::decode(in, value.first);
      Codec<typename T::second_type>::decode(in, value.second);
    } else if constexpr (detail::is_instance<T, std::tuple>::value) {
      std::apply([&](auto&... element) { (decode_one(in, element), ...); }, value);
    } else if constexpr (detail::is_instance<T, std::optional>::value) {
      bool present = false;
      Codec<bool>::decode(in, present);
      value.reset();
      if (present) Codec<typename T::value_type>::decode(in, value.emplace());
    } else if constexpr (std::is_trivially_copyable_v<T> && std::is_class_v<T>) {
      in.bytes(&value, sizeof value);
    } else if constexpr (std::is_aggregate_v<T>) {
      std::apply([&](auto&... field) { (decode_one(in, field), ...); }, detail::fields_of(value));
    } else {
      static_assert(detail::dependent_false<T>,
                    "observed(): this type has no generic encoding; specialise cdplab::harness::observe::Codec");
    }
  }

  /// The fewest bytes a value of T takes.
  static constexpr std::size_t min_bytes() {
    if constexpr (std::is_same_v<T, bool>) {
      return 1;
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_pointer_v<T>) {
      return sizeof(T);
    } else if constexpr (std::is_same_v<T, std::string> || detail::is_instance<T, std::vector>::value) {
      return sizeof(std::uint64_t);
    } else if constexpr (detail::is_std_array<T>::value) {
      return std::tuple_size_v<T> * Codec<typename T::value_type>::min_bytes();
    } else if constexpr (detail::is_instance<T, std::pair>::value) {
      return Codec<std::remove_const_t<typename T::first_type>>::min_bytes() +
             Codec<typename T::second_type>::min_bytes();
    } else if constexpr (detail::is_instance<T, std::tuple>::value) {
      return detail::min_bytes_of_tuple<T>();
    } else if constexpr (detail::is_instance<T, std::optional>::value) {
      return 1;
    } else if constexpr (std::is_trivially_copyable_v<T> && std::is_class_v<T>) {
      return sizeof(T);
    } else if constexpr (std::is_aggregate_v<T>) {
      return detail::min_bytes_of_tuple<decltype(detail::fields_of(std::declval<T&>()))>();
    } else {
      return 1;
    }
  }

 private:
  /// Whether a vector of U travels as one block of bytes.
  template <class U>
  static constexpr bool raw() {
    return !std::is_same_v<U, bool> && std::is_trivially_copyable_v<U> && !detail::is_instance<U, std::pair>::value &&
           !detail::is_instance<U, std::tuple>::value && !detail::is_instance<U, std::optional>::value &&
           !detail::is_std_array<U>::value;
  }
  template <class U>
  static void encode_one(Encoder& out, const U& element) {
    Codec<std::remove_cv_t<U>>::encode(out, element);
  }
  template <class U>
  static void decode_one(Decoder& in, U& element) {
    Codec<std::remove_cv_t<U>>::decode(in, element);
  }
};

/// The payload of `value`.
template <class T>
std::string encode(const T& value) {
  Encoder out;
  Codec<T>::encode(out, value);
  return std::move(out.buffer());
}

/// The value a payload holds; throws DecodeError when it holds no T, or more than one.
template <class T>
T decode(const std::string& payload) {
  static_assert(std::is_default_constructible_v<T>, "observed(): a recorded value is decoded into a T{}");
  Decoder in(payload.data(), payload.size());
  T value{};
  Codec<T>::decode(in, value);
  if (in.left() != 0) throw DecodeError("the recorded value is longer than its type");
  return value;
}

// ----- the observation files --------------------------------------------------------------

/// The format version the header carries.
constexpr std::uint32_t kFormatVersion = 1;
/// The longest label or header string accepted, and the largest payload (the largest legitimate
/// one, a chapter 01 pipeline of 2^24 + 1 values, is about 270 MB).
constexpr std::size_t kMaxLabelBytes = 4096;
constexpr std::uint64_t kMaxRecordBytes = std::uint64_t{1} << 30;

/// What a record holds: a value, the end of the check, or an exception of one of these kinds.
enum class RecordKind : std::uint8_t {
  value = 1,
  end = 2,
  not_implemented = 10,      ///< cdplab::NotImplemented: message
  cuda_error = 11,           ///< cdplab::CudaError: i32 code, message
  device_launch_error = 12,  ///< cdplab::DeviceLaunchError: i32 code, i32 failures, message
  invalid_argument = 13,     ///< std::invalid_argument: message
  out_of_range = 14,         ///< std::out_of_range: message
  runtime_error = 15,        ///< std::runtime_error or any other std::exception: message
  unknown = 16,              ///< anything else: no payload
};

/// The 64-bit FNV-1a hash of `text`.
std::uint64_t fnv1a64(std::string_view text);

/// The observation file of check `check` of suite `suite` under `dir` (see the file's comment).
std::string observation_path(const std::string& dir, const std::string& suite, const std::string& check);

/// An exception as a record: its kind and payload.
std::pair<RecordKind, std::string> encode_exception(std::exception_ptr error);

/// Throws the exception a record of kind `kind` holds (std::runtime_error when it does not decode).
[[noreturn]] void rethrow_recorded(RecordKind kind, const std::string& payload);

/// Ends a check in judge mode: the record does not match the check's steps or is corrupt (the
/// check fails), or it is missing or ends early (the check is "unobserved"). Not a
/// std::exception, so that a check's `catch (const std::exception&)` does not take it for an
/// error of the code under test; the harness reports it (results_log.cpp).
struct ObservationProblem {
  bool unobserved = false;
  std::string message;
};

/// Who the running check is, for its observation file's header.
struct CheckIdentity {
  std::string suite;
  std::string check;
  std::uint64_t seed = 0;
  std::string device;            ///< record: the GPU the runner uses
  bool under_sanitizer = false;  ///< CDPLAB_UNDER_SANITIZER=1: the inputs are smaller
};

/// How a check's observations ended (end_check()).
struct CheckOutcome {
  enum class Kind { complete, failed, unobserved };
  Kind kind = Kind::complete;
  std::string message;   ///< failed: the failure; unobserved: the reason
  int observations = 0;  ///< the steps recorded (record) or replayed (judge)
};

/// Starts the observations of check `id` in `mode` under `dir`; the harness calls it as each check
/// starts. Record: truncates the check's file and writes its header. Judge: opens the file and
/// reads its header (a problem found there ends the check at its first step, or at its end).
/// Returns the device to report in the check's "start" record: the runner's (from the header)
/// in judge mode, id.device otherwise.
std::string begin_check(ObserveMode mode, const std::string& dir, const CheckIdentity& id);

/// Ends the running check's observations. Record: writes the end record. Judge: a problem met
/// during the check, else the end record must come next and last (unobserved when the file
/// ends first), else a check that needs the GPU (`gpu_check`) and was not skipped must have
/// observed something ("grader error: the check observed nothing").
CheckOutcome end_check(bool gpu_check, bool skipped);

/// Ends the running check's observations without an end record: the process is crashing (a
/// fatal signal in the check). A judge then finds the record ending before the check does.
void abandon_check();

/// The mode of the running check (direct when none is running and the process is not a judge).
ObserveMode step_mode();

/// The message of the problem that ended the running check in judge mode; empty when none.
std::string running_problem();

namespace detail {

/// Record mode: the step's value or exception, appended to the running check's file. Never throws.
void record(const char* what, RecordKind kind, const std::string& payload) noexcept;
void record_exception(const char* what, std::exception_ptr error) noexcept;

/// Judge mode: the running check's next record, which must be step `what`; throws
/// ObservationProblem otherwise.
struct Replayed {
  RecordKind kind = RecordKind::value;
  std::string payload;
};
Replayed replay(const char* what);

/// Judge mode: fails the running check because step `what`'s payload does not decode.
[[noreturn]] void undecodable(const char* what, const std::string& why);

/// Record mode: steps run inside a step are not recorded on their own (the outer one is).
struct StepDepth {
  StepDepth();
  ~StepDepth();
  StepDepth(const StepDepth&) = delete;
  StepDepth& operator=(const StepDepth&) = delete;
  static bool inside_step();
};

}  // namespace detail
}  // namespace observe

/// Runs `gpu_step`, a step whose result depends on the GPU or on the exercise, as this process's
/// mode says (see the file's comment), and returns its value. `what` names the step in the
/// record: the same label at the same place in the runner and in the judge. The value must be
/// what observe::Codec can carry (host data: copy device memory back inside the step) and the
/// step must hold no doctest assertion. A step inside a step is recorded as part of the outer one.
template <class F>
auto observed(const char* what, F&& gpu_step) -> decltype(gpu_step()) {
  using T = decltype(gpu_step());
  static_assert(!std::is_reference_v<T>, "an observed step returns a value, not a reference");
  const ObserveMode mode = observe::step_mode();
  if (mode == ObserveMode::direct || (mode == ObserveMode::record && observe::detail::StepDepth::inside_step())) {
    return gpu_step();
  }
  if (mode == ObserveMode::record) {
    if constexpr (std::is_void_v<T>) {
      try {
        observe::detail::StepDepth depth;
        gpu_step();
      } catch (...) {
        observe::detail::record_exception(what, std::current_exception());
        throw;
      }
      observe::detail::record(what, observe::RecordKind::value, std::string());
      return;
    } else {
      std::optional<T> value;
      try {
        observe::detail::StepDepth depth;
        value.emplace(gpu_step());
      } catch (...) {
        observe::detail::record_exception(what, std::current_exception());
        throw;
      }
      observe::detail::record(what, observe::RecordKind::value, observe::encode(*value));
      return std::move(*value);
    }
  }
  observe::detail::Replayed step = observe::detail::replay(what);
  if (step.kind != observe::RecordKind::value) observe::rethrow_recorded(step.kind, step.payload);
  if constexpr (std::is_void_v<T>) {
    if (!step.payload.empty()) observe::detail::undecodable(what, "a step that returns nothing recorded a value");
    return;
  } else {
    try {
      return observe::decode<T>(step.payload);
    } catch (const observe::DecodeError& error) {
      observe::detail::undecodable(what, error.what());
    }
  }
}

/// observed() with a label made at run time ("speed " + workload, say).
template <class F>
auto observed(const std::string& what, F&& gpu_step) -> decltype(gpu_step()) {
  return observed(what.c_str(), std::forward<F>(gpu_step));
}

/// Makes an object that holds GPU resources (device arrays, a workspace) in an observed step, for
/// later steps of the check to use: nullptr in judge mode, where no step runs.
template <class T, class... Args>
std::unique_ptr<T> observed_make(const char* what, Args&&... args) {
  std::unique_ptr<T> made;
  observed(what, [&] { made = std::make_unique<T>(std::forward<Args>(args)...); });
  return made;
}

}  // namespace cdplab::harness
