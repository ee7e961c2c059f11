// Small helpers shared by the `yolocache` subcommands: option parsing, printing (Ctrl-C: interrupt.h).
#pragma once

#include <atomic>
#include <string>

#include "libcache/format/record_format.h"
#include "libcache/report_json.h"  // JsonText, for every --json document
#include "base/status.h"
#include "tools/common/interrupt.h"  // InstallInterruptFlag: every long loop polls it, stops, cleans up, exit 130

namespace yc::cli {

// "none" | "zstd[:LEVEL]" | "jpeg[:QUALITY]" | "auto[:QUALITY]" (ParseCodecSpec, with the flag's name).
Status ParseCompressOption(const std::string& text, Codec* out);

// "256M", "1G", "1048576" -> bytes.
Status ParseByteSize(const std::string& text, uint64_t* out);

// Prints "yolocache <cmd>: <status>" to stderr and returns the exit code for it.
int Fail(const std::string& command, const Status& status);

// True when the path is a built cache (has manifest.json) rather than a source dataset.
bool IsCacheDir(const std::string& path);

}  // namespace yc::cli
