#include "common/grpc_tls.h"

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/testing/test_certificates.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::vanguard::testing::CertificateFiles;
using ::vanguard::testing::TestCertificates;

// Answers GetModel with NOT_FOUND and remembers the caller's certificate names.
class NamesRecorder final : public v1::Orchestrator::Service {
 public:
  grpc::Status GetModel(grpc::ServerContext* context, const v1::GetModelRequest*,
                        v1::GetModelResponse*) override {
    absl::MutexLock lock(&mu_);
    names_ = PeerCertificateNames(*context->auth_context());
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "recorded");
  }
  std::vector<std::string> names() {
    absl::MutexLock lock(&mu_);
    return names_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
};

class GrpcTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto certs = TestCertificates::Create("grpc-tls-test-ca");
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = std::move(*certs);
    auto other = TestCertificates::Create("another-ca");
    ASSERT_TRUE(other.ok()) << other.status();
    other_ca_ = std::move(*other);
    auto server = certs_->Issue("localhost");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *server;
    auto client = certs_->Issue("worker-7");
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *client;
  }

  std::string WriteFile(const std::string& name, const std::string& contents) {
    const std::string path = certs_->dir() + "/" + name;
    std::ofstream(path) << contents;
    return path;
  }

  // Serves NamesRecorder on a free loopback port with `paths` (server side).
  void Serve(const TlsFilePaths& paths) {
    absl::StatusOr<ServerTls> tls = LoadServerTls(paths);
    ASSERT_TRUE(tls.ok()) << tls.status();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", ServerCredentials(*tls), &port_);
    builder.RegisterService(&recorder_);
    server_process_ = builder.BuildAndStart();
    ASSERT_NE(server_process_, nullptr);
  }

  // GetModel over a channel made from `paths` (client side): the call's status.
  grpc::Status Call(const TlsFilePaths& paths) {
    absl::StatusOr<ChannelTls> tls = LoadChannelTls(paths);
    EXPECT_TRUE(tls.ok()) << tls.status();
    if (!tls.ok()) return grpc::Status(grpc::StatusCode::INTERNAL, "bad client files");
    auto stub = v1::Orchestrator::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port_), ChannelCredentials(*tls)));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    v1::GetModelResponse response;
    return stub->GetModel(&context, v1::GetModelRequest(), &response);
  }

  void TearDown() override {
    if (server_process_ != nullptr) server_process_->Shutdown();
  }

  std::unique_ptr<TestCertificates> certs_, other_ca_;
  CertificateFiles server_, client_;
  NamesRecorder recorder_;
  std::unique_ptr<grpc::Server> server_process_;
  int port_ = 0;
};

TEST_F(GrpcTlsTest, NoPathsMeansPlaintextOnBothSides) {
  absl::StatusOr<ServerTls> server = LoadServerTls({});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE(server->cert_chain.empty());
  absl::StatusOr<ChannelTls> channel = LoadChannelTls({});
  ASSERT_TRUE(channel.ok()) << channel.status();
  EXPECT_FALSE(channel->enabled);
  ASSERT_NO_FATAL_FAILURE(Serve({}));
  EXPECT_EQ(Call({}).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(recorder_.names(), IsEmpty());
}

TEST_F(GrpcTlsTest, UnreadableEmptyOrNonPemFilesAreNamedByTheirFlag) {
  absl::StatusOr<ServerTls> missing =
      LoadServerTls({.cert = certs_->dir() + "/nope.crt", .key = server_.key});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("--tls_cert"));
  EXPECT_THAT(missing.status().message(), HasSubstr("cannot be read"));

  absl::StatusOr<ServerTls> empty =
      LoadServerTls({.cert = server_.cert, .key = WriteFile("empty.key", "")});
  EXPECT_THAT(empty.status().message(), HasSubstr("--tls_key"));
  EXPECT_THAT(empty.status().message(), HasSubstr("is empty"));

  absl::StatusOr<ChannelTls> garbage = LoadChannelTls(
      {.ca = WriteFile("garbage.crt", "not a certificate\n"), .ca_flag = "orchestrator_tls_ca"});
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(garbage.status().message(), HasSubstr("--orchestrator_tls_ca"));
  EXPECT_THAT(garbage.status().message(), HasSubstr("no PEM certificate"));

  absl::StatusOr<ChannelTls> huge =
      LoadChannelTls({.ca = WriteFile("huge.crt", std::string((1 << 20) + 1, 'A'))});
  EXPECT_THAT(huge.status().message(), HasSubstr("is larger than 1 MiB"));

  absl::StatusOr<ServerTls> key_as_cert = LoadServerTls({.cert = server_.key, .key = server_.key});
  EXPECT_THAT(key_as_cert.status().message(), HasSubstr("no PEM certificate"));
}

TEST_F(GrpcTlsTest, AKeyOfAnotherCertificateIsRefused) {
  absl::StatusOr<ServerTls> tls = LoadServerTls({.cert = server_.cert, .key = client_.key});
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tls.status().message(), HasSubstr("does not belong to the certificate"));
}

TEST_F(GrpcTlsTest, HalfAPairOrAClientCaWithoutTlsIsRefused) {
  EXPECT_THAT(LoadServerTls({.cert = server_.cert}).status().message(), HasSubstr("go together"));
  EXPECT_THAT(LoadChannelTls({.ca = certs_->ca_cert(), .key = client_.key}).status().message(),
              HasSubstr("go together"));
  EXPECT_THAT(
      LoadServerTls({.ca = certs_->ca_cert(), .ca_flag = "tls_client_ca"}).status().message(),
      HasSubstr("--tls_client_ca needs --tls_cert"));
  EXPECT_THAT(LoadChannelTls({.cert = client_.cert, .key = client_.key}).status().message(),
              HasSubstr("--tls_cert needs --tls_ca"));
}

TEST_F(GrpcTlsTest, ServerTlsIsTrustedThroughItsCaAndNotThroughAnother) {
  ASSERT_NO_FATAL_FAILURE(Serve({.cert = server_.cert, .key = server_.key}));
  EXPECT_EQ(Call({.ca = certs_->ca_cert()}).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(recorder_.names(), IsEmpty());  // no client certificate asked for
  EXPECT_EQ(Call({.ca = other_ca_->ca_cert()}).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Call({}).error_code(), grpc::StatusCode::UNAVAILABLE);  // plaintext to TLS
}

TEST_F(GrpcTlsTest, MutualTlsNamesTheClientAndRefusesClientsWithoutACertificate) {
  ASSERT_NO_FATAL_FAILURE(
      Serve({.ca = certs_->ca_cert(), .cert = server_.cert, .key = server_.key}));
  EXPECT_EQ(Call({.ca = certs_->ca_cert()}).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Call({.ca = certs_->ca_cert(), .cert = client_.cert, .key = client_.key}).error_code(),
            grpc::StatusCode::NOT_FOUND);
  const std::vector<std::string> names = recorder_.names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "worker-7");  // the subject's common name comes first
  EXPECT_THAT(names, Contains("localhost"));
}

TEST_F(GrpcTlsTest, MutualTlsRefusesAClientCertificateOfAnotherCa) {
  auto stranger = other_ca_->Issue("worker-7");
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  ASSERT_NO_FATAL_FAILURE(
      Serve({.ca = certs_->ca_cert(), .cert = server_.cert, .key = server_.key}));
  EXPECT_EQ(
      Call({.ca = certs_->ca_cert(), .cert = stranger->cert, .key = stranger->key}).error_code(),
      grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(recorder_.names(), ElementsAre());
}

}  // namespace
}  // namespace vanguard
