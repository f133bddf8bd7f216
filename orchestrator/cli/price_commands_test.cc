// Tests of `vanguard prices set` and `prices list` against the generated MockOrchestratorStub:
// what `set` sends, the arguments it refuses before calling, what both print, and --help.
#include "orchestrator/cli/price_commands.h"

#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/cli/testing/command_test.h"
#include "orchestrator/cli/usage.h"

namespace vanguard::cli {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Invoke;

v1::AcceleratorPrice Price(const std::string& accelerator, double per_hour) {
  v1::AcceleratorPrice price;
  price.set_accelerator(accelerator);
  price.set_price_per_hour(per_hour);
  price.set_currency("USD");
  price.mutable_update_time()->set_seconds(1796300000);  // 2026-12-03 12:13:20 UTC
  return price;
}

class PriceCommandsTest : public CommandTest {};

TEST_F(PriceCommandsTest, SetSendsTheAcceleratorAndPriceAndPrintsTheStoredPrice) {
  v1::SetAcceleratorPriceRequest sent;
  EXPECT_CALL(stub_, SetAcceleratorPrice(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext*, const v1::SetAcceleratorPriceRequest& request,
                           v1::SetAcceleratorPriceResponse* response) {
        sent = request;
        *response->mutable_price() = Price(request.accelerator(), request.price_per_hour());
        return grpc::Status::OK;
      }));
  EXPECT_EQ(RunCommand({"prices", "set", "nvidia-l4", "0.80"}), kExitOk)
      << err_.str() << usage_error_;
  EXPECT_EQ(sent.accelerator(), "nvidia-l4");
  EXPECT_DOUBLE_EQ(sent.price_per_hour(), 0.8);
  EXPECT_THAT(out_.str(), HasSubstr("ACCELERATOR  PRICE_PER_HOUR  CURRENCY  UPDATED"));
  EXPECT_THAT(out_.str(),
              HasSubstr("nvidia-l4               0.8  USD       2026-12-03 12:13:20 UTC"));
}

TEST_F(PriceCommandsTest, SetRefusesMissingAndBadArgumentsWithoutCalling) {
  EXPECT_CALL(stub_, SetAcceleratorPrice(_, _, _)).Times(0);
  EXPECT_EQ(RunCommand({"prices", "set", "nvidia-l4"}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("price per hour"));
  EXPECT_EQ(RunCommand({"prices", "set", "nvidia-l4", "cheap"}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("PRICE_PER_HOUR 'cheap' is not a finite number"));
  EXPECT_EQ(RunCommand({"prices", "set", "nvidia-l4", "nan"}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("not a finite number"));
  EXPECT_EQ(RunCommand({"prices", "set", "nvidia-l4", "inf"}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("not a finite number"));
  EXPECT_EQ(RunCommand({"prices", "set", "nvidia-l4", "-1"}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("must be >= 0"));
  EXPECT_EQ(RunCommand({"prices", "set", "", "1"}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("ACCELERATOR must not be empty"));
  EXPECT_EQ(RunCommand({"prices", "set", "a", "1", "2"}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("unexpected argument '2'"));
}

TEST_F(PriceCommandsTest, SetReportsTheOrchestratorsRefusal) {
  EXPECT_CALL(stub_, SetAcceleratorPrice(_, _, _))
      .WillOnce(Invoke([](grpc::ClientContext*, const v1::SetAcceleratorPriceRequest&,
                          v1::SetAcceleratorPriceResponse*) {
        return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                            "role submitter may not call SetAcceleratorPrice");
      }));
  EXPECT_NE(RunCommand({"prices", "set", "nvidia-l4", "1e9"}), kExitOk);
  EXPECT_THAT(err_.str(), HasSubstr("role submitter may not call SetAcceleratorPrice"));
}

TEST_F(PriceCommandsTest, ListPrintsEveryPriceAsTableAndJson) {
  EXPECT_CALL(stub_, ListAcceleratorPrices(_, _, _))
      .Times(2)
      .WillRepeatedly(Invoke([](grpc::ClientContext*, const v1::ListAcceleratorPricesRequest&,
                                v1::ListAcceleratorPricesResponse* response) {
        *response->add_prices() = Price("nvidia-a100", 3.5);
        *response->add_prices() = Price("nvidia-l4", 0.8);
        return grpc::Status::OK;
      }));
  EXPECT_EQ(RunCommand({"prices", "list"}), kExitOk) << err_.str() << usage_error_;
  EXPECT_THAT(out_.str(), HasSubstr("nvidia-a100             3.5  USD"));
  EXPECT_THAT(out_.str(), HasSubstr("nvidia-l4               0.8  USD"));
  out_.str("");
  EXPECT_EQ(RunCommand({"prices", "list"}, {{"output", "json"}}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("\"accelerator\": \"nvidia-l4\""));
  EXPECT_THAT(out_.str(), HasSubstr("\"price_per_hour\": 0.8"));
}

TEST_F(PriceCommandsTest, ListTakesNoArguments) {
  EXPECT_CALL(stub_, ListAcceleratorPrices(_, _, _)).Times(0);
  EXPECT_EQ(RunCommand({"prices", "list", "nvidia-l4"}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("unexpected argument 'nvidia-l4'"));
}

TEST(PriceCommandsHelpTest, UsageAndHelpShowBothCommands) {
  EXPECT_THAT(UsageText(), HasSubstr("prices set ACCELERATOR PRICE_PER_HOUR"));
  EXPECT_THAT(UsageText(), HasSubstr("prices list"));
  for (const CommandSpec& spec : Commands()) {
    if (spec.Name() != "prices set") continue;
    EXPECT_THAT(CommandHelp(spec),
                HasSubstr("Usage: vanguard prices set ACCELERATOR PRICE_PER_HOUR"));
    EXPECT_THAT(CommandHelp(spec), HasSubstr("<= 1000000"));
    return;
  }
  ADD_FAILURE() << "no `prices set` in the command table";
}

}  // namespace
}  // namespace vanguard::cli
