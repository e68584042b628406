#pragma once
// A small synchronous HTTP/1.1 client for threads that may block (exporter threads), never
// for io_context threads. It keeps one keep-alive connection to the last host and reconnects
// when the peer closed it. Every phase (resolve+connect, write, read) has its own timeout.
// Plain http:// only.
//
// Thread-safety: one SyncClient per thread; not thread-safe.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/url.h"

namespace infertel::http {

struct SyncTimeouts {
  std::chrono::milliseconds connect{5000};
  std::chrono::milliseconds write{10000};
  std::chrono::milliseconds read{10000};
};

// Why Send failed, for callers that act on the cause rather than print it.
enum class SyncError {
  kNone,
  kUnsupportedScheme,
  kResolve,
  kConnect,
  kTimeout,       // a phase's timeout passed
  kWrite,         // the request could not be written
  kRead,          // the connection failed or the response was malformed
  kBodyTooLarge,  // the response body passed `max_body`: reading stopped there
};

struct SyncResponse {
  int status = 0;
  std::string body;
  // Header names lowercased.
  std::vector<std::pair<std::string, std::string>> headers;
  const std::string* Header(std::string_view lowercase_name) const;
};

class SyncClient {
 public:
  explicit SyncClient(SyncTimeouts timeouts = {});
  ~SyncClient();
  SyncClient(const SyncClient&) = delete;
  SyncClient& operator=(const SyncClient&) = delete;

  // Sends one request and reads the whole response (body up to `max_body` bytes). Returns
  // false with *error on a transport failure (resolve, connect, timeout, reset, malformed
  // response); an HTTP error status is a success of the transport. Host, Content-Length and
  // (for a non-empty body) Content-Type are set here.
  bool Send(std::string_view method, const Url& url,
            const std::vector<std::pair<std::string, std::string>>& headers,
            std::string_view content_type, std::string body, SyncResponse* out, std::string* error,
            std::size_t max_body = 4u * 1024u * 1024u);

  void Close();

  // Why the last Send returned false (kNone after a success).
  SyncError last_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace infertel::http
