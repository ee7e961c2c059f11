// The trainer's wall-clock readings: a steady clock and the seconds since one of its readings.
#pragma once

#include <chrono>

namespace yc::trainer {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace yc::trainer
