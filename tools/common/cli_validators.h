// CLI11 validators for the subcommands of `yolocache` and `yolocache-train`' numeric options, whose messages name the bound:
//
//   app.add_option("--batch", a->batch, "Batch size")->check(AtLeast(1));     // "--batch: must be >= 1, got 0"
//   app.add_option("--seed", a->seed, "Seed")->check(NoMinusSign());           // "--seed: must be >= 0, got -1"
//
// CLI11's own PositiveNumber / NonNegativeNumber print DBL_MAX as their upper bound, and CLI11 parses "-1"
// into an unsigned option as 2^64 - 1 without complaint; these say what is allowed instead. Validators
// run on values given on the command line only, so a default outside the range (-1 for "automatic")
// stays available to the code. For a fixed set of words use CLI::IsMember({...}).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "libcache/base/thread_limit.h"

namespace yc::cli {

// An integer >= `min`.
inline CLI::Validator AtLeast(long long min) {
  return CLI::Validator(
      [min](std::string& input) -> std::string {
        long long value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "'" + input + "' is not an integer";
        if (value < min) return "must be >= " + std::to_string(min) + ", got " + input;
        return std::string();
      },
      ">= " + std::to_string(min), "AtLeast");
}

// A value for an unsigned option: no minus sign (the option's own conversion does the rest).
inline CLI::Validator NoMinusSign() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        const size_t first = input.find_first_not_of(" \t");
        if (first != std::string::npos && input[first] == '-') return "must be >= 0, got " + input;
        return std::string();
      },
      ">= 0", "NoMinusSign");
}

// A thread count: 0 (all cores) .. kMaxThreads (libcache/base/thread_limit.h says why there is a bound).
inline CLI::Validator ThreadCount() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        long long value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "'" + input + "' is not an integer";
        if (value < 0 || value > kMaxThreads) return "must be 0 (all cores) .. " + std::to_string(kMaxThreads) + ", got " + input;
        return std::string();
      },
      "0.." + std::to_string(kMaxThreads), "ThreadCount");
}

}  // namespace yc::cli
