#pragma once

/// The etcd naming plug-in: a Selector and a Registry named "etcd" (docs/naming.md).
///
/// Settings, the same keys for `plugins.selector.etcd` and `plugins.registry.etcd` (an unknown
/// key or a bad value fails Init with "file:line: plugins.<kind>.etcd.<key>: ..."):
///   endpoints        "ip:port[,ip:port...]", tried in turn on failure   (127.0.0.1:2379)
///   prefix           the folder of every key                            (/trpc)
///   ttl              the registry's lease, seconds, 2..3600             (10)
///   request_timeout  ms, one unary call to etcd (all endpoints)         (3000)
///   backoff_max      ms, cap of the back-off between attempts, >= 100   (2000)
///   update_interval  ms, least time between two lists to a proxy        (100)
///
/// Key layout: one key per registered instance,
///   <prefix>/<namespace>/<service>/<ip:port>
/// with the JSON value
///   {"host":"127.0.0.1","port":8000,"weight":100,"meta":{"k":"v"}}
/// (weight and meta may be absent: weight 100, no meta). The registry's keys carry a lease
/// that it keeps alive; the selector follows the keys under `<prefix>/<namespace>/<target>/`,
/// where target is client.service[].target (the registered service name), and skips values it
/// cannot read (with a rate-limited warning).
///
/// Both talk to etcd v3 through its gRPC-gateway JSON API over HTTP/1.1 (trpc/client/http/
/// http_stream.h), on their own threads, so they work before the runtime starts and while it
/// stops.

namespace trpc::naming {

/// Registers Selector "etcd" with SelectorFactory and Registry "etcd" with RegistryFactory.
/// Idempotent; thread-safe.
void RegisterEtcdNaming();

}  // namespace trpc::naming
