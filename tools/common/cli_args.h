// Command-line conveniences shared by `yolocache` and `yolocache-train`, applied around CLI11:
//
//   std::vector<std::string> args(argv + 1, argv + argc);
//   args = RewriteKeyValueArgs(app, args, {{"model", "--weights", ".pt"}});   // before app.parse
//   try { app.parse(ReversedForCli11(args)); }
//   catch (const CLI::ParseError& e) { ...; std::cerr << ClosestMatchHint(app, args); }
//
// or ParseCommandLine(), which does all of it and prints CLI11's message followed by the hint.
//
// key=value (Ultralytics' syntax: `yolo train data=coco128.yaml epochs=3 amp=False`): after the
// subcommand, a `key=value` token whose key is an identifier becomes `--key value`, `_` read as `-`
// (close_mosaic= is --close-mosaic); a key naming a positional argument (`data=` of `build`) becomes
// that positional value. Booleans: for a flag `--k`, k=True/true/1/yes gives `--k` and k=False/false/
// 0/no gives `--no-k` when that flag exists (else nothing: the flag stays off); for a flag that only
// exists as `--no-k` (val=False -> --no-val) the other way round. Aliases map Ultralytics' names where
// ours differ. A token following an option that takes a value is that value, never rewritten. Unknown
// keys are rewritten too, so CLI11 rejects them by name and the hint can name the closest option.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"

namespace yc::cli {

// Ultralytics' key for one of our options: key=value -> `option value` (when `value_suffix` is
// non-empty, only for values ending with it: model=x.pt -> --weights x.pt).
struct KeyAlias {
  std::string key;
  std::string option;
  std::string value_suffix;
};

// `args` without the program name, in order; returns them rewritten, in order.
std::vector<std::string> RewriteKeyValueArgs(CLI::App& app, const std::vector<std::string>& args,
                                             const std::vector<KeyAlias>& aliases = {});

// Levenshtein distance (insertions, deletions, substitutions), for "did you mean".
size_t EditDistance(std::string_view a, std::string_view b);

// "did you mean 'build'?" lines for a first word that is no subcommand and for `--options` the chosen
// subcommand does not have, each naming the closest candidate within a small edit distance; "" when
// nothing is close.
std::string ClosestMatchHint(CLI::App& app, const std::vector<std::string>& args);

// A binary's reading of the whole line before the key=value rewriting (yolocache-train: Ultralytics'
// grammar, tools/yolocache_train/ultralytics_line.h): the tokens to parse, or a usage error (exit 2).
using LineRewrite = std::function<Result<std::vector<std::string>>(CLI::App&, const std::vector<std::string>&)>;

// Rewrites (`rewrite` first, when given), parses; on a parse error prints CLI11's message (or the help) and the hint. Returns -1
// when the command should run, else the exit code (0 after --help/--version, 2 for usage errors).
// `read`, when given, receives the tokens as parsed (after both rewritings).
int ParseCommandLine(CLI::App& app, int argc, char** argv, const std::vector<KeyAlias>& aliases = {},
                     const LineRewrite& rewrite = nullptr, std::vector<std::string>* read = nullptr);

}  // namespace yc::cli
