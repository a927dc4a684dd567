#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "trpc/base/cancel_signal.h"
#include "trpc/base/filter.h"
#include "trpc/base/net_address.h"
#include "trpc/base/status.h"
#include "trpc/codec/rpc_message.h"

namespace trpc {

/// The caller's side of one call: what to call, the time it may take, the metadata it carries,
/// and afterwards the status, the backend that answered and the reply metadata.
/// Thread contract: one call at a time; do not touch it while an async call is in flight.
class ClientContext {
 public:
  /// Milliseconds the call may take; 0 = the proxy's configured timeout.
  void SetTimeout(uint32_t ms) { timeout_ms_ = ms; }
  uint32_t GetTimeout() const { return timeout_ms_; }
  /// Absolute MonotonicNanos() deadline (0 = none); the earlier of this and the timeout wins.
  void SetDeadlineNs(int64_t ns) { deadline_ns_ = ns; }
  int64_t GetDeadlineNs() const { return deadline_ns_; }
  /// A cancellation the call belongs to (MakeClientContext sets the served stream's): a stream
  /// opened with this context is reset (ret 161) when it fires. Null: none.
  void SetCancelSignal(std::shared_ptr<CancelSignal> s) { cancel_signal_ = std::move(s); }
  const std::shared_ptr<CancelSignal>& GetCancelSignal() const { return cancel_signal_; }

  void SetFuncName(std::string func) { func_ = std::move(func); }
  const std::string& GetFuncName() const { return func_; }
  void SetCaller(std::string caller) { caller_ = std::move(caller); }
  const std::string& GetCaller() const { return caller_; }

  void AddReqTransInfo(std::string key, std::string value) {
    req_trans_info_[std::move(key)] = std::move(value);
  }
  const TransInfo& GetReqTransInfo() const { return req_trans_info_; }
  /// Compresses the request body, numbered as trpc.proto's content_encoding: 0 none (the
  /// default), 1 gzip, 2 snappy (the stream format, as tRPC-Go), 3 zlib, 4 snappy stream,
  /// 5 snappy block, 6 lz4 frame, 7 lz4 block. trpc carries them all and the server replies
  /// compressed the same way; gRPC carries 1 (gzip) and 3 (deflate); HTTP/1.1 none. A type the
  /// protocol cannot carry fails the call (kClientEncodeErr). docs/protocol.md.
  void SetReqCompressType(uint32_t type) { req_compress_type_ = type; }
  uint32_t GetReqCompressType() const { return req_compress_type_; }
  /// Serializes the request as `type`, trpc.proto's content_type: 0 protobuf (the default),
  /// 2 JSON (protobuf's JSON mapping); the server replies the same way. tRPC-Cpp's name.
  void SetReqEncodeType(uint32_t type) { req_encode_type_ = type; }
  uint32_t GetReqEncodeType() const { return req_encode_type_; }
  TransInfo& MutableReqTransInfo() { return req_trans_info_; }
  /// trpc's attachment: opaque bytes sent after the request's body, never compressed (tRPC-Cpp's
  /// names). Shared, not copied, by every attempt of the call. Other protocols fail a call that
  /// has one (121).
  void SetRequestAttachment(ChainBuffer&& attachment) { req_attachment_ = std::move(attachment); }
  const ChainBuffer& GetRequestAttachment() const { return req_attachment_; }
  /// After the call: the reply's attachment (empty if none).
  const ChainBuffer& GetResponseAttachment() const { return rsp_attachment_; }
  ChainBuffer& MutableResponseAttachment() { return rsp_attachment_; }
  const TransInfo& GetRspTransInfo() const { return rsp_trans_info_; }
  TransInfo& MutableRspTransInfo() { return rsp_trans_info_; }

  /// The key a `consistent_hash` balancer routes by: calls with the same key go to the same
  /// endpoint while the endpoint list stays the same. SetHashKey(string) hashes with HashKey()
  /// (trpc/naming/load_balancer.h).
  void SetHashKey(std::string_view key);
  void SetHashKey(uint64_t hash) {
    hash_key_ = hash;
    has_hash_key_ = true;
  }
  bool HasHashKey() const { return has_hash_key_; }
  uint64_t GetHashKey() const { return hash_key_; }

  const Status& GetStatus() const { return status_; }
  void SetStatus(Status s) { status_ = std::move(s); }
  /// The protocol of the proxy the call goes through ("trpc", "grpc", "http"), set before the
  /// client filters run (for them: tracing names the span's rpc.system by it). The name must
  /// outlive the context: the proxy gives its codec's, which is static.
  void SetProtocolName(std::string_view protocol) { protocol_ = protocol; }
  std::string_view GetProtocolName() const { return protocol_; }
  /// The backend the call went to.
  const NetAddress& GetBackend() const { return backend_; }
  void SetBackend(const NetAddress& a) { backend_ = a; }

  /// A filter's per-call data under `id` (NewFilterDataId()), kept with the context.
  template <typename T>
  void SetFilterData(uint32_t id, std::shared_ptr<T> value) {
    filter_data_.Set(id, std::move(value));
  }
  /// The data set under `id` as a T (the type it was set with), or null.
  template <typename T>
  T* GetFilterData(uint32_t id) const {
    return static_cast<T*>(filter_data_.Get(id));
  }

 private:
  uint32_t timeout_ms_ = 0;
  int64_t deadline_ns_ = 0;
  std::shared_ptr<CancelSignal> cancel_signal_;
  std::string func_;
  std::string caller_;
  std::string_view protocol_;
  TransInfo req_trans_info_;
  uint32_t req_compress_type_ = 0;
  uint32_t req_encode_type_ = 0;
  uint64_t hash_key_ = 0;
  bool has_hash_key_ = false;
  TransInfo rsp_trans_info_;
  ChainBuffer req_attachment_;
  ChainBuffer rsp_attachment_;
  Status status_;
  NetAddress backend_;
  FilterData filter_data_;
};

using ClientContextPtr = std::shared_ptr<ClientContext>;

inline ClientContextPtr MakeClientContext() { return std::make_shared<ClientContext>(); }

}  // namespace trpc
