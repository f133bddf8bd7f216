// Test certificates through the openssl command-line tool; see test_certificates.h.
#include "common/testing/test_certificates.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vanguard::testing {
namespace {

constexpr char kKeyOptions[] = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
constexpr char kValidDays[] = "2";

// Runs `command` with `dir` as working directory; INTERNAL with its output when it fails.
absl::Status RunIn(const std::string& dir, const std::string& command) {
  const std::string log = dir + "/openssl.log";
  const std::string line = absl::StrCat("cd '", dir, "' && { ", command, "; } >'", log, "' 2>&1");
  if (std::system(line.c_str()) == 0) return absl::OkStatus();
  std::ifstream in(log);
  std::stringstream output;
  output << in.rdbuf();
  return absl::InternalError(absl::StrCat("`", command, "` failed: ", output.str()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TestCertificates>> TestCertificates::Create(
    const std::string& ca_name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir_template =
      absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/vanguard-certs.XXXXXX");
  if (mkdtemp(dir_template.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", dir_template, " failed"));
  }
  std::unique_ptr<TestCertificates> certs(new TestCertificates());
  certs->dir_ = dir_template;
  certs->ca_cert_ = certs->dir_ + "/ca.crt";
  certs->ca_key_ = certs->dir_ + "/ca.key";
  absl::Status made = RunIn(certs->dir_, absl::StrCat("openssl req -x509 ", kKeyOptions,
                                                      " -keyout ca.key -out ca.crt -days ",
                                                      kValidDays, " -subj '/CN=", ca_name, "'"));
  if (!made.ok()) return made;
  return certs;
}

TestCertificates::~TestCertificates() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

absl::StatusOr<CertificateFiles> TestCertificates::Issue(const std::string& name) {
  const std::string base = absl::StrCat("leaf", ++issued_);
  {
    std::ofstream ext(absl::StrCat(dir_, "/", base, ".ext"));
    ext << "basicConstraints=CA:FALSE\n"
        << "keyUsage=critical,digitalSignature,keyAgreement\n"
        << "extendedKeyUsage=serverAuth,clientAuth\n"
        << "subjectAltName=DNS:" << name << ",DNS:localhost,IP:127.0.0.1,IP:::1\n";
    if (!ext) return absl::InternalError(absl::StrCat("cannot write ", dir_, "/", base, ".ext"));
  }
  absl::Status status =
      RunIn(dir_, absl::StrCat("openssl req -new ", kKeyOptions, " -keyout ", base, ".key -out ",
                               base, ".csr -subj '/CN=", name, "' && openssl x509 -req -in ", base,
                               ".csr -CA ca.crt -CAkey ca.key -CAcreateserial -days ", kValidDays,
                               " -extfile ", base, ".ext -out ", base, ".crt"));
  if (!status.ok()) return status;
  return CertificateFiles{.cert = absl::StrCat(dir_, "/", base, ".crt"),
                          .key = absl::StrCat(dir_, "/", base, ".key")};
}

}  // namespace vanguard::testing
