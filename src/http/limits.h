// Every limit of the HTTP layer, named with its unit last, each with why.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cairva::http {

// SPEC §3: bodies over 16 MiB are refused with 413 request_too_large.
inline constexpr size_t request_body_bytes_max = size_t{16} << 20;
// Request line + headers; beyond this 431. Generous for long bearer tokens and cookies.
inline constexpr size_t request_header_bytes_max = size_t{16} << 10;
// A client must finish sending its headers within this time, else 408 and close.
inline constexpr int64_t header_read_timeout_s = 10;
// Keep-alive connections idle this long are closed so they cannot pin resources.
inline constexpr int64_t idle_timeout_s = 75;
// A client must send its whole body within this time once its headers are in.
inline constexpr int64_t body_read_timeout_s = 60;
// A client must accept a response's bytes at least this often, else it is dropped.
inline constexpr int64_t client_write_timeout_s = 60;
// The public listener's connection budgets, its first-byte timeout and the bodies' memory
// budget are configuration ([server], src/config/config.h); these are the fixed ones.
//
// Connections the admin listener holds, apart from the public listener's: a flood of the
// public port never takes the operator's way in. Operators' tools open a few at a time.
inline constexpr int64_t admin_connections_max = 256;
// File descriptors kept beyond both listeners' budgets for the store, upstream connections
// and listeners: the process raises its soft RLIMIT_NOFILE to the budgets plus this (at most
// the hard limit) so that a connection budget, not EMFILE, is what refuses connections.
inline constexpr int64_t file_descriptors_reserve = 4096;
// After EMFILE with no idle connection to shed, the accept loop waits this long before
// accepting again rather than spinning on a listening socket that stays readable.
inline constexpr int64_t accept_pause_ms = 100;
// At a drain, the connections already queued on the listening socket are accepted and
// served before it closes (listener.cpp); at most this many, the kernel's usual SOMAXCONN.
inline constexpr int accept_backlog_drain_max = 4096;
// A refused request's unread body is read and discarded, up to these bounds, before the
// connection closes, so that a client writing its whole body before reading gets the answer
// instead of a reset (as nginx's lingering close). 64 MiB covers any body a client might
// send past the 16 MiB limit by mistake; beyond either bound the connection just closes.
inline constexpr size_t discard_body_bytes_max = size_t{64} << 20;
inline constexpr int64_t discard_body_timeout_s = 30;
// The room read at once while discarding: one buffer reused per connection.
inline constexpr size_t discard_read_bytes = size_t{16} << 10;
// Body of a non-streaming provider response; beyond it the response is a provider error.
inline constexpr size_t provider_body_bytes_max = size_t{64} << 20;
// Response headers from a provider.
inline constexpr size_t provider_header_bytes_max = size_t{64} << 10;
// Idle upstream keep-alive connections kept per provider per event loop.
inline constexpr size_t upstream_idle_connections_max = 256;
// An idle upstream connection is dropped after this long, before the provider's own
// keep-alive timeout closes it under a request (Node's default is 5 s; CDNs close sooner
// or later, and a failure there is retried on a fresh connection anyway).
inline constexpr int64_t upstream_idle_keepalive_s = 4;
// Most of a stream's body held between relays: the parser stops there until the relay
// drained it. The holding string grows only to what the provider's reads bring (SSE
// events are a few hundred bytes), so memory per stream follows the events, not this bound:
// a fixed buffer of this size per stream would dominate the RSS of ten thousand streams.
inline constexpr size_t stream_read_buffer_bytes = 4 << 10;

static_assert(request_header_bytes_max < request_body_bytes_max);

}  // namespace cairva::http
