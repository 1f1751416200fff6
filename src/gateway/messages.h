// The Anthropic Messages API (SPEC-APIS §2–§4): `POST /v1/messages` through the one flow
// (inspect → admit → forward → relay → settle, wire::MessagesCodec), and `POST
// /v1/messages/count_tokens`, forwarded without a hold or a booking.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "gateway/exchange.h"
#include "gateway/gateway.h"
#include "http/executor.h"
#include "store/rows.h"
#include "upstream/upstream.h"

namespace cairva::gateway {

// What the provider gets of the client's request head besides the body: anthropic-version
// (the API version it answers in; anthropic_version_default when the client sent none),
// anthropic-beta (only when sent) and the target's query (the SDKs' beta calls add
// ?beta=true). Views of the client's request head.
struct AnthropicFields {
  std::string_view version;
  std::string_view beta;
  std::string_view query;  // with its '?'; empty when none
};

// The version the Anthropic SDKs long sent, and the API's first: a client without the
// field gets answers in the shape it was written against.
inline constexpr std::string_view anthropic_version_default = "2023-06-01";

// The client's fields an Anthropic provider gets, as upstream::Request::headers (SPEC-APIS
// §1): anthropic-version always (anthropic_version_default when the client sent none),
// anthropic-beta when sent. Never the buyer's key: the supplier's goes in x-api-key. Views
// of `fields`' text, which must outlive it.
class AnthropicHeaders {
 public:
  explicit AnthropicHeaders(AnthropicFields fields);
  std::span<const upstream::Header> span() const { return {headers_.data(), count_}; }

 private:
  std::array<upstream::Header, 2> headers_;
  size_t count_ = 0;
};

// Serves one authenticated POST /v1/messages whose body has been read, through `upstream`
// (the event loop's UpstreamPool; a scripted fake in tests). Returns false when the client
// connection must close.
http::Task<bool> messages_create(const Gateway& gw, upstream::Upstream& upstream,
                                 ClientExchange& ex, const store::KeyGrant& grant, std::string body,
                                 AnthropicFields fields);

// Serves one authenticated POST /v1/messages/count_tokens: the body is checked and its
// model against the agreement's list, the allocation's state as admission checks it
// (suspended, depleted, expired: refused), then the call is forwarded and its answer passed
// on (the provider's supplier-account errors replaced as for billable calls). Holds,
// books and counts toward nothing.
http::Task<bool> messages_count_tokens(const Gateway& gw, upstream::Upstream& upstream,
                                       ClientExchange& ex, const store::KeyGrant& grant,
                                       std::string body, AnthropicFields fields);

}  // namespace cairva::gateway
