// TLS credentials from PEM files; see grpc_tls.h. OpenSSL parses the files at start so that a
// wrong file is named by its flag instead of failing later in a handshake.
#include "common/grpc_tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "grpc/grpc_security_constants.h"

namespace vanguard {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Every certificate in `pem`, in order; empty when none parses.
std::vector<X509Ptr> ParseCertificates(const std::string& pem) {
  std::vector<X509Ptr> certs;
  BioPtr bio = MemoryBio(pem);
  while (bio != nullptr) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (cert == nullptr) break;
    certs.push_back(std::move(cert));
  }
  ERR_clear_error();  // the end of the input reads as an error
  return certs;
}

KeyPtr ParsePrivateKey(const std::string& pem) {
  BioPtr bio = MemoryBio(pem);
  KeyPtr key(bio == nullptr ? nullptr
                            : PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  return key;
}

absl::Status BadFile(const std::string& flag, const std::string& path, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, " ", path, ": ", why));
}

// Far above any certificate chain or key; a larger file is a wrong path (a log, a binary).
constexpr size_t kMaxPemBytes = 1 << 20;

// The file's bytes; INVALID_ARGUMENT naming the flag when unreadable, empty or too large.
absl::StatusOr<std::string> ReadPemFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadFile(flag, path, "cannot be read");
  std::string contents(kMaxPemBytes + 1, '\0');
  in.read(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (in.bad()) return BadFile(flag, path, "cannot be read");
  contents.resize(static_cast<size_t>(in.gcount()));
  if (contents.empty()) return BadFile(flag, path, "is empty");
  if (contents.size() > kMaxPemBytes) return BadFile(flag, path, "is larger than 1 MiB");
  return contents;
}

absl::Status RequireTogether(const TlsFilePaths& paths) {
  if (paths.cert.empty() != paths.key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", paths.cert_flag, " and --", paths.key_flag, " go together"));
  }
  return absl::OkStatus();
}

// Reads paths.cert and paths.key and checks that they belong together.
absl::Status ReadCertAndKey(const TlsFilePaths& paths, std::string* cert, std::string* key) {
  ASSIGN_OR_RETURN(*cert, ReadCertificatePem(paths.cert_flag, paths.cert));
  ASSIGN_OR_RETURN(*key, ReadPemFile(paths.key_flag, paths.key));
  return CheckCertificateAndKey(
      absl::StrCat("--", paths.cert_flag, " ", paths.cert, " / --", paths.key_flag, " ", paths.key),
      *cert, *key);
}

}  // namespace

absl::StatusOr<std::string> ReadCertificatePem(const std::string& flag, const std::string& path) {
  ASSIGN_OR_RETURN(std::string pem, ReadPemFile(flag, path));
  if (ParseCertificates(pem).empty()) {
    return BadFile(flag, path, "holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
  }
  return pem;
}

absl::Status CheckCertificateAndKey(const std::string& what, const std::string& cert_chain,
                                    const std::string& private_key) {
  std::vector<X509Ptr> certs = ParseCertificates(cert_chain);
  if (certs.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": no PEM certificate"));
  KeyPtr key = ParsePrivateKey(private_key);
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": no PEM private key (unencrypted, -----BEGIN ... PRIVATE KEY-----)"));
  }
  const bool match = X509_check_private_key(certs.front().get(), key.get()) == 1;
  ERR_clear_error();
  if (!match) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the private key does not belong to the certificate"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ServerTls> LoadServerTls(const TlsFilePaths& paths) {
  RETURN_IF_ERROR(RequireTogether(paths));
  ServerTls tls;
  if (paths.cert.empty()) {
    if (!paths.ca.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", paths.ca_flag, " needs --", paths.cert_flag, " and --", paths.key_flag,
                       " (client certificates are asked for only over TLS)"));
    }
    return tls;
  }
  RETURN_IF_ERROR(ReadCertAndKey(paths, &tls.cert_chain, &tls.private_key));
  if (!paths.ca.empty()) {
    ASSIGN_OR_RETURN(tls.client_ca, ReadCertificatePem(paths.ca_flag, paths.ca));
  }
  return tls;
}

absl::StatusOr<ChannelTls> LoadChannelTls(const TlsFilePaths& paths) {
  RETURN_IF_ERROR(RequireTogether(paths));
  ChannelTls tls;
  if (paths.ca.empty()) {
    if (!paths.cert.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", paths.cert_flag, " needs --", paths.ca_flag,
                       " (a client certificate is sent only over TLS)"));
    }
    return tls;
  }
  tls.enabled = true;
  ASSIGN_OR_RETURN(tls.root_certs, ReadCertificatePem(paths.ca_flag, paths.ca));
  if (!paths.cert.empty())
    RETURN_IF_ERROR(ReadCertAndKey(paths, &tls.cert_chain, &tls.private_key));
  return tls;
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const ServerTls& tls) {
  if (tls.cert_chain.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      tls.client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls.client_ca;
  options.pem_key_cert_pairs.push_back({tls.private_key, tls.cert_chain});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const ChannelTls& tls) {
  if (!tls.enabled) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls.root_certs;
  options.pem_cert_chain = tls.cert_chain;
  options.pem_private_key = tls.private_key;
  return grpc::SslCredentials(options);
}

std::vector<std::string> PeerCertificateNames(const grpc::AuthContext& context) {
  std::vector<std::string> names;
  for (const char* property : {GRPC_X509_CN_PROPERTY_NAME, GRPC_X509_SAN_PROPERTY_NAME}) {
    for (const grpc::string_ref& value : context.FindPropertyValues(property)) {
      names.emplace_back(value.data(), value.size());
    }
  }
  return names;
}

}  // namespace vanguard
