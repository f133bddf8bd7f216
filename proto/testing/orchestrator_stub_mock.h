// The generated gMock orchestrator stub, compiled once.
//
// v1::MockOrchestratorStub mocks every method of the Orchestrator service, three ways each
// (sync, async, prepare-async), and all of it is inline: every test file that constructs
// one instantiates the whole class, which costs more to compile than the rest of most
// tests (far more under the sanitizers). OrchestratorStubMock is the same mock with its
// constructor, destructor and vtable defined in orchestrator_stub_mock.cc, so a test
// compiles only the methods it names in EXPECT_CALL / ON_CALL. NiceMock<> and StrictMock<>
// of it are instantiated there too (the extern templates below).
//
//   vanguard::v1::OrchestratorStubMock stub;
//   ::testing::NiceMock<vanguard::v1::OrchestratorStubMock> quiet;
//   EXPECT_CALL(stub, GetTest(_, _, _)).WillOnce(Return(grpc::Status::OK));
//
// Construct and use it on one thread, or set every expectation before other threads call it
// (gMock's rule).
#ifndef VANGUARD_PROTO_TESTING_ORCHESTRATOR_STUB_MOCK_H_
#define VANGUARD_PROTO_TESTING_ORCHESTRATOR_STUB_MOCK_H_

#include "gmock/gmock.h"
#include "vanguard/v1/orchestrator_mock.grpc.pb.h"

namespace vanguard::v1 {

class OrchestratorStubMock : public MockOrchestratorStub {
 public:
  OrchestratorStubMock();
  ~OrchestratorStubMock() override;
};

}  // namespace vanguard::v1

extern template class ::testing::NiceMock<vanguard::v1::OrchestratorStubMock>;
extern template class ::testing::StrictMock<vanguard::v1::OrchestratorStubMock>;

#endif  // VANGUARD_PROTO_TESTING_ORCHESTRATOR_STUB_MOCK_H_
