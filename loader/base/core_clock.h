// The clock a core runs at right now, for benchmarks that must tell a host's frequency changes apart
// from a program's own scaling. Busy cores share a power budget: on the GPU host a core that ran at
// 2.7 GHz alone ran at 2.45 GHz while the other 15 vCPUs ran the loader (BENCHMARKS.md). Inside a VM
// neither perf counters nor APERF/MPERF are reachable, so the clock is measured the portable way: a
// chain of dependent 64-bit integer multiplies, 3 cycles each on every x86-64 core of the last decade,
// timed with the steady clock.
#pragma once

namespace yc {

struct CoreClockSample {
  double cycles = 0;   // the chain's length in cycles; 0 where its latency is unknown (non-x86)
  double seconds = 0;  // how long it took
};

// Runs a chain of `multiplies` (rounded up to a multiple of 4) on the calling thread: ~1 us for 1024.
CoreClockSample SampleCoreClock(int multiplies);

// True where SampleCoreClock measures cycles (x86-64).
bool CoreClockAvailable();

}  // namespace yc
