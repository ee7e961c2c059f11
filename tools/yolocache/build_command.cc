// `yolocache build DATA --out CACHE`: audit + decode once + pack into shards or LMDB.
#include <functional>
#include <iostream>

#include "libcache/base/path_text.h"
#include "libcache/build/builder.h"
#include "libcache/report_json.h"
#include "libcache/source/decode.h"
#include "tools/common/cli_validators.h"
#include "tools/common/command.h"
#include "tools/common/progress_bar.h"
#include "tools/yolocache/cli_util.h"

namespace yc::cli {
namespace {

// --update found old records that failed their checksum: name each on stderr (whatever the output mode),
// since the old cache was damaged even though the new one is sound.
void WarnRedecoded(const BuildReport& r) {
  for (const SplitBuildStats& s : r.splits) {
    for (const std::string& source : s.redecoded_corrupt) {
      std::cerr << "yolocache build: warning: " << s.split << ": " << source
                << ": its record in the old cache was corrupt; decoded again from the source\n";
    }
  }
}

struct BuildArgs {
  BuildOptions options;
  std::string source, out, backend = "shards", compress = "none", shard_size = "1G";
  bool json = false;
};

int RunBuild(BuildArgs& args) {
  BuildOptions& o = args.options;
  o.source = args.source;
  o.out = args.out;
  if (!ParseBackend(args.backend, &o.backend))
    return Fail("build", Status::InvalidArgument("--backend must be shards or lmdb"));
  if (Status st = ParseCompressOption(args.compress, &o.codec); !st.ok()) return Fail("build", st);
  if (Status st = ParseByteSize(args.shard_size, &o.shard_size); !st.ok()) return Fail("build", st.WithContext("--shard-size"));
  o.cancel = InstallInterruptFlag();
  SplitProgress bar("build");
  o.progress = std::ref(bar);
  Result<BuildReport> report = BuildCache(o);
  bar.Finish();
  if (!report.ok()) return Fail("build", report.status());
  const BuildReport& r = *report;
  WarnRedecoded(r);
  if (args.json) {
    std::cout << JsonText(BuildReportJson(r)) << "\n";
    return kExitOk;
  }
  std::cout << "dataset root: " << PrintableText(r.root.string()) << " (from " << PrintableText(r.root_from) << "), "
            << r.names.size() << " classes\n";
  for (const SplitBuildStats& s : r.splits) {
    std::cout << s.split << ": " << s.records << " records from " << s.audit.summary.images << " images ("
              << s.audit.summary.backgrounds << " backgrounds, " << s.audit.summary.excluded << " excluded, "
              << s.audit.summary.boxes << " boxes";
    if (o.update) std::cout << ", " << s.reused << " reused";
    if (o.codec.kind == Codec::Kind::kJpeg || o.codec.kind == Codec::Kind::kAuto)
      std::cout << ", " << s.jpeg_records << " stored as JPEG";
    if (!s.redecoded_corrupt.empty())
      std::cout << ", " << s.redecoded_corrupt.size() << " re-decoded because their old record was corrupt";
    std::cout << ")\n";
  }
  std::cout << "cache: " << r.cache_dir.string() << "  " << HumanBytes(static_cast<double>(r.bytes_on_disk))
            << " on disk (" << HumanBytes(static_cast<double>(r.pixel_bytes)) << " of pixels)\n";
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f s, %.0f img/s", r.seconds, r.images_per_second());
  std::cout << "time: " << rate << "\n";
  const size_t problems = r.total.errors + r.total.warnings;
  std::cout << "audit: " << r.total.errors << " errors, " << r.total.warnings << " warnings"
            << (problems ? " (excluded images are listed there)" : "") << " -> " << r.audit_report.string() << "\n";
  return kExitOk;
}

Registration reg("build", "Audit a YOLO dataset and decode it once into a cache of mmap-able shards or LMDB",
                 [](CLI::App& app) -> Action {
                   auto a = std::make_shared<BuildArgs>();
                   app.add_option("data", a->source, "Ultralytics data YAML or dataset directory")->required();
                   app.add_option("-o,--out", a->out, "Cache directory to create, or a yolocache cache to replace")->required();
                   app.add_option("--imgsz", a->options.imgsz,
                                  "Resize so the long side is this (0: keep originals; at most 8192)")
                       ->check(CLI::Range(0, kMaxImgsz))
                       ->capture_default_str();
                   app.add_option("--backend", a->backend, "shards | lmdb")->capture_default_str();
                   app.add_option("--compress", a->compress,
                                  "none | zstd[:LEVEL] | jpeg[:QUALITY] (lossy) | auto[:QUALITY] (JPEG where it halves "
                                  "the image, else raw); QUALITY default " + std::to_string(kDefaultJpegQuality))->capture_default_str();
                   app.add_option("--shard-size", a->shard_size, "Target shard size (e.g. 512M, 1G)")->capture_default_str();
                   app.add_option("--split", a->options.splits, "Build only these splits (repeatable)");
                   app.add_flag("--update", a->options.update, "Re-decode only images whose bytes changed since the last build");
                   app.add_option("-j,--threads", a->options.threads, "Worker threads (0: all cores)")
                       ->capture_default_str()
                       ->check(ThreadCount());
                   app.add_flag("--json", a->json, "Print a JSON summary on stdout");
                   return [a] { return RunBuild(*a); };
                 });

}  // namespace
}  // namespace yc::cli
