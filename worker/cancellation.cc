// CancellationToken. See cancellation.h.
#include "worker/cancellation.h"

namespace vanguard::worker {

void CancellationToken::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  // TryCancel is safe from any thread while the call is alive; Attachment's destructor
  // takes mu_ before the context can be destroyed.
  if (attached_ != nullptr) attached_->TryCancel();
}

bool CancellationToken::IsCancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

CancellationToken::Attachment::Attachment(CancellationToken* token, grpc::ClientContext* ctx)
    : token_(token) {
  if (token_ == nullptr) return;
  absl::MutexLock lock(&token_->mu_);
  token_->attached_ = ctx;
  if (token_->cancelled_) ctx->TryCancel();
}

CancellationToken::Attachment::~Attachment() {
  if (token_ == nullptr) return;
  absl::MutexLock lock(&token_->mu_);
  token_->attached_ = nullptr;
}

}  // namespace vanguard::worker
