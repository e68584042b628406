#pragma once
// The request-header read of the OTLP/HTTP receiver and the admin address under their
// connection guard's timeouts (http/connection_guard.h). Apart from the guard because it is a
// coroutine: what only counts connections (the receiver's stats) need not see Asio's
// coroutine support.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>

#include "http/connection_guard.h"

namespace infertel::http {

// Reads the next request's header from `stream` under the idle and header timeouts (counted
// when they pass), the slot evictable meanwhile. Then sets the body timeout on the stream
// for the caller's body read; a body read that ends with beast::error::timeout should be
// counted with CountBodyTimeout.
template <typename Parser>
boost::asio::awaitable<boost::system::error_code> ReadRequestHeader(
    boost::beast::tcp_stream& stream, boost::beast::flat_buffer& buffer, Parser& parser,
    ConnectionSlot& slot) {
  namespace asio = boost::asio;
  boost::system::error_code ec;
  slot.Reading();
  const ConnectionLimits& limits = slot.limits();
  if (buffer.size() == 0) {
    // Waiting for the first byte: the keep-alive wait.
    stream.expires_after(limits.idle_timeout);
    const std::size_t n = co_await stream.async_read_some(
        buffer.prepare(1024), asio::redirect_error(asio::use_awaitable, ec));
    buffer.commit(n);
    if (ec == boost::beast::error::timeout) slot.stats().idle_timeout.fetch_add(1);
    if (ec) co_return ec;
  }
  stream.expires_after(limits.header_timeout);
  co_await boost::beast::http::async_read_header(stream, buffer, parser,
                                                 asio::redirect_error(asio::use_awaitable, ec));
  if (ec == boost::beast::error::timeout) slot.stats().header_timeout.fetch_add(1);
  stream.expires_after(limits.body_timeout);
  co_return ec;
}

inline void CountBodyTimeout(const boost::system::error_code& ec, ConnectionSlot& slot) {
  if (ec == boost::beast::error::timeout) slot.stats().body_timeout.fetch_add(1);
}

}  // namespace infertel::http
