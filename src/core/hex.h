#pragma once
// Hex encoding of arbitrary byte strings (span ids in protobuf `bytes` fields and the like).

#include <string>
#include <string_view>

namespace infertel {

std::string BytesToHex(std::string_view bytes);
// Appends the hex of `bytes` to *out (a buffer reused from call to call allocates nothing).
void AppendHex(std::string* out, std::string_view bytes);
// Decodes lowercase or uppercase hex; returns false on odd length or a bad character.
bool HexToBytes(std::string_view hex, std::string* out);

}  // namespace infertel
