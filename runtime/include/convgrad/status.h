// Error reporting: every public call returns a Status; nothing aborts or throws across the API.
#pragma once

#include <string>
#include <utility>

namespace convgrad {

enum class StatusCode {
    kOk = 0,
    kInvalidArgument = 2,  // the caller's input is wrong (matches the CLI's exit code 2)
    kUnsupported = 3,      // valid, but not available in this build or on this device (exit 3)
    kInternal = 4,         // a kernel failed at run time; the message carries Halide's text
};

class Status {
public:
    Status() = default;
    Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

    static Status ok() { return {}; }
    static Status invalid(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
    static Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
    static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

    bool is_ok() const { return code_ == StatusCode::kOk; }
    explicit operator bool() const { return is_ok(); }
    StatusCode code() const { return code_; }
    const std::string &message() const { return message_; }

private:
    StatusCode code_ = StatusCode::kOk;
    std::string message_;
};

// A value or the Status that explains why there is none.
template<typename T>
struct Result {
    Status status;
    T value{};

    Result(Status s) : status(std::move(s)) {}  // NOLINT: implicit, so `return Status::invalid(..)` works
    Result(T v) : value(std::move(v)) {}        // NOLINT
    bool is_ok() const { return status.is_ok(); }
};

}  // namespace convgrad
