// Small helpers shared by the `yolocache` subcommands: Ctrl-C handling, option parsing, printing.
#pragma once

#include <atomic>
#include <string>

#include "libcache/record_format.h"
#include "libcache/report_json.h"  // JsonText, for every --json document
#include "libcache/status.h"

namespace yc::cli {

// Installs SIGINT/SIGTERM/SIGHUP handlers that set the returned flag: every long loop polls it, stops,
// removes what it had started (staging folders, partial outputs) and the command exits 130.
const std::atomic<bool>* InstallInterruptFlag();

// "none" | "zstd" | "zstd:LEVEL".
Status ParseCompressOption(const std::string& text, Codec* out);

// "256M", "1G", "1048576" -> bytes.
Status ParseByteSize(const std::string& text, uint64_t* out);

// Prints "yolocache <cmd>: <status>" to stderr and returns the exit code for it.
int Fail(const std::string& command, const Status& status);

// True when the path is a built cache (has manifest.json) rather than a source dataset.
bool IsCacheDir(const std::string& path);

}  // namespace yc::cli
