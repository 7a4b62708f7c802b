// SPDX-License-Identifier: GPL-2.0-only
// Interposed sigaction() and signal(): for the signals the recorder handles,
// the program's handler is kept aside and run after the recorder's (which
// writes the footer); every other signal goes straight to libc.
#include "signals.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

#include "recorder.h"

namespace dltrace::record {
namespace {

using SigactionFn = int(int, const struct sigaction*, struct sigaction*);

SigactionFn* RealSigaction() {
  static SigactionFn* const real = reinterpret_cast<SigactionFn*>(dlsym(RTLD_NEXT, "sigaction"));
  return real;
}

// Per managed signal: what the program asked for (what it would see).
struct Chained {
  std::atomic<bool> managed{false};
  struct sigaction program {};
};
Chained g_chain[NSIG];
void (*g_handler)(int, siginfo_t*, void*) = nullptr;
std::mutex g_mu;  // serializes the program's changes (never taken in a handler)

bool Ignores(const struct sigaction& a) { return a.sa_handler == SIG_IGN; }

// What goes to the kernel: the recorder's handler, with the program's mask
// and the flags that shape its handler's run; or SIG_IGN, which the
// kernel must see to ignore the signal (and to keep ignoring it across exec).
void InstallLocked(int sig) {
  const struct sigaction& p = g_chain[sig].program;
  if (Ignores(p)) {
    RealSigaction()(sig, &p, nullptr);
    return;
  }
  struct sigaction real {};
  real.sa_sigaction = g_handler;
  bool has_handler = p.sa_handler != SIG_DFL;
  real.sa_flags = SA_SIGINFO | (has_handler ? p.sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER)
                                            : SA_RESTART);
  real.sa_mask = p.sa_mask;
  RealSigaction()(sig, &real, nullptr);
}

bool Managed(int sig) {
  return sig > 0 && sig < NSIG && g_chain[sig].managed.load(std::memory_order_acquire);
}

}  // namespace

void InstallSignalChain(const int* signals, int n, void (*handler)(int, siginfo_t*, void*)) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_handler = handler;
  for (int i = 0; i < n; ++i) {
    int sig = signals[i];
    if (Managed(sig) || !RealSigaction()) continue;
    RealSigaction()(sig, nullptr, &g_chain[sig].program);
    InstallLocked(sig);
    g_chain[sig].managed.store(true, std::memory_order_release);
  }
}

void ChainSignal(int sig, siginfo_t* info, void* ctx) {
  struct sigaction a = g_chain[sig].program;
  if (a.sa_handler == SIG_IGN) return;
  if (a.sa_handler == SIG_DFL) {
    // Terminate as the default action would: it happens when this returns.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    RealSigaction()(sig, &dfl, nullptr);
    raise(sig);
    return;
  }
  if (a.sa_flags & SA_RESETHAND) {
    // One-shot: the next delivery takes the default action, as without us.
    g_chain[sig].program.sa_handler = SIG_DFL;
    g_chain[sig].program.sa_flags &= ~(SA_SIGINFO | SA_RESETHAND);
  }
  if (a.sa_flags & SA_SIGINFO)
    a.sa_sigaction(sig, info, ctx);
  else
    a.sa_handler(sig);
}

}  // namespace dltrace::record

using dltrace::record::g_chain;
using dltrace::record::g_mu;

extern "C" DLTRACE_EXPORT int sigaction(int sig, const struct sigaction* act,
                                        struct sigaction* oldact) {
  if (!dltrace::record::Managed(sig)) return dltrace::record::RealSigaction()(sig, act, oldact);
  std::lock_guard<std::mutex> lock(g_mu);
  if (oldact) *oldact = g_chain[sig].program;
  if (act) {
    g_chain[sig].program = *act;
    dltrace::record::InstallLocked(sig);
  }
  return 0;
}

// glibc's signal(): BSD semantics (the signal blocked in its handler, calls
// restarted), done through the interposed sigaction for managed signals.
extern "C" DLTRACE_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
  using SignalFn = sighandler_t(int, sighandler_t);
  if (!dltrace::record::Managed(sig)) {
    static SignalFn* const real = reinterpret_cast<SignalFn*>(dlsym(RTLD_NEXT, "signal"));
    return real(sig, handler);
  }
  struct sigaction act {}, old {};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  act.sa_flags = SA_RESTART;
  sigaction(sig, &act, &old);
  return old.sa_handler;
}
