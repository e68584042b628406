#pragma once
// Protobuf wire primitives shared by the export encoders (encode.h, span_wire.cc): a
// length-delimited field's head, a string field, and a message field written with the size
// its last ByteSizeLong() cached. Callers reserve the room first; nothing here checks it.

#include <cstddef>
#include <cstdint>
#include <string>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

namespace infertel::pipeline::wire {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedOutputStream;

// Bytes a length-delimited field of `len` bytes takes, tag and length included.
inline std::size_t LengthDelimited(int field, std::size_t len) {
  return static_cast<std::size_t>(CodedOutputStream::VarintSize32(
             WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED))) +
         static_cast<std::size_t>(CodedOutputStream::VarintSize64(len)) + len;
}

inline std::uint8_t* WriteHead(int field, std::size_t len, std::uint8_t* p) {
  p = CodedOutputStream::WriteTagToArray(
      WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED), p);
  return CodedOutputStream::WriteVarint64ToArray(len, p);
}

inline std::uint8_t* WriteString(int field, const std::string& s, std::uint8_t* p) {
  p = WriteHead(field, s.size(), p);
  return CodedOutputStream::WriteRawToArray(s.data(), static_cast<int>(s.size()), p);
}

// A message field, written by protobuf with the sizes its last ByteSizeLong() cached.
template <typename M>
std::uint8_t* WriteMessage(int field, const M& m, std::uint8_t* p) {
  p = WriteHead(field, static_cast<std::size_t>(m.GetCachedSize()), p);
  return m.SerializeWithCachedSizesToArray(p);
}

}  // namespace infertel::pipeline::wire
