#include "sim/engine/tokenizer.h"

#include <cctype>

namespace infertel::sim {
namespace {

bool IsWordChar(unsigned char c) { return std::isalnum(c) != 0 || c >= 0x80; }

}  // namespace

TokenId TokenIdOf(std::string_view piece) {
  // FNV-1a folded into a vocabulary-sized range, clear of small ids (reserved, like the
  // special tokens of real vocabularies).
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : piece) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<TokenId>(1000 + h % 150000);
}

void TokenizeWithText(std::string_view text, std::vector<TokenId>* ids,
                      std::vector<std::string>* pieces) {
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    std::size_t start = i;
    while (i < n && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i == n) {
      // Trailing whitespace is a token of its own.
      std::string_view piece = text.substr(start);
      if (ids) ids->push_back(TokenIdOf(piece));
      if (pieces) pieces->emplace_back(piece);
      break;
    }
    if (IsWordChar(static_cast<unsigned char>(text[i]))) {
      // Long words split every 8 characters, as subword tokenizers do.
      std::size_t word_start = i;
      while (i < n && IsWordChar(static_cast<unsigned char>(text[i])) && i - word_start < 8) ++i;
    } else {
      ++i;
    }
    std::string_view piece = text.substr(start, i - start);
    if (ids) ids->push_back(TokenIdOf(piece));
    if (pieces) pieces->emplace_back(piece);
  }
}

std::vector<TokenId> Tokenize(std::string_view text) {
  std::vector<TokenId> ids;
  TokenizeWithText(text, &ids, nullptr);
  return ids;
}

const std::vector<std::string>& Vocabulary() {
  static const std::vector<std::string> kWords = {
      "the",     "a",       "of",     "to",     "and",     "in",      "is",     "that",
      "for",     "it",      "as",     "with",   "was",     "on",      "be",     "at",
      "by",      "this",    "from",   "or",     "an",      "are",     "which",  "not",
      "model",   "token",   "cache",  "engine", "request", "batch",   "server", "latency",
      "data",    "system",  "time",   "value",  "result",  "process", "memory", "block",
      "queue",   "stream",  "answer", "simple", "quick",   "large",   "small",  "first",
      "second",  "next",    "last",   "new",    "good",    "high",    "low",    "fast",
      "network", "compute", "kernel", "prefix", "decode",  "prefill", "layer",  "vector"};
  return kWords;
}

}  // namespace infertel::sim
