#include "sim/sglang/sglang_options.h"

#include <charconv>

namespace infertel::sim {

bool ParseSglangVersion(std::string_view text, SglangVersion* out) {
  if (!text.empty() && (text[0] == 'v' || text[0] == 'V')) text.remove_prefix(1);
  int parts[3] = {0, 0, 0};
  int n = 0;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  while (n < 3 && p < end) {
    auto r = std::from_chars(p, end, parts[n]);
    if (r.ec != std::errc() || parts[n] < 0) return false;
    ++n;
    p = r.ptr;
    if (p == end) break;
    if (*p != '.') {
      // A tail such as "post1", "rc0", "dev889+g…" only after MAJOR.MINOR.PATCH… is ignored.
      if (n < 2) return false;
      break;
    }
    ++p;
    if (n == 3) break;
    if (p < end && (*p < '0' || *p > '9')) {
      if (n < 2) return false;
      break;
    }
  }
  if (n < 2) return false;
  out->major = parts[0];
  out->minor = parts[1];
  out->patch = parts[2];
  return true;
}

SglangEra::SglangEra(const SglangVersion& v) {
  tracing = v.AtLeast(0, 5, 3);
  trace_levels = v.AtLeast(0, 5, 9);
  trace_level_env = v.AtLeast(0, 5, 12);
  api_server_dispatch_name = v.AtLeast(0, 5, 12);
  pp_rank = v.AtLeast(0, 5, 13);
  spec_stages = v.AtLeast(0, 5, 10);
  bootstrap_room_span = tracing && !trace_levels;
  if (!v.AtLeast(0, 4, 0)) {
    metrics = Metrics::k035;
  } else if (!v.AtLeast(0, 5, 0)) {
    metrics = Metrics::k04;
  } else if (!v.AtLeast(0, 5, 9)) {
    metrics = Metrics::kMid;
  } else {
    metrics = Metrics::kNewest;
  }
  default_log_requests_level = v.AtLeast(0, 4, 0) ? 2 : 0;
}

}  // namespace infertel::sim
