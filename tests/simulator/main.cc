// vanguard-sim-predictor: a model server whose true capacity is known from its flags
// (slots * 1000 / service_ms requests/s), for Vanguard's end-to-end tests and demo.
// Parses flags, starts SimPredictorServer, waits for SIGTERM/SIGINT on the main thread.
#include <signal.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/simulator/sim_predictor_server.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:8000",
          "HOST:PORT to serve HTTP on; port 0 picks a free port (printed as LISTENING host:port).");
ABSL_FLAG(std::string, port_file, "",
          "If set, the bound port is written to this file (atomically) once listening.");
ABSL_FLAG(std::string, model_name, "sim",
          "Name of the one model served at /v2/models/{name}; other names get 404.");
ABSL_FLAG(int, slots, 4, "Parallel executors; each serves one request at a time.");
ABSL_FLAG(double, service_ms, 10.0,
          "Service time of every request in milliseconds (deterministic). True capacity is "
          "slots*1000/service_ms requests/s.");
ABSL_FLAG(
    int64_t, max_queue, 0,
    "Requests allowed to wait for a slot; arrivals beyond it get 503 at once. 0 = unlimited.");
ABSL_FLAG(int, threads, 1, "Event-loop threads serving connections.");

namespace {

bool WritePortFile(const std::string& path, int port) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Simulated KServe v2 model server with a known capacity: --slots executors, each "
      "serving a request in --service_ms.\nUsage: vanguard-sim-predictor --listen=127.0.0.1:0 "
      "--slots=4 --service_ms=10");
  // --help lists the flags of this file (Abseil's default looks for <program>.cc).
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "simulator/main.cc");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  absl::ParseCommandLine(argc, argv);

  // Block the shutdown signals before any thread starts so only sigwait below sees them.
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGTERM);
  sigaddset(&shutdown_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const double service_ms = absl::GetFlag(FLAGS_service_ms);
  if (!(service_ms > 0) || service_ms > 1e9) {
    std::cerr << "--service_ms must be a positive number of milliseconds, got " << service_ms
              << "\n";
    return 2;
  }
  vanguard::sim::SimPredictorConfig config;
  config.listen = absl::GetFlag(FLAGS_listen);
  config.model_name = absl::GetFlag(FLAGS_model_name);
  config.scheduler.slots = absl::GetFlag(FLAGS_slots);
  config.scheduler.service_time = absl::Nanoseconds(service_ms * 1e6);
  config.scheduler.max_queue = absl::GetFlag(FLAGS_max_queue);
  config.threads = absl::GetFlag(FLAGS_threads);

  auto server = vanguard::sim::SimPredictorServer::Create(config);
  if (!server.ok()) {
    std::cerr << "vanguard-sim-predictor: " << server.status() << "\n";
    return server.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  (*server)->Start();

  // Plain decimal (never 6.4e+06) so scripts can read it: "800", "333.333".
  const double capacity = (*server)->TrueCapacityRps();
  const std::string capacity_text = std::abs(capacity - std::round(capacity)) < 1e-6
                                        ? absl::StrFormat("%.0f", capacity)
                                        : absl::StrFormat("%.3f", capacity);
  std::cerr << "true_capacity_rps=" << capacity_text << std::endl;
  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty() && !WritePortFile(port_file, (*server)->port())) {
    std::cerr << "vanguard-sim-predictor: cannot write --port_file " << port_file << "\n";
    return 1;
  }
  std::cout << "LISTENING " << (*server)->address() << std::endl;

  int signal_number = 0;
  sigwait(&shutdown_signals, &signal_number);
  std::cerr << "vanguard-sim-predictor: signal " << signal_number << ", shutting down\n";
  (*server)->Shutdown();
  return 0;
}
