#include "proto/testing/orchestrator_stub_mock.h"

namespace vanguard::v1 {

OrchestratorStubMock::OrchestratorStubMock() = default;
OrchestratorStubMock::~OrchestratorStubMock() = default;

}  // namespace vanguard::v1

template class ::testing::NiceMock<vanguard::v1::OrchestratorStubMock>;
template class ::testing::StrictMock<vanguard::v1::OrchestratorStubMock>;
