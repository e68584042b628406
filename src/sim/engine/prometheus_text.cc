#include "sim/engine/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace infertel::sim {
namespace {

void EscapeLabelValue(std::string* out, std::string_view v) {
  for (char c : v) {
    if (c == '\\')
      *out += "\\\\";
    else if (c == '"')
      *out += "\\\"";
    else if (c == '\n')
      *out += "\\n";
    else
      *out += c;
  }
}

}  // namespace

std::string PromFloat(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  // Python repr: shortest round-trip digits; fixed notation for exponents in [-4, 16).
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = !sci.empty() && sci[0] == '-';
  if (neg) sci.erase(0, 1);
  auto epos = sci.find('e');
  int exp = std::stoi(sci.substr(epos + 1));
  std::string digits;
  for (std::size_t i = 0; i < epos; ++i)
    if (sci[i] != '.') digits += sci[i];
  std::string s;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      s = "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exp + 1) {
      s = digits + std::string(static_cast<std::size_t>(exp + 1 - digits.size()), '0') + ".0";
    } else {
      s = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
  } else {
    s = digits.substr(0, 1);
    if (digits.size() > 1) s += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof(e), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    s += e;
  }
  if (neg) s = "-" + s;
  // prometheus_client then switches to an exponent sooner, the way Go formats floats.
  auto dot = s.find('.');
  if (d > 0 && dot != std::string::npos && dot > 6 && s.find('e') == std::string::npos) {
    std::string mantissa = s.substr(0, 1) + "." + s.substr(1, dot - 1) + s.substr(dot + 1);
    while (!mantissa.empty() && (mantissa.back() == '0' || mantissa.back() == '.'))
      mantissa.pop_back();
    s = mantissa + "e+0" + std::to_string(dot - 1);
  }
  return s;
}

std::string PromLabelText(PromLabels labels) {
  if (labels.empty()) return "";
  std::sort(labels.begin(), labels.end());
  std::string s = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) s += ',';
    s += labels[i].first;
    s += "=\"";
    EscapeLabelValue(&s, labels[i].second);
    s += '"';
  }
  s += '}';
  return s;
}

}  // namespace infertel::sim
