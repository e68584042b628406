#include "http/flat_write.h"

namespace infertel::http {
namespace {

void AppendVersion(unsigned version, std::string* out) {
  out->append("HTTP/");
  out->push_back(static_cast<char>('0' + version / 10));
  out->push_back('.');
  out->push_back(static_cast<char>('0' + version % 10));
}

void AppendFields(const boost::beast::http::fields& f, std::string* out) {
  for (const auto& field : f) {
    out->append(field.name_string());
    out->append(": ");
    out->append(field.value());
    out->append("\r\n");
  }
  out->append("\r\n");
}

}  // namespace

void AppendHead(const boost::beast::http::request_header<>& h, std::string* out) {
  out->append(h.method_string());
  out->push_back(' ');
  out->append(h.target());
  out->push_back(' ');
  AppendVersion(h.version(), out);
  out->append("\r\n");
  AppendFields(h, out);
}

void AppendHead(const boost::beast::http::response_header<>& h, std::string* out) {
  AppendVersion(h.version(), out);
  const unsigned code = h.result_int();
  const char status[] = {' ', static_cast<char>('0' + code / 100),
                         static_cast<char>('0' + code / 10 % 10),
                         static_cast<char>('0' + code % 10), ' '};
  out->append(status, sizeof status);
  out->append(h.reason());
  out->append("\r\n");
  AppendFields(h, out);
}

}  // namespace infertel::http
