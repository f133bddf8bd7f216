// Lets one thread stop another thread's in-flight gRPC call: the calling thread attaches
// its ClientContext, and Cancel() from any thread (heartbeat thread, signal watcher)
// sets a sticky flag and cancels whatever call is attached now or later.
//
//   CancellationToken token;
//   grpc::ClientContext ctx;
//   CancellationToken::Attachment attach(&token, &ctx);  // cancels ctx if already cancelled
//   ... stub->RunStep(&ctx, request) ...
//   // elsewhere: token.Cancel();
//
// Thread-safe.
#ifndef VANGUARD_WORKER_CANCELLATION_H_
#define VANGUARD_WORKER_CANCELLATION_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/client_context.h"

namespace vanguard::worker {

class CancellationToken {
 public:
  void Cancel();
  bool IsCancelled() const;

  // Attaches `ctx` for the scope of the object. `token` may be null (nothing to cancel).
  class Attachment {
   public:
    Attachment(CancellationToken* token, grpc::ClientContext* ctx);
    ~Attachment();
    Attachment(const Attachment&) = delete;
    Attachment& operator=(const Attachment&) = delete;

   private:
    CancellationToken* token_;
  };

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* attached_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_CANCELLATION_H_
