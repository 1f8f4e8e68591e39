/// @file wire.h
/// @brief Values as bytes: what the grader's check process and a host part's process (host_parts.h)
///        send each other. One codec for every type an exercise's host part takes or returns.
///
/// encode(value) gives the bytes of a value and decode<T>(bytes) the value back; Codec<T> says how
/// (its comment lists the types it covers). Decoding checks every length against what is left of
/// the bytes before it allocates anything, and throws DecodeError rather than read past the end:
/// the bytes may come from a process the grader does not trust.
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

namespace cdplab::harness::wire {


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
    if (size > left_) throw DecodeError("the value ends too soon");
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
    if (n > left_ / (min_bytes == 0 ? 1 : min_bytes)) throw DecodeError("a length exceeds the message");
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
                "wire: a type with no fields or more than 16 needs a Codec specialisation");
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
                    "wire: this type has no generic encoding; specialise cdplab::harness::wire::Codec");
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
                    "wire: this type has no generic encoding; specialise cdplab::harness::wire::Codec");
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
  static_assert(std::is_default_constructible_v<T>, "wire: a value is decoded into a T{}");
  Decoder in(payload.data(), payload.size());
  T value{};
  Codec<T>::decode(in, value);
  if (in.left() != 0) throw DecodeError("the value is longer than its type");
  return value;
}

/// The exceptions a host part may throw, as they cross: kind, then the fields each kind has.
enum class ExceptionKind : std::uint8_t {
  not_implemented = 10,      ///< cdplab::NotImplemented: message
  cuda_error = 11,           ///< cdplab::CudaError: i32 code, message
  device_launch_error = 12,  ///< cdplab::DeviceLaunchError: i32 code, i32 failures, message
  invalid_argument = 13,     ///< std::invalid_argument: message
  out_of_range = 14,         ///< std::out_of_range: message
  runtime_error = 15,        ///< std::runtime_error or any other std::exception: message
  unknown = 16,              ///< anything else: no message
};

/// An exception as bytes: its kind and its fields.
std::pair<ExceptionKind, std::string> encode_exception(std::exception_ptr error);

/// Throws the exception `kind` and `payload` describe; std::runtime_error when they do not
/// decode, with `what_for` in its message.
[[noreturn]] void rethrow_encoded(ExceptionKind kind, const std::string& payload, const std::string& what_for);

}  // namespace cdplab::harness::wire
