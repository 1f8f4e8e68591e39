#include "wire.h"

#include "cdplab/check.h"

namespace cdplab::harness::wire {

std::pair<ExceptionKind, std::string> encode_exception(std::exception_ptr error) {
  Encoder out;
  const auto message = [&](const char* what) { Codec<std::string>::encode(out, what); };
  ExceptionKind kind = ExceptionKind::unknown;
  try {
    std::rethrow_exception(error);
  } catch (const cdplab::NotImplemented& e) {
    kind = ExceptionKind::not_implemented;
    message(e.what());
  } catch (const cdplab::CudaError& e) {
    kind = ExceptionKind::cuda_error;
    const auto code = static_cast<std::int32_t>(e.code());
    out.bytes(&code, sizeof code);
    message(e.what());
  } catch (const cdplab::DeviceLaunchError& e) {
    kind = ExceptionKind::device_launch_error;
    const auto code = static_cast<std::int32_t>(e.code());
    const auto failures = static_cast<std::int32_t>(e.failures());
    out.bytes(&code, sizeof code);
    out.bytes(&failures, sizeof failures);
    message(e.what());
  } catch (const std::invalid_argument& e) {
    kind = ExceptionKind::invalid_argument;
    message(e.what());
  } catch (const std::out_of_range& e) {
    kind = ExceptionKind::out_of_range;
    message(e.what());
  } catch (const std::exception& e) {
    kind = ExceptionKind::runtime_error;
    message(e.what());
  } catch (...) {
    kind = ExceptionKind::unknown;
  }
  return {kind, std::move(out.buffer())};
}

void rethrow_encoded(ExceptionKind kind, const std::string& payload, const std::string& what_for) {
  Decoder in(payload.data(), payload.size());
  std::int32_t code = 0;
  std::int32_t failures = 0;
  std::string message;
  try {
    if (kind == ExceptionKind::cuda_error || kind == ExceptionKind::device_launch_error) in.bytes(&code, sizeof code);
    if (kind == ExceptionKind::device_launch_error) in.bytes(&failures, sizeof failures);
    if (kind != ExceptionKind::unknown) Codec<std::string>::decode(in, message);
    if (in.left() != 0) throw DecodeError("trailing bytes");
  } catch (const DecodeError& error) {
    throw std::runtime_error(what_for + ": an exception that does not decode (" + error.what() + ")");
  }
  switch (kind) {
    case ExceptionKind::not_implemented: throw cdplab::NotImplemented(message);
    case ExceptionKind::cuda_error: throw cdplab::CudaError(static_cast<cudaError_t>(code), message);
    case ExceptionKind::device_launch_error:
      throw cdplab::DeviceLaunchError(static_cast<cudaError_t>(code), failures, message);
    case ExceptionKind::invalid_argument: throw std::invalid_argument(message);
    case ExceptionKind::out_of_range: throw std::out_of_range(message);
    case ExceptionKind::runtime_error: throw std::runtime_error(message);
    case ExceptionKind::unknown: throw std::runtime_error(what_for + " threw an exception that is no std::exception");
  }
  throw std::runtime_error(what_for + ": an exception of unknown kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace cdplab::harness::wire
