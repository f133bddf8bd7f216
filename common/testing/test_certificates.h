// Certificates made at test time with the `openssl` command-line tool, so no key is checked in
// and none expires in the repository: a CA of its own per TestCertificates, and leaf
// certificates it signs, as PEM files in a fresh temporary directory removed on destruction.
// Every certificate is valid for 2 days from its making (EC P-256 keys, unencrypted).
//
//   ASSIGN_OR_RETURN(auto certs, TestCertificates::Create("test-ca"));
//   ASSIGN_OR_RETURN(CertificateFiles server, certs->Issue("localhost"));
//   ASSIGN_OR_RETURN(CertificateFiles worker, certs->Issue("worker-7"));
//   // --tls_cert=server.cert --tls_key=server.key --tls_client_ca=certs->ca_cert()
//
// A leaf is usable as a server and as a client certificate: subject CN=<name>, subject
// alternative names DNS:<name>, DNS:localhost, IP:127.0.0.1, IP:::1. Errors: INTERNAL with
// openssl's output when a command fails (or openssl is missing). Called from one test thread.
#ifndef VANGUARD_COMMON_TESTING_TEST_CERTIFICATES_H_
#define VANGUARD_COMMON_TESTING_TEST_CERTIFICATES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace vanguard::testing {

struct CertificateFiles {
  std::string cert;  // path of the PEM certificate
  std::string key;   // path of its PEM private key
};

class TestCertificates {
 public:
  // A new CA with subject CN=ca_name.
  static absl::StatusOr<std::unique_ptr<TestCertificates>> Create(const std::string& ca_name);
  ~TestCertificates();
  TestCertificates(const TestCertificates&) = delete;
  TestCertificates& operator=(const TestCertificates&) = delete;

  const std::string& ca_cert() const { return ca_cert_; }
  const std::string& dir() const { return dir_; }

  // A leaf certificate for `name` (CN and DNS SAN) signed by this CA.
  absl::StatusOr<CertificateFiles> Issue(const std::string& name);

 private:
  TestCertificates() = default;
  std::string dir_;
  std::string ca_cert_;
  std::string ca_key_;
  int issued_ = 0;
};

}  // namespace vanguard::testing

#endif  // VANGUARD_COMMON_TESTING_TEST_CERTIFICATES_H_
