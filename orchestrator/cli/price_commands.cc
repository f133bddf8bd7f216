// `vanguard prices set` and `prices list`; see price_commands.h. main()'s thread.
#include "orchestrator/cli/price_commands.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/cli/render.h"

namespace vanguard::cli {
namespace {

absl::StatusOr<v1::SetAcceleratorPriceRequest> ParseSetPrice(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 2,
                             "an accelerator and its price per hour "
                             "(vanguard prices set nvidia-l4 0.80)"));
  v1::SetAcceleratorPriceRequest request;
  const std::string& accelerator = in.command.args[0];
  if (accelerator.empty()) {
    return absl::InvalidArgumentError("'prices set': ACCELERATOR must not be empty");
  }
  request.set_accelerator(accelerator);
  const std::string& text = in.command.args[1];
  double price = 0;
  if (!absl::SimpleAtod(text, &price) || !std::isfinite(price)) {
    return absl::InvalidArgumentError(absl::StrCat("'prices set': PRICE_PER_HOUR '", text,
                                                   "' is not a finite number (e.g. 0.80)"));
  }
  if (price < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'prices set': PRICE_PER_HOUR '", text, "' must be >= 0"));
  }
  request.set_price_per_hour(price);
  return request;
}

absl::StatusOr<v1::ListAcceleratorPricesRequest> ParseListPrices(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  return v1::ListAcceleratorPricesRequest();
}

int RunSetPrice(CommandRunner& runner, const v1::SetAcceleratorPriceRequest& request) {
  absl::StatusOr<v1::SetAcceleratorPriceResponse> response =
      runner.Call(&CommandRunner::Stub::SetAcceleratorPrice, request);
  if (!response.ok()) return runner.RpcFailed("SetAcceleratorPrice", response.status());
  google::protobuf::RepeatedPtrField<v1::AcceleratorPrice> one;
  *one.Add() = response->price();
  runner.Print(*response, [&] { return RenderPriceTable(one); });
  return kExitOk;
}

int RunListPrices(CommandRunner& runner, const v1::ListAcceleratorPricesRequest& request) {
  absl::StatusOr<v1::ListAcceleratorPricesResponse> response =
      runner.Call(&CommandRunner::Stub::ListAcceleratorPrices, request);
  if (!response.ok()) return runner.RpcFailed("ListAcceleratorPrices", response.status());
  runner.Print(*response, [&] { return RenderPriceTable(response->prices()); });
  return kExitOk;
}

std::string FormatUpdate(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC",
                          absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos()),
                          absl::UTCTimeZone());
}

}  // namespace

std::string RenderPriceTable(
    const google::protobuf::RepeatedPtrField<v1::AcceleratorPrice>& prices) {
  TextTable table({{"ACCELERATOR", Align::kLeft},
                   {"PRICE_PER_HOUR", Align::kRight},
                   {"CURRENCY", Align::kLeft},
                   {"UPDATED", Align::kLeft}});
  for (const v1::AcceleratorPrice& price : prices) {
    table.AddRow({price.accelerator(), absl::StrCat(price.price_per_hour()),
                  price.currency().empty() ? "-" : price.currency(),
                  FormatUpdate(price.update_time())});
  }
  return table.Render();
}

std::vector<CommandSpec> PriceCommands() {
  return {
      Command<v1::SetAcceleratorPriceRequest>(
          {.words = {"prices", "set"},
           .args = "ACCELERATOR PRICE_PER_HOUR",
           .summary = "Set the price of one accelerator-hour (admin); replaces the old one.",
           .details = "ACCELERATOR as in a model's hardware.accelerator (e.g. nvidia-l4: "
                      "letters, digits, '.', '_', '-'); PRICE_PER_HOUR a number >= 0 and <= "
                      "1000000, in USD. `vanguard plan` prices replicas with it "
                      "(docs/planning.md).",
           .parse = ParseSetPrice,
           .run = RunSetPrice}),
      Command<v1::ListAcceleratorPricesRequest>(
          {.words = {"prices", "list"},
           .summary = "List the prices per accelerator-hour `vanguard plan` uses.",
           .parse = ParseListPrices,
           .run = RunListPrices}),
  };
}

}  // namespace vanguard::cli
