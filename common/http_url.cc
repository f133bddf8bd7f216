#include "common/http_url.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace vanguard {
namespace {

// Printable ASCII but space: anything else could end the request line or add a header.
bool IsUrlByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u > 0x20 && u < 0x7f;
}

bool IsHostNameByte(char c) { return absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_'; }

bool IsIpv6Byte(char c) { return absl::ascii_isxdigit(c) || c == ':' || c == '.'; }

class UrlErrors {
 public:
  UrlErrors(absl::string_view what, UrlSchemes schemes)
      : prefix_(absl::StrCat(what, " must be ",
                             schemes == UrlSchemes::kHttpOnly ? "http" : "http(s)",
                             "://host[:port][/path][?query]: ")) {}
  absl::Status operator()(absl::string_view rule) const {
    return absl::InvalidArgumentError(absl::StrCat(prefix_, rule));
  }

 private:
  std::string prefix_;
};

// Splits "host[:port]" or "[v6][:port]" into url->host and url->port (kept when absent).
absl::Status ParseAuthority(absl::string_view authority, const UrlErrors& bad, HttpUrl* url) {
  if (absl::StrContains(authority, '@')) return bad("user@ credentials are not allowed");
  absl::string_view port;
  if (absl::ConsumePrefix(&authority, "[")) {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) return bad("unclosed [ in the host");
    absl::string_view host = authority.substr(0, close);
    if (host.empty() || !std::all_of(host.begin(), host.end(), IsIpv6Byte)) {
      return bad("malformed IPv6 host");
    }
    url->host = std::string(host);
    authority.remove_prefix(close + 1);
    if (!authority.empty()) {
      if (!absl::ConsumePrefix(&authority, ":")) return bad("malformed IPv6 host");
      if (authority.empty()) return bad("the port must be a number from 1 to 65535");
      port = authority;
    }
  } else {
    const size_t colon = authority.find(':');
    absl::string_view host = authority.substr(0, colon);
    if (host.empty() || !std::all_of(host.begin(), host.end(), IsHostNameByte)) {
      return bad("the host must be a name or an address");
    }
    url->host = std::string(host);
    if (colon != absl::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return bad("the port must be a number from 1 to 65535");
    }
  }
  if (port.empty()) return absl::OkStatus();
  if (port.size() > 5 || !std::all_of(port.begin(), port.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(port, &url->port) || url->port < 1 || url->port > 65535) {
    return bad("the port must be a number from 1 to 65535");
  }
  return absl::OkStatus();
}

}  // namespace

std::string HttpUrl::HostPort() const {
  return absl::StrContains(host, ':') ? absl::StrCat("[", host, "]:", port)
                                      : absl::StrCat(host, ":", port);
}

std::string HttpUrl::HostHeader() const {
  if (port != (tls ? 443 : 80)) return HostPort();
  return absl::StrContains(host, ':') ? absl::StrCat("[", host, "]") : host;
}

absl::StatusOr<HttpUrl> ParseHttpUrl(absl::string_view url, UrlSchemes schemes,
                                     absl::string_view what) {
  const UrlErrors bad(what, schemes);
  HttpUrl parsed;
  absl::string_view rest = url;
  if (schemes == UrlSchemes::kHttpOrHttps && absl::ConsumePrefix(&rest, "https://")) {
    parsed.tls = true;
    parsed.port = 443;
  } else if (!absl::ConsumePrefix(&rest, "http://")) {
    return bad(schemes == UrlSchemes::kHttpOnly ? "the scheme must be http://"
                                                : "the scheme must be http:// or https://");
  }
  if (!std::all_of(url.begin(), url.end(), IsUrlByte)) {
    return bad("only printable ASCII without spaces is allowed (percent-encode the rest)");
  }
  const size_t authority_end = rest.find_first_of("/?#");
  if (absl::Status s = ParseAuthority(rest.substr(0, authority_end), bad, &parsed); !s.ok()) {
    return s;
  }
  absl::string_view target =
      authority_end == absl::string_view::npos ? "" : rest.substr(authority_end);
  target = target.substr(0, target.find('#'));
  parsed.target = absl::StrCat(absl::StartsWith(target, "/") ? "" : "/", target);
  return parsed;
}

}  // namespace vanguard
