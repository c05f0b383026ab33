#ifndef GPUOP_COMMON_SIGNALS_H_
#define GPUOP_COMMON_SIGNALS_H_

namespace gpuop::common {

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts afterwards, so a
// daemon can take them synchronously with WaitForTerminationSignal(). Call it first in main().
void BlockTerminationSignals();

// Waits for SIGINT or SIGTERM and returns its number.
int WaitForTerminationSignal();

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_SIGNALS_H_
