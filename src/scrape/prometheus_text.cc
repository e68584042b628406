#include "scrape/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <system_error>
#include <unordered_map>

namespace infertel::scrape {

std::string_view MetricTypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
    case MetricType::kInfo:
      return "info";
    case MetricType::kStateSet:
      return "stateset";
    case MetricType::kGaugeHistogram:
      return "gaugehistogram";
    case MetricType::kUntyped:
      break;
  }
  return "untyped";
}

const std::string* Sample::Label(std::string_view name) const {
  for (const auto& [k, v] : labels)
    if (k == name) return &v;
  return nullptr;
}

const Family* ParseResult::Find(std::string_view name) const {
  for (const auto& f : families)
    if (f.name == name) return &f;
  return nullptr;
}

namespace {

constexpr std::string_view kSuffixes[] = {"_total", "_created", "_bucket", "_count",
                                          "_sum",   "_info",    "_gcount", "_gsum"};

constexpr bool IsLabelStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
constexpr bool IsLabelChar(char c) { return IsLabelStart(c) || (c >= '0' && c <= '9'); }
constexpr bool IsNameStart(char c) { return IsLabelStart(c) || c == ':'; }
constexpr bool IsNameChar(char c) { return IsLabelChar(c) || c == ':'; }
constexpr bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::size_t SkipBlanks(std::string_view s, std::size_t i) {
  while (i < s.size() && IsBlank(s[i])) ++i;
  return i;
}

std::size_t TokenEnd(std::string_view s, std::size_t i) {
  while (i < s.size() && !IsBlank(s[i])) ++i;
  return i;
}

std::size_t NameEnd(std::string_view s, std::size_t i) {
  if (i >= s.size() || !IsNameStart(s[i])) return i;
  ++i;
  while (i < s.size() && IsNameChar(s[i])) ++i;
  return i;
}

// Go's strconv.ParseFloat, which Prometheus uses, accepts a leading '+'; from_chars does not.
bool ParseDouble(std::string_view tok, double& out) {
  if (!tok.empty() && tok.front() == '+') {
    tok.remove_prefix(1);
    if (!tok.empty() && (tok.front() == '+' || tok.front() == '-')) return false;
  }
  if (tok.empty()) return false;
  const char* end = tok.data() + tok.size();
  auto [p, ec] = std::from_chars(tok.data(), end, out);
  return ec == std::errc() && p == end;
}

bool ParseInt64(std::string_view tok, std::int64_t& out) {
  if (!tok.empty() && tok.front() == '+') {
    tok.remove_prefix(1);
    if (!tok.empty() && tok.front() == '-') return false;
  }
  if (tok.empty()) return false;
  const char* end = tok.data() + tok.size();
  auto [p, ec] = std::from_chars(tok.data(), end, out);
  return ec == std::errc() && p == end;
}

std::optional<MetricType> TypeFromWord(std::string_view w) {
  if (w == "counter") return MetricType::kCounter;
  if (w == "gauge") return MetricType::kGauge;
  if (w == "histogram") return MetricType::kHistogram;
  if (w == "summary") return MetricType::kSummary;
  if (w == "untyped" || w == "unknown") return MetricType::kUntyped;
  if (w == "info") return MetricType::kInfo;
  if (w == "stateset") return MetricType::kStateSet;
  if (w == "gaugehistogram") return MetricType::kGaugeHistogram;
  return std::nullopt;
}

// HELP text: \\ and \n are escapes; any other backslash is kept as written.
std::string UnescapeHelp(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '\\' || s[i + 1] == 'n')) {
      out += s[i + 1] == 'n' ? '\n' : '\\';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool HasDuplicateNames(const Labels& labels) {
  if (labels.size() < 2) return false;
  if (labels.size() <= 16) {
    for (std::size_t i = 1; i < labels.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (labels[i].first == labels[j].first) return true;
    return false;
  }
  // Keeps long label sets (a 1 MiB line can hold many) from going quadratic.
  std::vector<std::string_view> names;
  names.reserve(labels.size());
  for (const auto& l : labels) names.emplace_back(l.first);
  std::sort(names.begin(), names.end());
  return std::adjacent_find(names.begin(), names.end()) != names.end();
}

class Parser {
 public:
  Parser(std::string_view text, const ParseOptions& options) : text_(text), options_(options) {
    // About one family per 500 bytes in the engines' real scrapes; capped so a huge body
    // cannot make the reservation itself large.
    const std::size_t guess = std::min<std::size_t>(text.size() / 512 + 8, 4096);
    out_.families.reserve(guess);
    index_.reserve(guess);
  }

  ParseResult Run() && {
    std::size_t pos = 0;
    while (pos < text_.size() && !eof_) {
      std::size_t nl = text_.find('\n', pos);
      const std::size_t end = nl == std::string_view::npos ? text_.size() : nl;
      std::string_view line = text_.substr(pos, end - pos);
      pos = end + 1;
      ++line_no_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.size() > kMaxLineBytes) {
        Fail("line longer than 1 MiB");
        continue;
      }
      const std::size_t start = SkipBlanks(line, 0);
      if (start == line.size()) continue;
      line.remove_prefix(start);
      if (line.front() == '#')
        CommentLine(line.substr(1));
      else
        SampleLine(line);
    }
    return std::move(out_);
  }

 private:
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

  void Fail(std::string_view why) {
    ++out_.malformed_lines;
    if (out_.errors.size() < kMaxParseErrors) {
      std::string e = "line ";
      e += std::to_string(line_no_);
      e += ": ";
      e += why;
      out_.errors.push_back(std::move(e));
    }
  }

  // `name` must be a slice of text_: the index keys point into it.
  std::size_t AddFamily(std::string_view name) {
    const std::size_t idx = out_.families.size();
    out_.families.emplace_back().name.assign(name);
    index_.emplace(name, idx);
    return idx;
  }

  std::size_t Lookup(std::string_view name) const {
    auto it = index_.find(name);
    return it == index_.end() ? kNone : it->second;
  }

  void CommentLine(std::string_view rest) {
    std::size_t i = SkipBlanks(rest, 0);
    const std::size_t kw_end = TokenEnd(rest, i);
    const std::string_view kw = rest.substr(i, kw_end - i);
    if (kw == "EOF") {
      if (SkipBlanks(rest, kw_end) == rest.size()) eof_ = true;
      return;
    }
    if (kw != "HELP" && kw != "TYPE" && kw != "UNIT") return;  // a plain comment
    i = SkipBlanks(rest, kw_end);
    const std::size_t name_end = NameEnd(rest, i);
    if (name_end == i || (name_end < rest.size() && !IsBlank(rest[name_end]))) {
      Fail(kw == "HELP"   ? "bad metric name in # HELP"
           : kw == "TYPE" ? "bad metric name in # TYPE"
                          : "bad metric name in # UNIT");
      return;
    }
    const std::string_view name = rest.substr(i, name_end - i);
    const std::string_view arg = rest.substr(SkipBlanks(rest, name_end));
    MetricType type = MetricType::kUntyped;
    if (kw == "TYPE") {
      const std::string_view word = arg.substr(0, TokenEnd(arg, 0));
      auto t = TypeFromWord(word);
      if (!t || SkipBlanks(arg, word.size()) != arg.size()) {
        Fail("unknown metric type in # TYPE");
        return;
      }
      type = *t;
    }
    std::size_t idx = Lookup(name);
    if (idx == kNone) {
      if (!Wanted(name)) {
        current_ = kNone;  // its samples must not join the previous family
        return;
      }
      idx = AddFamily(name);
    }
    current_ = idx;
    Family& f = out_.families[idx];
    if (kw == "HELP")
      f.help = UnescapeHelp(arg);
    else if (kw == "TYPE")
      f.type = type;
    else
      f.unit.assign(arg);
  }

  // Returns false with `why` set when the label set is malformed; `i` is just past '{' on
  // entry and just past '}' on success.
  static bool ParseLabels(std::string_view s, std::size_t& i, Labels& labels, const char*& why) {
    for (;;) {
      i = SkipBlanks(s, i);
      if (i >= s.size()) return why = "unterminated label set", false;
      if (s[i] == '}') {  // also `{}` and a trailing comma
        ++i;
        return true;
      }
      if (!IsLabelStart(s[i])) return why = "bad label name", false;
      const std::size_t name_start = i;
      while (i < s.size() && IsLabelChar(s[i])) ++i;
      const std::string_view name = s.substr(name_start, i - name_start);
      i = SkipBlanks(s, i);
      if (i >= s.size() || s[i] != '=') return why = "expected '=' after label name", false;
      i = SkipBlanks(s, i + 1);
      if (i >= s.size() || s[i] != '"') return why = "expected '\"' to open label value", false;
      ++i;
      std::string value;
      for (;;) {
        const std::size_t stop = s.find_first_of("\"\\", i);
        if (stop == std::string_view::npos) return why = "unterminated label value", false;
        value.append(s.data() + i, stop - i);
        i = stop;
        if (s[i] == '"') break;
        if (i + 1 >= s.size()) return why = "unterminated label value", false;
        const char esc = s[i + 1];
        if (esc == 'n') {
          value += '\n';
        } else if (esc == '\\' || esc == '"') {
          value += esc;
        } else {  // unknown escape: kept as written, as Prometheus does
          value += '\\';
          value += esc;
        }
        i += 2;
      }
      ++i;  // the closing quote
      labels.emplace_back(std::string(name), std::move(value));
      i = SkipBlanks(s, i);
      if (i >= s.size()) return why = "unterminated label set", false;
      if (s[i] == ',') {
        ++i;
      } else if (s[i] != '}') {
        return why = "expected ',' or '}' after label value", false;
      }
    }
  }

  bool ParseTimestamp(std::string_view tok, std::int64_t& ms) const {
    const bool fractional = tok.find_first_of(".eE") != std::string_view::npos;
    if (!fractional) {
      if (!ParseInt64(tok, ms)) return false;
      if (!options_.openmetrics) return true;
      if (ms > std::numeric_limits<std::int64_t>::max() / 1000 ||
          ms < std::numeric_limits<std::int64_t>::min() / 1000)
        return false;
      ms *= 1000;
      return true;
    }
    // OpenMetrics: seconds with a fraction.
    double seconds = 0;
    if (!ParseDouble(tok, seconds) || !std::isfinite(seconds)) return false;
    const double v = std::round(seconds * 1000.0);
    if (!(v > -9.2e18 && v < 9.2e18)) return false;
    ms = static_cast<std::int64_t>(v);
    return true;
  }

  bool Wanted(std::string_view family) const {
    return !options_.keep_family || options_.keep_family(family);
  }

  void SampleLine(std::string_view line) {
    const std::size_t name_end = NameEnd(line, 0);
    if (name_end == 0) return Fail("bad metric name");
    const std::string_view name = line.substr(0, name_end);
    std::size_t idx = ExistingFamilyFor(name);
    // Both before the labels are read: a skipped sample costs a scan of its line, no memory.
    if (idx == kNone && !Wanted(name)) return;
    if (options_.keep_sample && !options_.keep_sample(name)) return;
    if (options_.max_samples != 0 && kept_samples_ >= options_.max_samples) {
      ++out_.samples_over_limit;
      return;
    }
    Sample s;
    std::size_t i = name_end;
    std::size_t j = SkipBlanks(line, i);
    if (j < line.size() && line[j] == '{') {
      i = j + 1;
      const char* why = nullptr;
      if (!ParseLabels(line, i, s.labels, why)) return Fail(why);
      if (HasDuplicateNames(s.labels)) return Fail("duplicate label name");
      j = SkipBlanks(line, i);
    }
    if (j >= line.size()) return Fail("missing value");
    if (j == i) return Fail(i == name_end ? "bad metric name" : "no space before value");
    const std::size_t value_end = TokenEnd(line, j);
    if (!ParseDouble(line.substr(j, value_end - j), s.value)) return Fail("bad value");
    i = SkipBlanks(line, value_end);
    if (i < line.size() && line[i] != '#') {
      const std::size_t ts_end = TokenEnd(line, i);
      std::int64_t ms = 0;
      if (!ParseTimestamp(line.substr(i, ts_end - i), ms)) return Fail("bad timestamp");
      s.timestamp_ms = ms;
      i = SkipBlanks(line, ts_end);
    }
    // Whatever follows ` # ` is an OpenMetrics exemplar: not kept.
    if (i < line.size() && line[i] != '#') return Fail("unexpected text after sample");

    if (idx == kNone) idx = AddFamily(name);
    s.name.assign(name);
    auto& samples = out_.families[idx].samples;
    if (samples.empty()) samples.reserve(4);
    samples.push_back(std::move(s));
    ++kept_samples_;
  }

  static bool IsMemberName(std::string_view sample, std::string_view family) {
    if (sample.size() < family.size() || sample.substr(0, family.size()) != family) return false;
    const std::string_view rest = sample.substr(family.size());
    if (rest.empty()) return true;
    return std::find(std::begin(kSuffixes), std::end(kSuffixes), rest) != std::end(kSuffixes);
  }

  // The existing family a sample named `name` belongs to, or kNone when it starts a family
  // of its own.
  std::size_t ExistingFamilyFor(std::string_view name) const {
    if (current_ != kNone && IsMemberName(name, out_.families[current_].name)) return current_;
    if (std::size_t idx = Lookup(name); idx != kNone) return idx;
    for (std::string_view suffix : kSuffixes) {
      if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
      const std::string_view base = name.substr(0, name.size() - suffix.size());
      if (std::size_t idx = Lookup(base); idx != kNone) return idx;
      if (suffix == "_created") {  // 0.0.4 counters are named with their _total
        std::string total(base);
        total += "_total";
        if (std::size_t idx = Lookup(total); idx != kNone) return idx;
      }
      break;  // the suffixes are mutually exclusive as endings
    }
    return kNone;
  }

  std::string_view text_;
  ParseOptions options_;
  ParseResult out_;
  // Keys are slices of text_, which outlives the parse; Family::name strings may move.
  std::unordered_map<std::string_view, std::size_t> index_;
  std::size_t current_ = kNone;  // the family of the latest # HELP/TYPE/UNIT
  std::size_t line_no_ = 0;
  std::size_t kept_samples_ = 0;
  bool eof_ = false;
};

}  // namespace

ParseResult ParsePrometheusText(std::string_view text) {
  return ParsePrometheusText(text, ParseOptions{});
}

ParseResult ParsePrometheusText(std::string_view text, const ParseOptions& options) {
  return Parser(text, options).Run();
}

}  // namespace infertel::scrape
