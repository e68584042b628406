#pragma once
// The simulator's deterministic tokenizer and vocabulary. Real engines use a model's BPE
// tokenizer; the simulator only needs token counts that grow with the text and ids that are
// stable across runs, so that identical prompts share prefix-cache blocks.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace infertel::sim {

using TokenId = std::uint32_t;

// Splits `text` into tokens: a word (letters/digits) with its leading whitespace, or a single
// punctuation character with its leading whitespace. Ids are a stable hash of the token text.
// Pure function, thread-safe.
std::vector<TokenId> Tokenize(std::string_view text);

// Same split, also returning each token's text.
void TokenizeWithText(std::string_view text, std::vector<TokenId>* ids,
                      std::vector<std::string>* pieces);

// The stable id of one token's text.
TokenId TokenIdOf(std::string_view piece);

// The fixed vocabulary generated text is drawn from. Each entry is one token.
const std::vector<std::string>& Vocabulary();

}  // namespace infertel::sim
