// TLS for our gRPC servers and channels, shared by every binary (orchestrator, replayer, worker,
// the `vanguard` tool): PEM files read and checked once at start, credentials built from them,
// and the names a peer's verified certificate carries.
//
//   // a server (flags --tls_cert, --tls_key, --tls_client_ca):
//   ASSIGN_OR_RETURN(ServerTls tls, LoadServerTls({.cert = cert, .key = key, .client_ca = ca}));
//   builder.AddListeningPort(listen, ServerCredentials(tls), &port);
//   // a client (flags --orchestrator_tls_ca, --tls_client_cert, --tls_client_key):
//   ASSIGN_OR_RETURN(ChannelTls tls, LoadChannelTls({.ca = ca, .cert = cert, .key = key}));
//   grpc::CreateChannel(address, ChannelCredentials(tls));
//
// Empty paths everywhere mean plaintext (insecure credentials), which the binaries warn about
// when a bearer token crosses it. A server with client_ca requires every client to present a
// certificate signed by it (the handshake fails otherwise); a channel with cert/key presents
// that certificate to servers that ask. The channel checks the server's certificate against
// `ca` and the host name (or IP address) it dials.
//
// Errors (INVALID_ARGUMENT, naming the flag and the file): a file that cannot be read, is empty,
// is larger than 1 MiB, holds no PEM certificate / private key OpenSSL can parse, a key that does
// not belong to its certificate, a cert without its key or the reverse, client_ca without a server
// cert, a client cert/key without a CA to trust. Thread-compatible pure functions; called from main
// at start.
#ifndef VANGUARD_COMMON_GRPC_TLS_H_
#define VANGUARD_COMMON_GRPC_TLS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace vanguard {

// File paths as given on the command line, with the flag names used in error messages.
struct TlsFilePaths {
  std::string ca;    // server: CA for client certificates; client: CA for the server's
  std::string cert;  // our own certificate chain (PEM)
  std::string key;   // its private key (PEM)
  std::string ca_flag = "tls_ca";
  std::string cert_flag = "tls_cert";
  std::string key_flag = "tls_key";
};

// A server's PEM material; cert_chain empty: plaintext.
struct ServerTls {
  std::string cert_chain;
  std::string private_key;
  std::string client_ca;  // non-empty: client certificates required and verified against it
};

// A channel's PEM material; enabled false: plaintext.
struct ChannelTls {
  bool enabled = false;
  std::string root_certs;
  std::string cert_chain;  // with private_key: our client certificate (mTLS)
  std::string private_key;
};

// Reads `path` (named by `flag` in errors) and checks that it holds at least one PEM
// certificate; returns the PEM text.
absl::StatusOr<std::string> ReadCertificatePem(const std::string& flag, const std::string& path);

// Reads and checks a server's files: paths.cert + paths.key (both or neither), paths.ca only
// with them. All empty: a plaintext ServerTls.
absl::StatusOr<ServerTls> LoadServerTls(const TlsFilePaths& paths);

// Reads and checks a channel's files: paths.ca turns TLS on; paths.cert + paths.key (both or
// neither) only with it. All empty: a plaintext ChannelTls.
absl::StatusOr<ChannelTls> LoadChannelTls(const TlsFilePaths& paths);

// Checks PEM text already read (the CLI reads its files itself): certificates parse, the key
// parses and belongs to the first certificate of cert_chain. `what` prefixes the message.
absl::Status CheckCertificateAndKey(const std::string& what, const std::string& cert_chain,
                                    const std::string& private_key);

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const ServerTls& tls);
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const ChannelTls& tls);

// The names of the peer's verified certificate: its subject common name, then its subject
// alternative names; empty when the peer presented no certificate (plaintext, or TLS without
// client certificates). Called on a gRPC server thread with the call's auth context.
std::vector<std::string> PeerCertificateNames(const grpc::AuthContext& context);

}  // namespace vanguard

#endif  // VANGUARD_COMMON_GRPC_TLS_H_
