// See kserve_grpc_transport.h.
#include "replayer/protocols/kserve_grpc_transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/channel_arguments.h"
#include "nlohmann/json.hpp"

namespace vanguard::replayer {
namespace {

absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Interned error class names, one per gRPC status code.
std::string_view GrpcErrorClass(grpc::StatusCode code) {
  static constexpr std::array<std::string_view, 17> kNames = {"grpc_OK",
                                                              "grpc_CANCELLED",
                                                              "grpc_UNKNOWN",
                                                              "grpc_INVALID_ARGUMENT",
                                                              "grpc_DEADLINE_EXCEEDED",
                                                              "grpc_NOT_FOUND",
                                                              "grpc_ALREADY_EXISTS",
                                                              "grpc_PERMISSION_DENIED",
                                                              "grpc_RESOURCE_EXHAUSTED",
                                                              "grpc_FAILED_PRECONDITION",
                                                              "grpc_ABORTED",
                                                              "grpc_OUT_OF_RANGE",
                                                              "grpc_UNIMPLEMENTED",
                                                              "grpc_INTERNAL",
                                                              "grpc_UNAVAILABLE",
                                                              "grpc_DATA_LOSS",
                                                              "grpc_UNAUTHENTICATED"};
  int index = static_cast<int>(code);
  return index >= 0 && index < static_cast<int>(kNames.size()) ? kNames[index] : "grpc_UNKNOWN";
}

// The error class of a failed call: kErrorReplyTooLarge for a reply the channel refused as
// larger than its limit (gRPC's RESOURCE_EXHAUSTED with this message; a server's own
// RESOURCE_EXHAUSTED, e.g. a full queue, comes with the server's message), else its code's.
std::string_view FailureClass(const grpc::Status& status) {
  static constexpr std::string_view kReceivedTooLarge = "Received message larger than max";
  if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
      std::string_view(status.error_message()).substr(0, kReceivedTooLarge.size()) ==
          kReceivedTooLarge) {
    return kErrorReplyTooLarge;
  }
  return GrpcErrorClass(status.error_code());
}

// Appends every leaf of a (possibly nested) JSON array to *out.
void Flatten(const nlohmann::json& value, std::vector<const nlohmann::json*>* out) {
  if (value.is_array()) {
    for (const nlohmann::json& item : value) Flatten(item, out);
  } else {
    out->push_back(&value);
  }
}

absl::Status FillContents(const std::string& field, const std::string& datatype,
                          const std::vector<const nlohmann::json*>& data,
                          inference::InferTensorContents* contents) {
  auto bad = [&](size_t i, std::string_view want) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".data[", i, "]: must be ", Av(want), " for datatype ", datatype));
  };
  for (size_t i = 0; i < data.size(); ++i) {
    const nlohmann::json& v = *data[i];
    if (datatype == "BOOL") {
      if (!v.is_boolean()) return bad(i, "a boolean");
      contents->add_bool_contents(v.get<bool>());
    } else if (datatype == "INT8" || datatype == "INT16" || datatype == "INT32") {
      if (!v.is_number_integer()) return bad(i, "an integer");
      int64_t x = v.get<int64_t>();
      if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
        return bad(i, "a 32-bit integer");
      }
      contents->add_int_contents(static_cast<int32_t>(x));
    } else if (datatype == "INT64") {
      if (!v.is_number_integer()) return bad(i, "an integer");
      contents->add_int64_contents(v.get<int64_t>());
    } else if (datatype == "UINT8" || datatype == "UINT16" || datatype == "UINT32") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() > std::numeric_limits<uint32_t>::max()) {
        return bad(i, "a 32-bit unsigned integer");
      }
      contents->add_uint_contents(static_cast<uint32_t>(v.get<uint64_t>()));
    } else if (datatype == "UINT64") {
      if (!v.is_number_unsigned()) return bad(i, "an unsigned integer");
      contents->add_uint64_contents(v.get<uint64_t>());
    } else if (datatype == "FP32") {
      if (!v.is_number()) return bad(i, "a number");
      contents->add_fp32_contents(v.get<float>());
    } else if (datatype == "FP64") {
      if (!v.is_number()) return bad(i, "a number");
      contents->add_fp64_contents(v.get<double>());
    } else if (datatype == "BYTES") {
      if (!v.is_string()) return bad(i, "a string");
      contents->add_bytes_contents(v.get<std::string>());
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".datatype: \"", datatype,
                       "\" is not supported here (FP16/BF16 need raw contents)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<inference::InferParameter> ToParameter(const std::string& field,
                                                      const nlohmann::json& v) {
  inference::InferParameter p;
  if (v.is_boolean()) {
    p.set_bool_param(v.get<bool>());
  } else if (v.is_number_integer()) {
    p.set_int64_param(v.get<int64_t>());
  } else if (v.is_number()) {
    p.set_double_param(v.get<double>());
  } else if (v.is_string()) {
    p.set_string_param(v.get<std::string>());
  } else {
    return absl::InvalidArgumentError(absl::StrCat(field, ": must be a bool, number or string"));
  }
  return p;
}

}  // namespace

absl::StatusOr<std::string> GrpcTargetFromUrl(std::string_view target) {
  std::string_view rest = target;
  for (std::string_view scheme : {"grpc://", "http://"}) {
    if (rest.substr(0, scheme.size()) == scheme) rest.remove_prefix(scheme.size());
  }
  rest = rest.substr(0, rest.find('/'));
  size_t colon = rest.rfind(':');
  if (rest.empty() || colon == std::string_view::npos || colon == 0 || colon + 1 == rest.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("target: must be host:port, grpc://host:port or http://host:port, got \"",
                     Av(target), "\""));
  }
  return std::string(rest);
}

absl::StatusOr<inference::ModelInferRequest> ModelInferRequestFromKServeJson(
    std::string_view model, std::string_view json_body) {
  if (model.empty()) return absl::InvalidArgumentError("model_name: required");
  nlohmann::json body = nlohmann::json::parse(json_body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return absl::InvalidArgumentError("request_body: must be a JSON object");
  inference::ModelInferRequest request;
  request.set_model_name(std::string(model));
  if (auto id = body.find("id"); id != body.end()) {
    if (!id->is_string()) return absl::InvalidArgumentError("request_body.id: must be a string");
    request.set_id(id->get<std::string>());
  }
  if (auto params = body.find("parameters"); params != body.end() && params->is_object()) {
    for (auto it = params->begin(); it != params->end(); ++it) {
      absl::StatusOr<inference::InferParameter> p =
          ToParameter(absl::StrCat("request_body.parameters.", it.key()), it.value());
      if (!p.ok()) return p.status();
      (*request.mutable_parameters())[it.key()] = *p;
    }
  }
  auto inputs = body.find("inputs");
  if (inputs == body.end() || !inputs->is_array() || inputs->empty()) {
    return absl::InvalidArgumentError("request_body.inputs: must be a non-empty array");
  }
  for (size_t i = 0; i < inputs->size(); ++i) {
    const nlohmann::json& in = (*inputs)[i];
    std::string field = absl::StrCat("request_body.inputs[", i, "]");
    if (!in.is_object())
      return absl::InvalidArgumentError(absl::StrCat(field, ": must be an object"));
    auto name = in.find("name");
    auto datatype = in.find("datatype");
    auto shape = in.find("shape");
    auto data = in.find("data");
    if (name == in.end() || !name->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".name: must be a string"));
    }
    if (datatype == in.end() || !datatype->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".datatype: must be a string"));
    }
    if (shape == in.end() || !shape->is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".shape: must be an array"));
    }
    if (data == in.end()) return absl::InvalidArgumentError(absl::StrCat(field, ".data: missing"));
    auto* tensor = request.add_inputs();
    tensor->set_name(name->get<std::string>());
    tensor->set_datatype(datatype->get<std::string>());
    int64_t elements = 1;
    for (const nlohmann::json& dim : *shape) {
      if (!dim.is_number_integer() || dim.get<int64_t>() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".shape: dimensions must be integers >= 0"));
      }
      const int64_t size = dim.get<int64_t>();
      if (size != 0 && elements > std::numeric_limits<int64_t>::max() / size) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".shape: more elements than fit in 64 bits"));
      }
      tensor->add_shape(size);
      elements *= size;
    }
    std::vector<const nlohmann::json*> flat;
    Flatten(*data, &flat);
    if (static_cast<int64_t>(flat.size()) != elements) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".data: has ", flat.size(), " elements but shape needs ", elements));
    }
    absl::Status filled = FillContents(field, tensor->datatype(), flat, tensor->mutable_contents());
    if (!filled.ok()) return filled;
  }
  if (auto outputs = body.find("outputs"); outputs != body.end()) {
    if (!outputs->is_array())
      return absl::InvalidArgumentError("request_body.outputs: must be an array");
    for (size_t i = 0; i < outputs->size(); ++i) {
      const nlohmann::json& out = (*outputs)[i];
      if (!out.is_object() || !out.contains("name") || !out["name"].is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("request_body.outputs[", i, "].name: must be a string"));
      }
      request.add_outputs()->set_name(out["name"].get<std::string>());
    }
  }
  return request;
}

struct KServeGrpcTransport::Call {
  uint64_t tag = 0;
  grpc::ClientContext context;
  grpc::ByteBuffer response;
  grpc::Status status;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader;
  bool cancelled = false;  // guarded by the transport's mu_
};

KServeGrpcTransport::KServeGrpcTransport(std::shared_ptr<grpc::Channel> channel, int event_fd)
    : channel_(channel), stub_(channel), method_(kModelInferMethod), event_fd_(event_fd) {
  completion_thread_ = std::thread([this] { CompletionLoop(); });
}

absl::StatusOr<std::unique_ptr<KServeGrpcTransport>> KServeGrpcTransport::Create(
    std::shared_ptr<grpc::Channel> channel) {
  int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("eventfd: ", std::strerror(errno)));
  return std::unique_ptr<KServeGrpcTransport>(new KServeGrpcTransport(std::move(channel), fd));
}

KServeGrpcTransport::~KServeGrpcTransport() {
  {
    absl::MutexLock lock(&mu_);
    for (auto& [tag, call] : open_calls_) {
      call->cancelled = true;
      call->context.TryCancel();
    }
  }
  cq_.Shutdown();  // Next() returns false once every open call's tag has come out
  completion_thread_.join();
  ::close(event_fd_);
}

absl::Status KServeGrpcTransport::Send(uint64_t tag, const OutgoingRequest& request) {
  auto call = std::make_unique<Call>();
  call->tag = tag;
  grpc::Slice slice(request.body.data(), request.body.size());
  grpc::ByteBuffer payload(&slice, 1);
  call->reader = stub_.PrepareUnaryCall(&call->context, method_, payload, &cq_);
  if (call->reader == nullptr) return absl::UnavailableError("gRPC call could not be created");
  Call* raw = call.release();
  {
    absl::MutexLock lock(&mu_);
    open_calls_[tag] = raw;
  }
  raw->reader->StartCall();
  raw->reader->Finish(&raw->response, &raw->status, raw);
  return absl::OkStatus();
}

void KServeGrpcTransport::CompletionLoop() {
  void* got = nullptr;
  bool ok = false;
  while (cq_.Next(&got, &ok)) {
    std::unique_ptr<Call> call(static_cast<Call*>(got));
    int64_t done_ns = SteadyNowNs();
    bool report = false;
    {
      absl::MutexLock lock(&mu_);
      open_calls_.erase(call->tag);
      if (!call->cancelled) {
        Completion c;
        c.tag = call->tag;
        c.done_ns = done_ns;
        c.ok = ok && call->status.ok();
        if (!c.ok)
          c.error_class = ok ? FailureClass(call->status) : GrpcErrorClass(grpc::CANCELLED);
        ready_.push_back(c);
        report = true;
      }
    }
    if (report) {
      uint64_t one = 1;
      (void)!::write(event_fd_, &one, sizeof(one));
    }
  }
}

int KServeGrpcTransport::TakeCompletions(Completion* out, int max) {
  uint64_t counter;
  (void)!::read(event_fd_, &counter, sizeof(counter));  // reset readiness first (see below)
  int n = 0;
  bool more = false;
  {
    absl::MutexLock lock(&mu_);
    while (n < max && !ready_.empty()) {
      out[n++] = ready_.front();
      ready_.pop_front();
    }
    more = !ready_.empty();
  }
  // A completion pushed after the read above also wrote the fd, so nothing is lost; if we
  // left some behind (max reached), make the fd readable again.
  if (more) {
    uint64_t one = 1;
    (void)!::write(event_fd_, &one, sizeof(one));
  }
  return n;
}

void KServeGrpcTransport::Cancel(uint64_t tag) {
  absl::MutexLock lock(&mu_);
  auto it = open_calls_.find(tag);
  if (it == open_calls_.end()) {
    // Already completed but maybe not yet taken: drop it from the ready queue.
    for (auto r = ready_.begin(); r != ready_.end(); ++r) {
      if (r->tag == tag) {
        ready_.erase(r);
        break;
      }
    }
    return;
  }
  it->second->cancelled = true;
  it->second->context.TryCancel();
}

int64_t KServeGrpcTransport::in_flight() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(open_calls_.size());
}

absl::StatusOr<AsyncTransportFactory> KServeGrpcTransportFactory(const std::string& target,
                                                                 const std::string& connect_to) {
  absl::StatusOr<std::string> address = GrpcTargetFromUrl(target);
  if (!address.ok()) return address.status();
  std::string host_port = *address;
  return AsyncTransportFactory(
      [host_port, connect_to](int shard,
                              int shards) -> absl::StatusOr<std::unique_ptr<AsyncTransport>> {
        grpc::ChannelArguments args;
        // Each loop gets its own HTTP/2 connection instead of sharing one process-wide.
        args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
        args.SetMaxReceiveMessageSize(static_cast<int>(kMaxModelInferReplyBytes));
        args.SetMaxSendMessageSize(-1);
        if (!connect_to.empty()) args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, host_port);
        auto channel = grpc::CreateCustomChannel(connect_to.empty() ? host_port : connect_to,
                                                 grpc::InsecureChannelCredentials(), args);
        absl::StatusOr<std::unique_ptr<KServeGrpcTransport>> transport =
            KServeGrpcTransport::Create(std::move(channel));
        if (!transport.ok()) return transport.status();
        return std::unique_ptr<AsyncTransport>(std::move(*transport));
      });
}

absl::StatusOr<RequestSourceFactory> KServeGrpcTemplateSourceFactory(
    const std::string& model, const std::string& request_body) {
  static constexpr std::string_view kDefaultBody =
      R"({"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[0.1,0.2,0.3,0.4]}]})";
  absl::StatusOr<inference::ModelInferRequest> request = ModelInferRequestFromKServeJson(
      model, request_body.empty() ? kDefaultBody : std::string_view(request_body));
  if (!request.ok()) return request.status();
  std::string body = request->SerializeAsString();
  std::string path(kModelInferMethod);
  return RequestSourceFactory([path, body, model](
                                  int, int) -> absl::StatusOr<std::unique_ptr<RequestSource>> {
    class GrpcTemplateSource final : public RequestSource {
     public:
      GrpcTemplateSource(std::string path, std::string body, std::string model)
          : path_(std::move(path)), body_(std::move(body)), model_(std::move(model)) {}
      absl::Status Next(OutgoingRequest* out) override {
        out->method = "POST";
        out->path = path_;
        out->headers = {};
        out->body = body_;
        out->model = model_;
        out->trace_offset.reset();
        return absl::OkStatus();
      }

     private:
      const std::string path_, body_, model_;
    };
    return std::unique_ptr<RequestSource>(std::make_unique<GrpcTemplateSource>(path, body, model));
  });
}

}  // namespace vanguard::replayer
