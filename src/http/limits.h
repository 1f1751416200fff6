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
// Open client connections per process; beyond it new connections are refused cleanly.
inline constexpr int64_t connections_max = 20000;
// File descriptors kept beyond connections_max for the store, upstream connections and
// listeners: the process raises its soft RLIMIT_NOFILE to connections_max plus this (at most
// the hard limit) so that the connection cap, not EMFILE, is what refuses connections.
inline constexpr int64_t file_descriptors_reserve = 4096;
// Body of a non-streaming provider response; beyond it the response is a provider error.
inline constexpr size_t provider_body_bytes_max = size_t{64} << 20;
// Response headers from a provider.
inline constexpr size_t provider_header_bytes_max = size_t{64} << 10;
// Idle upstream keep-alive connections kept per provider per event loop.
inline constexpr size_t upstream_idle_connections_max = 256;
// Most of a stream's body held between relays: the parser stops there until the relay
// drained it. The holding string grows only to what the provider's reads bring (SSE
// events are a few hundred bytes), so memory per stream follows the events, not this bound:
// a fixed buffer of this size per stream would dominate the RSS of ten thousand streams.
inline constexpr size_t stream_read_buffer_bytes = 4 << 10;

static_assert(request_header_bytes_max < request_body_bytes_max);

}  // namespace cairva::http
