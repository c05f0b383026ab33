#ifndef GPUOP_COMMON_SIGNALS_H_
#define GPUOP_COMMON_SIGNALS_H_

#include "absl/time/time.h"

namespace gpuop::common {

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts afterwards, so a
// daemon can take them synchronously with WaitForTerminationSignal(). Call it first in main().
void BlockTerminationSignals();

// Waits for SIGINT or SIGTERM and returns its number.
int WaitForTerminationSignal();

// Waits up to `timeout` for SIGINT or SIGTERM (blocked by BlockTerminationSignals); true when one
// came.
bool TerminationSignalPending(absl::Duration timeout);

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_SIGNALS_H_
