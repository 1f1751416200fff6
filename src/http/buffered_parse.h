// parse_buffered: feeds a Beast parser the bytes a read already left in the buffer, the
// way Beast's read operations start, but without their asynchronous completion: a
// request's body usually arrives with its header, and a provider's body with its status
// line, so the common case needs no second operation on the socket (each costs a trip
// through the event loop).
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>

namespace cairva::http {

// True when the parser needs nothing more from the socket: it has its header
// (`header_only`) or its whole message, or it failed (`ec` set). False when the buffered
// bytes ran out first: read the rest with Beast's async_read_header / async_read.
template <bool isRequest>
bool parse_buffered(boost::beast::http::basic_parser<isRequest>& parser,
                    boost::beast::flat_buffer& buffer, bool header_only,
                    boost::system::error_code& ec) {
  parser.eager(!header_only);  // as async_read_header / async_read set it
  auto enough = [&] { return header_only ? parser.is_header_done() : parser.is_done(); };
  while (!enough() && buffer.size() > 0) {
    const size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == boost::beast::http::error::need_more) {
      ec = {};
      return false;
    }
    if (ec) return true;
    if (used == 0) break;
  }
  return enough();
}

}  // namespace cairva::http
