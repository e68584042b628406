#pragma once
// Readers of request-body fields shared by the simulated surfaces. A JSON null counts as
// absent, as it does for the engines' request models (pydantic Optional fields).

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace infertel::sim {

std::optional<simdjson::dom::element> Field(const simdjson::dom::object& o, std::string_view key);
bool GetBool(const simdjson::dom::object& o, std::string_view key, bool def);
// An integer field; a float is truncated, as the engines' int coercion does.
std::optional<std::int64_t> GetInt(const simdjson::dom::object& o, std::string_view key);
std::optional<double> GetDouble(const simdjson::dom::object& o, std::string_view key);
std::optional<std::string> GetStr(const simdjson::dom::object& o, std::string_view key);
// Text of a chat message's content: a string, or the concatenated text of a list of parts.
std::string ContentText(const simdjson::dom::element& content);
// Appends chat messages as the ChatML template both engines' default models use: each as
// "<|im_start|>ROLE\nTEXT<|im_end|>\n" (a message without a role is the user's), then the
// assistant's opening.
void AppendChatTurns(const simdjson::dom::array& messages, std::string* text);

}  // namespace infertel::sim
