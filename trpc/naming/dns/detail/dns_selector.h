#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trpc/base/net_address.h"

/// The "dns" selector (`client.service[].selector_name: dns`): the target is "host:port" (host
/// a name, a literal IPv4 address, or a literal IPv6 address in brackets), and the endpoints are
/// the host's A and AAAA addresses (getaddrinfo, SOCK_STREAM) with that port, weight 100.
///
/// Settings (`plugins.selector.dns`): `refresh_interval`, ms between resolutions of each
/// target, 100..86400000, default 30000.
///
/// How it follows names:
/// - One background thread per selector resolves every subscribed name in turn, each once per
///   refresh_interval (a timed wait on a condition variable; Stop and subscription destruction
///   wake it). One thread is plenty for a handful of names and keeps a process from spawning a
///   thread per client service; the price is that a slow lookup delays the others.
/// - Subscribe queues the first lookup at once and waits up to first_wait_ms for it, so the
///   first list is usually there when Subscribe returns; if the lookup takes longer it arrives
///   later, on the background thread. A literal IP needs no lookup: its one-address list is
///   delivered inside Subscribe and never changes.
/// - A list is delivered only when the sorted set of addresses changes.
/// - A failed lookup (or one with no addresses) keeps the last list: a resolver hiccup must
///   not empty a service's endpoints. It logs a warning when a name starts failing and a note
///   when it resolves again (once per change of state, not once per retry).

namespace trpc::naming {

/// Registers the "dns" selector with SelectorFactory. Idempotent and thread-safe; call before
/// the first SelectorFactory::Get("dns").
void RegisterDnsSelector();

/// How the dns selector resolves a name: A and AAAA records of `host` with `port`, sorted by
/// their "ip:port" text, without duplicates. False with `*error` when the name does not
/// resolve or has no addresses.
using DnsResolver = std::function<bool(const std::string& host, uint16_t port,
                                       std::vector<NetAddress>* out, std::string* error)>;

/// The default resolver: getaddrinfo(host, port, AF_UNSPEC, SOCK_STREAM).
bool ResolveWithGetaddrinfo(const std::string& host, uint16_t port, std::vector<NetAddress>* out,
                            std::string* error);

/// Replaces the resolver every dns selector uses, for tests (lists that change, failures, slow
/// lookups, without a DNS server); an empty function restores getaddrinfo. Thread-safe.
void SetDnsResolverForTesting(DnsResolver resolver);

}  // namespace trpc::naming
