// SPDX-License-Identifier: GPL-2.0-only
// The recorder's termination-signal handlers stay first when the program
// installs its own later: sigaction() and signal() are interposed for them.
#pragma once

#include <signal.h>

namespace dltrace::record {

// Installs `handler` for each of `signals` (count `n`), remembering what the
// program had there; a signal the program ignores stays ignored. From then
// on, the program's sigaction()/signal() calls for these signals change
// what ChainSignal runs instead of replacing `handler`.
void InstallSignalChain(const int* signals, int n, void (*handler)(int, siginfo_t*, void*));

// From `handler`: does what the program asked for on `sig`, as the kernel
// would have: its handler (SA_SIGINFO or not; SA_RESETHAND resets it to the
// default first), nothing for SIG_IGN, the default action for SIG_DFL.
// Async-signal-safe.
void ChainSignal(int sig, siginfo_t* info, void* ctx);

}  // namespace dltrace::record
