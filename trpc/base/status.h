#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trpc {

/// Framework error codes carried in the `ret` field of a trpc response (docs/protocol.md).
enum RetCode : int32_t {
  kSuccess = 0,
  // Server side.
  kServerDecodeErr = 1,
  kServerEncodeErr = 2,
  kServerNoServiceErr = 11,
  kServerNoFuncErr = 12,
  kServerTimeoutErr = 21,
  kServerOverloadErr = 22,
  kServerLimitedErr = 23,
  kServerFullLinkTimeoutErr = 24,
  kServerSystemErr = 31,
  kServerAuthErr = 41,
  kServerValidateErr = 51,
  // Client side.
  kClientInvokeTimeoutErr = 101,
  kClientFullLinkTimeoutErr = 102,
  kClientConnectErr = 111,
  kClientEncodeErr = 121,
  kClientDecodeErr = 122,
  kClientLimitedErr = 123,
  kClientOverloadErr = 124,
  kClientRouterErr = 131,
  kClientNetworkErr = 141,
  kClientValidateErr = 151,
  kClientCanceledErr = 161,
  kClientReadFrameErr = 171,
  // Streams (trpc.proto's numbers): how a stream's read or write ended.
  kStreamServerNetworkErr = 201,
  kStreamServerMsgExceedLimitErr = 211,
  kStreamServerReadEnd = 251,
  kStreamServerReadTimeoutErr = 254,
  kStreamServerWriteEnd = 231,
  kStreamClientNetworkErr = 301,
  kStreamClientMsgExceedLimitErr = 311,
  kStreamClientWriteEnd = 331,
  kStreamClientReadEnd = 351,
  kStreamClientReadTimeoutErr = 354,
  kUnknownErr = 999,
};

/// The short name of a framework code ("timeout", "no_func", ...), for logs and metrics.
std::string_view RetCodeName(int32_t code);

/// True if `ret` is one of the framework codes above (0 included).
bool IsFrameworkRetCode(int32_t ret);

/// Result of a call: a framework code (`ret`), the handler's own code (`func_ret`) and a message.
/// A status is OK only when both codes are 0. Value type; not thread-safe to mutate concurrently.
///
/// Two kinds of error (docs/errors.md):
/// - an application error is the service's own answer ("no such user"): ret 0 and a non-zero
///   `func_ret` the service defines. Make it with Status::AppError(code, msg).
/// - a framework error says the call itself failed (timeout, no such method, overload): `ret`
///   is one of the RetCode values above, func_ret 0. Make it with Status::FrameworkError(ret,
///   msg), or the two-argument constructor, which means the same.
///
/// Both travel to the caller unchanged over trpc (the `ret` and `func_ret` header fields); over
/// HTTP they pick the status code and fill the JSON error body.
class Status {
 public:
  Status() = default;
  /// Both codes given: `ret` the framework's, `func_ret` the application's.
  Status(int32_t ret, int32_t func_ret, std::string msg)
      : ret_(ret), func_ret_(func_ret), msg_(std::move(msg)) {}
  /// A FRAMEWORK error: `ret` is a RetCode. Not for a service's own codes: Status(-404, msg)
  /// is framework code -404, which no caller knows; use AppError(-404, msg).
  Status(int32_t ret, std::string msg) : ret_(ret), msg_(std::move(msg)) {}

  /// An application error: ret 0, func_ret `code` (non-zero: 0 would make the status OK).
  static Status AppError(int32_t code, std::string msg) { return Status(0, code, std::move(msg)); }
  /// A framework error: `ret` (a RetCode), func_ret 0.
  static Status FrameworkError(int32_t ret, std::string msg) { return Status(ret, std::move(msg)); }

  bool OK() const { return ret_ == 0 && func_ret_ == 0; }
  /// A stream's Read() found the end of the peer's messages (tRPC-Cpp's name): not an error.
  bool StreamEof() const { return ret_ == kStreamServerReadEnd || ret_ == kStreamClientReadEnd; }
  int32_t GetFrameworkRetCode() const { return ret_; }
  int32_t GetFuncRetCode() const { return func_ret_; }
  const std::string& ErrorMessage() const { return msg_; }

  void SetFrameworkRetCode(int32_t ret) { ret_ = ret; }
  void SetFuncRetCode(int32_t func_ret) { func_ret_ = func_ret; }
  void SetErrorMessage(std::string msg) { msg_ = std::move(msg); }

  /// "OK", "framework error 12 (no_func): msg", "application error 5: msg" (AppError), or
  /// "framework error 31 (server_system), application code 5: msg" when both are set.
  std::string ToString() const;

 private:
  int32_t ret_ = 0;
  int32_t func_ret_ = 0;
  std::string msg_;
};

inline const Status kSuccStatus{};

}  // namespace trpc
