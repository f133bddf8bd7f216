// Tells ThreadSanitizer about absl::Mutex, absl::CondVar and absl::Notification when Abseil
// itself is not instrumented (Debian's libabsl_synchronization is a plain -O2 build).
//
// Without this, TSan sees none of the synchronization done by absl::Mutex (ours, and gRPC's:
// gpr_mu and grpc_core::Mutex are absl::Mutex in Debian's gRPC 1.51), so every field
// ABSL_GUARDED_BY an absl::Mutex and touched by two threads is reported as a race.
//
// How: this file defines the out-of-line members of those classes again. Linked into the
// executable (only in -DVANGUARD_SANITIZE=thread builds; cmake/sanitizers.cmake), its
// definitions interpose on the shared library's for every caller, Abseil's and gRPC's
// included; each calls the library's own definition (dlsym RTLD_NEXT) and adds a TSan
// acquire after anything that takes the lock and a release before anything that gives it
// up. That models the happens-before edges a mutex makes, which is all the race detector
// needs; what it does not give is TSan's lock-order (deadlock) checking for absl::Mutex.
//
// The mangled names are those of Debian's Abseil 20220623 (inline namespace debian3); a
// name that does not resolve aborts the first call with a message saying so.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

extern "C" {
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
}

namespace {

void* Real(const char* mangled) {
  void* f = dlsym(RTLD_NEXT, mangled);
  if (f == nullptr) {
    std::fprintf(stderr,
                 "tsan_absl_shim: %s not found after the executable (not Debian's Abseil "
                 "20220623?); update tests/sanitizers/tsan_absl_shim.cc\n",
                 mangled);
    std::abort();
  }
  return f;
}

// The library's definition of a member function, looked up once.
#define VANGUARD_REAL(type, mangled) static const auto real = reinterpret_cast<type>(Real(mangled))

void Acquire(const void* p) { __tsan_acquire(const_cast<void*>(p)); }
void Release(const void* p) { __tsan_release(const_cast<void*>(p)); }

// The library evaluates a Condition with the lock held but inside the call, on the waiting
// thread or on the one that unlocks, and may give the lock up again right after: an acquire
// before each evaluation and a release after it. Reading the HeldCondition itself is left
// uninstrumented: the unlocking thread reads the waiter's copy before it can acquire anything.
struct HeldCondition {
  const absl::Condition* cond;
  const void* mu;
};
__attribute__((no_sanitize("thread"))) bool EvalHoldingLock(HeldCondition* held) {
  const absl::Condition* cond = held->cond;
  const void* mu = held->mu;
  Acquire(mu);
  const bool met = cond->Eval();
  Release(mu);
  return met;
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  VANGUARD_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex4LockEv");
  real(this);
  Acquire(this);
}

void Mutex::ReaderLock() {
  VANGUARD_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex10ReaderLockEv");
  real(this);
  Acquire(this);
}

bool Mutex::TryLock() {
  VANGUARD_REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) Acquire(this);
  return locked;
}

bool Mutex::ReaderTryLock() {
  VANGUARD_REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) Acquire(this);
  return locked;
}

void Mutex::Unlock() {
  VANGUARD_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex6UnlockEv");
  Release(this);
  real(this);
}

void Mutex::ReaderUnlock() {
  VANGUARD_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex12ReaderUnlockEv");
  Release(this);
  real(this);
}

// The *When* and Await forms: the release before each publishes what the waiting thread did
// before it waited (the Condition it passes, read by whichever thread evaluates it).
void Mutex::LockWhen(const Condition& cond) {
  VANGUARD_REAL(void (*)(Mutex*, const Condition&),
                "_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE");
  Release(this);
  HeldCondition held{&cond, this};
  real(this, Condition(&EvalHoldingLock, &held));
  Acquire(this);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  VANGUARD_REAL(void (*)(Mutex*, const Condition&),
                "_ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE");
  Release(this);
  HeldCondition held{&cond, this};
  real(this, Condition(&EvalHoldingLock, &held));
  Acquire(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  VANGUARD_REAL(bool (*)(Mutex*, const Condition&, absl::Duration),
                "_ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  Release(this);
  HeldCondition held{&cond, this};
  const bool met = real(this, Condition(&EvalHoldingLock, &held), timeout);
  Acquire(this);
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  VANGUARD_REAL(bool (*)(Mutex*, const Condition&, absl::Time),
                "_ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  Release(this);
  HeldCondition held{&cond, this};
  const bool met = real(this, Condition(&EvalHoldingLock, &held), deadline);
  Acquire(this);
  return met;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  VANGUARD_REAL(
      bool (*)(Mutex*, const Condition&, absl::Duration),
      "_ZN4absl7debian35Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  Release(this);
  HeldCondition held{&cond, this};
  const bool met = real(this, Condition(&EvalHoldingLock, &held), timeout);
  Acquire(this);
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  VANGUARD_REAL(bool (*)(Mutex*, const Condition&, absl::Time),
                "_ZN4absl7debian35Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  Release(this);
  HeldCondition held{&cond, this};
  const bool met = real(this, Condition(&EvalHoldingLock, &held), deadline);
  Acquire(this);
  return met;
}

void Mutex::Await(const Condition& cond) {
  VANGUARD_REAL(void (*)(Mutex*, const Condition&),
                "_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE");
  Release(this);
  HeldCondition held{&cond, this};
  real(this, Condition(&EvalHoldingLock, &held));
  Acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  VANGUARD_REAL(bool (*)(Mutex*, const Condition&, absl::Duration),
                "_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  Release(this);
  HeldCondition held{&cond, this};
  const bool met = real(this, Condition(&EvalHoldingLock, &held), timeout);
  Acquire(this);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  VANGUARD_REAL(bool (*)(Mutex*, const Condition&, absl::Time),
                "_ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  Release(this);
  HeldCondition held{&cond, this};
  const bool met = real(this, Condition(&EvalHoldingLock, &held), deadline);
  Acquire(this);
  return met;
}

// CondVar waits give the mutex up and take it again.
void CondVar::Wait(Mutex* mu) {
  VANGUARD_REAL(void (*)(CondVar*, Mutex*), "_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE");
  Release(mu);
  real(this, mu);
  Acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  VANGUARD_REAL(bool (*)(CondVar*, Mutex*, absl::Duration),
                "_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  Release(mu);
  const bool timed_out = real(this, mu, timeout);
  Acquire(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  VANGUARD_REAL(bool (*)(CondVar*, Mutex*, absl::Time),
                "_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  Release(mu);
  const bool timed_out = real(this, mu, deadline);
  Acquire(mu);
  return timed_out;
}

// Notification: the waits return at once, without the mutex, once notified.
void Notification::Notify() {
  VANGUARD_REAL(void (*)(Notification*), "_ZN4absl7debian312Notification6NotifyEv");
  Release(this);
  real(this);
}

void Notification::WaitForNotification() const {
  VANGUARD_REAL(void (*)(const Notification*),
                "_ZNK4absl7debian312Notification19WaitForNotificationEv");
  real(this);
  Acquire(this);
}

bool Notification::WaitForNotificationWithTimeout(absl::Duration timeout) const {
  VANGUARD_REAL(bool (*)(const Notification*, absl::Duration),
                "_ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  const bool notified = real(this, timeout);
  if (notified) Acquire(this);
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(absl::Time deadline) const {
  VANGUARD_REAL(bool (*)(const Notification*, absl::Time),
                "_ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  const bool notified = real(this, deadline);
  if (notified) Acquire(this);
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl
