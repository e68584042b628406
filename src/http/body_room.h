#pragma once
// Room in a connection's read buffer for a message body.
//
// Beast reads a message through the connection's flat_buffer, at most the buffer's free room
// per read system call, and never less than 512 bytes. A buffer sized for headers therefore
// reads a large body in small pieces, each with its own system call, reactor wake-up and
// timer update: a 300 KB OTLP export took about 500 reads of ~600 bytes on the OTLP/HTTP
// receiver (9 µs of CPU per span against 2 µs once the room was made), and a 400 KB prompt
// about 200 reads of 2 KiB on the gateway. The readers make room for the body after its
// header and give it back after the message, so that idle connections stay small.

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace infertel::http {

// At most this much room is made for one read: a 300 KB body in about five reads, while a
// connection reading a body holds at most 64 KiB more than its idle buffer.
inline constexpr std::size_t kBodyReadRoom = 64 * 1024;

// Before reading the body of a message whose header `parser` has just read from `buffer`:
// room for up to kBodyReadRoom bytes per read. Bytes of the body already in the buffer need
// none; a body of unknown length (chunked) gets the whole room.
template <bool kIsRequest>
void MakeRoomForBody(boost::beast::flat_buffer& buffer,
                     const boost::beast::http::basic_parser<kIsRequest>& parser) {
  const auto content_length = parser.content_length();
  std::uint64_t want = kBodyReadRoom;
  if (content_length) {
    const std::uint64_t buffered = std::min<std::uint64_t>(buffer.size(), *content_length);
    want = std::min<std::uint64_t>(*content_length - buffered, kBodyReadRoom);
  }
  if (buffer.capacity() - buffer.size() < want)
    buffer.reserve(buffer.size() + static_cast<std::size_t>(want));
}

// After a message: if a body made the buffer grow past a few times `idle_room`, back to the
// bytes it holds (the start of a pipelined next message, if any) plus `idle_room`.
inline void ReleaseBodyRoom(boost::beast::flat_buffer& buffer, std::size_t idle_room) {
  if (buffer.capacity() <= std::max<std::size_t>(4 * idle_room, 4096)) return;
  buffer.shrink_to_fit();
  if (idle_room > 0) buffer.reserve(buffer.size() + idle_room);
}

}  // namespace infertel::http
