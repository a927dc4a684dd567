#include "trpc/naming/etcd/detail/etcd_client.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <charconv>

#include "trpc/base/clock.h"
#include "trpc/naming/etcd/detail/etcd_gateway.pb.h"
#include "trpc/naming/etcd/detail/json_splitter.h"

namespace trpc::naming::etcd::detail {

namespace {

constexpr size_t kMaxUnaryBody = 64u << 20;  // a range of a large service still fits

bool ParseUint(std::string_view s, uint64_t lo, uint64_t hi, uint64_t* out) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty() || v < lo || v > hi) {
    return false;
  }
  *out = v;
  return true;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

// The error etcd put in a non-200 answer, or the status when the body says nothing.
std::string ErrorOf(int status, std::string_view body) {
  UnaryError e;
  std::string ignored;
  if (FromJson(body, &e, &ignored)) {
    if (!e.error().empty()) return e.error();
    if (!e.message().empty()) return e.message();
  }
  return "HTTP status " + std::to_string(status);
}

// One key of `ssl:` (the keys of a callee's ssl, docs/tls.md); false with the reason.
bool SetTlsKey(std::string_view key, const std::string& value, TlsConfig* c, std::string* why) {
  auto flag = [&](bool* v) {
    if (value != "true" && value != "false") {
      *why = "expected one of true|false, got '" + value + "'";
      return false;
    }
    *v = value == "true";
    return true;
  };
  // (A server's keys, accepted as a callee's ssl: accepts them, so that a block copied from
  // one moves over; they mean nothing to a client.)
  if (key == "mutual_auth" || key == "dh_param_path" || key == "max_handshakes") return true;
  if (key == "enable") return flag(&c->enable);
  if (key == "insecure") return flag(&c->insecure);
  if (key == "verify_peer_name") return flag(&c->verify_peer_name);
  if (key == "cert_path")
    c->cert_path = value;
  else if (key == "private_key_path")
    c->private_key_path = value;
  else if (key == "ca_cert_path")
    c->ca_cert_path = value;
  else if (key == "crl_path")
    c->crl_path = value;
  else if (key == "ciphers")
    c->ciphers = value;
  else if (key == "sni_name")
    c->sni_name = value;
  else if (key == "protocols") {
    c->protocols.clear();
    for (size_t b = 0; b <= value.size();) {
      size_t e = value.find(',', b);
      if (e == std::string::npos) e = value.size();
      if (std::string v = Trim(std::string_view(value).substr(b, e - b)); !v.empty()) {
        c->protocols.push_back(v);
      }
      b = e + 1;
    }
  } else if (key == "handshake_timeout") {
    uint64_t v = 0;
    if (!ParseUint(Trim(value), 1, 600000, &v)) {
      *why = "expected an integer in 1..600000 (ms), got '" + value + "'";
      return false;
    }
    c->handshake_timeout = static_cast<uint32_t>(v);
  } else {
    *why =
        "unknown setting (known: enable, cert_path, private_key_path, ca_cert_path, sni_name, "
        "insecure, verify_peer_name, ciphers, protocols, crl_path, handshake_timeout)";
    return false;
  }
  return true;
}

}  // namespace

bool ParseEtcdOptions(const PluginOptions& options, std::string_view kind, EtcdOptions* out,
                      std::string* err) {
  EtcdOptions o;
  std::string eps = "127.0.0.1:2379";
  for (const auto& [key, value] : options.values) {
    const std::string where =
        options.At(key) + "plugins." + std::string(kind) + ".etcd." + key + ": ";
    uint64_t v = 0;
    if (key == "endpoints") {
      eps = value;
    } else if (key == "prefix") {
      std::string p = Trim(value);
      while (p.size() > 1 && p.back() == '/') p.pop_back();
      if (p.empty() || p.front() != '/' || p == "/") {
        *err = where + "must start with '/' and name a folder, e.g. /trpc, got '" + value + "'";
        return false;
      }
      o.prefix = p;
    } else if (key == "ttl") {
      if (!ParseUint(Trim(value), 2, 3600, &v)) {
        *err = where + "must be 2..3600 (seconds), got '" + value + "'";
        return false;
      }
      o.ttl_s = static_cast<uint32_t>(v);
    } else if (key == "request_timeout") {
      if (!ParseUint(Trim(value), 1, 600000, &v)) {
        *err = where + "must be 1..600000 (ms), got '" + value + "'";
        return false;
      }
      o.request_timeout_ms = static_cast<uint32_t>(v);
    } else if (key == "backoff_max") {
      if (!ParseUint(Trim(value), 100, 600000, &v)) {
        *err = where + "must be 100..600000 (ms), got '" + value + "'";
        return false;
      }
      o.backoff_max_ms = static_cast<uint32_t>(v);
    } else if (key == "update_interval") {
      if (!ParseUint(Trim(value), 0, 60000, &v)) {
        *err = where + "must be 0..60000 (ms), got '" + value + "'";
        return false;
      }
      o.update_interval_ms = static_cast<uint32_t>(v);
    } else if (key.starts_with("ssl.")) {
      std::string why;
      if (!SetTlsKey(std::string_view(key).substr(4), value, &o.ssl, &why)) {
        *err = where + why;
        return false;
      }
      o.ssl.key_origin[key.substr(4)] = options.At(key).substr(0, options.At(key).size() - 2);
    } else {
      *err = where +
             "unknown setting (known: endpoints, prefix, ttl, request_timeout, backoff_max, "
             "update_interval, ssl)";
      return false;
    }
  }
  if (o.ssl.enable) {
    // A client context, made now so that its files' errors stop start-up with their lines. No
    // ALPN: etcd's port also serves gRPC, and a client that offers none gets HTTP/1.1 there.
    const std::string at = options.At("ssl");
    o.ssl.origin = at.size() >= 2 ? at.substr(0, at.size() - 2) : std::string();
    std::string why;
    o.tls = TlsContext::Create(o.ssl, TlsRole::kClient, TlsAlpn{}, &why);
    if (o.tls == nullptr) {
      // "file:line: ssl.key: why", with the key's full path.
      const std::string full = "plugins." + std::string(kind) + ".etcd.ssl";
      if (const size_t at_key = why.find(": ssl"); at_key != std::string::npos) {
        why.replace(at_key + 2, 3, full);
      } else {
        why = full + ": " + why;
      }
      *err = std::move(why);
      return false;
    }
  }
  std::string bad;
  if (!NetAddress::ParseList(eps, &o.endpoints, &bad) || o.endpoints.empty()) {
    *err = options.At("endpoints") + "plugins." + std::string(kind) +
           ".etcd.endpoints: want ip:port[,ip:port...], got '" + (bad.empty() ? eps : bad) + "'";
    return false;
  }
  *out = std::move(o);
  return true;
}

std::string ServiceKeyPrefix(const EtcdOptions& options, std::string_view name_space,
                             std::string_view service) {
  return options.prefix + "/" + std::string(name_space) + "/" + std::string(service) + "/";
}

std::string PrefixRangeEnd(std::string prefix) {
  // The smallest key greater than every key with this prefix: drop trailing 0xff bytes and
  // increment the last one ("\0" = to the end of the key space when nothing is left).
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xff) prefix.pop_back();
  if (prefix.empty()) return std::string(1, '\0');
  prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

std::string ToJson(const google::protobuf::Message& msg) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;  // etcd's names (range_end), not rangeEnd
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(msg, &out, opts);
  return out;
}

bool FromJson(std::string_view json, google::protobuf::Message* msg, std::string* err) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  msg->Clear();
  auto st = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), msg, opts);
  if (!st.ok()) {
    *err = "bad JSON from etcd: " + std::string(st.message());
    return false;
  }
  return true;
}

EtcdClient::EtcdClient(const EtcdOptions& options) : options_(options) {}

void EtcdClient::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_.store(true, std::memory_order_release);
  for (http::HttpStream* s : active_) s->Cancel();
}

bool EtcdClient::Enter(http::HttpStream* s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_.load(std::memory_order_relaxed)) return false;
  active_.insert(s);
  return true;
}

void EtcdClient::Leave(http::HttpStream* s) {
  std::lock_guard<std::mutex> lock(mu_);
  active_.erase(s);
}

void EtcdClient::NextEndpoint(size_t failed) {
  // Only the first of several threads that saw the same endpoint fail moves on.
  size_t expected = failed;
  current_.compare_exchange_strong(expected, (failed + 1) % options_.endpoints.size(),
                                   std::memory_order_relaxed);
}

EtcdClient::Result EtcdClient::Call(std::string_view path, const google::protobuf::Message& req,
                                    google::protobuf::Message* rsp, std::string* err) {
  const int64_t deadline =
      MonotonicNanos() + static_cast<int64_t>(options_.request_timeout_ms) * kNanosPerMilli;
  http::HttpStreamRequest hreq;
  hreq.target = std::string(path);
  hreq.headers = {{"Content-Type", "application/json"}};
  hreq.body = ToJson(req);
  std::string last_err = "no endpoint";
  for (size_t attempt = 0; attempt < options_.endpoints.size(); ++attempt) {
    const int64_t left_ms = (deadline - MonotonicNanos()) / kNanosPerMilli;
    if (left_ms <= 0) break;
    http::HttpStreamOptions hopts;
    hopts.connect_timeout_ms = hopts.read_timeout_ms = hopts.total_timeout_ms =
        static_cast<uint32_t>(left_ms);
    hopts.tls = options_.tls;
    http::HttpStream stream(hopts);
    if (!Enter(&stream)) {
      *err = "cancelled";
      return Result::kUnreachable;
    }
    const size_t ep = Endpoint();
    int status = 0;
    std::string body, call_err;
    const bool ok =
        stream.Fetch(options_.endpoints[ep], hreq, kMaxUnaryBody, &status, &body, &call_err);
    Leave(&stream);
    if (!ok) {
      last_err = "etcd " + options_.endpoints[ep].ToString() + ": " + call_err;
      if (cancelled()) break;
      NextEndpoint(ep);
      continue;
    }
    if (status != 200) {
      *err = "etcd " + options_.endpoints[ep].ToString() + std::string(path) + ": " +
             ErrorOf(status, body);
      return Result::kEtcdError;
    }
    std::string parse_err;
    if (!FromJson(body, rsp, &parse_err)) {
      last_err = "etcd " + options_.endpoints[ep].ToString() + std::string(path) + ": " + parse_err;
      NextEndpoint(ep);
      continue;
    }
    return Result::kOk;
  }
  *err = cancelled() ? "cancelled" : last_err;
  return Result::kUnreachable;
}

EtcdClient::Result EtcdClient::Stream(std::string_view path, const google::protobuf::Message& req,
                                      const OnObject& on_object, std::string* err) {
  http::HttpStreamRequest hreq;
  hreq.target = std::string(path);
  hreq.headers = {{"Content-Type", "application/json"}};
  hreq.body = ToJson(req);
  http::HttpStreamOptions hopts;
  hopts.connect_timeout_ms = options_.request_timeout_ms;
  hopts.read_timeout_ms = 0;  // a watch may stay silent for as long as nothing changes
  hopts.tls = options_.tls;
  http::HttpStream stream(hopts);
  if (!Enter(&stream)) {
    *err = "cancelled";
    return Result::kUnreachable;
  }
  const size_t ep = Endpoint();
  const std::string where = "etcd " + options_.endpoints[ep].ToString() + std::string(path);
  int status = 0;
  std::string error_body;
  JsonObjectSplitter splitter;
  std::string split_err;
  bool split_failed = false, stopped = false;
  std::string call_err;
  const bool ok = stream.Run(
      options_.endpoints[ep], hreq,
      [&](const http::HttpStreamHead& head) {
        status = head.status;
        return true;
      },
      [&](std::string_view piece) {
        if (status != 200) {  // an error answer: keep a bounded part of it for the message
          error_body.append(piece.substr(0, 4096 - std::min<size_t>(error_body.size(), 4096)));
          return true;
        }
        if (!splitter.Feed(piece, on_object, &split_err)) {
          if (split_err.empty()) {
            stopped = true;
          } else {
            split_failed = true;
          }
          return false;
        }
        return true;
      },
      &call_err);
  Leave(&stream);
  if (stopped) return Result::kOk;
  if (split_failed) {
    *err = where + ": " + split_err;
    NextEndpoint(ep);
    return Result::kUnreachable;
  }
  if (!ok) {
    *err = where + ": " + call_err;
    if (!cancelled()) NextEndpoint(ep);
    return Result::kUnreachable;
  }
  if (status != 200) {
    *err = where + ": " + ErrorOf(status, error_body);
    return Result::kEtcdError;
  }
  return Result::kOk;
}

}  // namespace trpc::naming::etcd::detail
