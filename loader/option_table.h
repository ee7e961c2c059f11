// The loader's option vocabulary, defined once: every option a user sets on the loader (yolocache.Loader's
// keywords, the --flags of `yolocache bench` and `yolocache-train`, the tables in docs/PYTHON.md), with
// its name, type, default, allowed values and help. Names are Ultralytics' (cfg/default.yaml) where it has
// the option; a CLI spells them in --kebab-case (hsv_h is --hsv-h, OptionSpec::flag). Defaults come from LoaderOptions and
// AugmentHyp themselves (loader/options.h), so they are written in one place.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"
#include "loader/options.h"

namespace yc {

enum class OptionType { kBool, kInt, kFloat, kChoice };

// A value as a front end hands it over: Python's bool/int/float/str, or a parsed command-line word.
using OptionValue = std::variant<bool, int64_t, double, std::string>;

struct OptionSpec {
  std::string name;                  // snake_case: yolocache.Loader's keyword, Ultralytics' key
  std::string flag;                  // the CLIs' spelling: --kebab-case of the name (window_mb: --window)
  OptionType type;
  OptionValue default_value;         // the default, in the option's type: LoaderOptions' (window_io: auto)
  std::vector<std::string> choices;  // kChoice: the values accepted
  std::string help;
  bool hyp = false;                  // an Ultralytics augmentation hyperparameter (yolocache.HYP_DEFAULTS)
  // Sets the option from a value of its type (an int is accepted for a float); InvalidArgument otherwise.
  std::function<Status(const OptionValue&, LoaderOptions*)> set;
  std::function<OptionValue(const LoaderOptions&)> get;  // the option's value in its type
};

// In the order the docs list them: the batch, the sampling, the resources, then the hyperparameters.
const std::vector<OptionSpec>& LoaderOptionTable();
// nullptr when `name` is no loader option.
const OptionSpec* FindLoaderOption(std::string_view name);
// The option `name` set to `value`: InvalidArgument naming it when unknown or of the wrong type. Ranges and
// combinations are ValidateOptions' (loader/options.h). window_io's auto is resolved against the
// world_size set so far: set options in the table's order (world_size comes first), as
// SetLoaderOptions does.
Status SetLoaderOption(std::string_view name, const OptionValue& value, LoaderOptions* options);
// Every (name, value) of `values`, in the table's order; the first unknown name or bad value fails.
Status SetLoaderOptions(const std::vector<std::pair<std::string, OptionValue>>& values, LoaderOptions* options);

// The spelling of each choice, parsed and printed in one place.
Result<LoaderMode> ParseLoaderMode(std::string_view text);    // train | val
Result<SampleOrder> ParseSampleOrder(std::string_view text);  // shuffle | windowed
// window_io: auto | direct | page-cache. auto: direct for one process; the page cache with several ranks,
// which then share each window's pages on their host instead of each reading it from the disk.
Result<WindowIo> ParseWindowIo(std::string_view text, int world_size);
Result<CopyPasteMode> ParseCopyPasteMode(std::string_view text);  // flip | mixup
const char* LoaderModeName(LoaderMode mode);
const char* CopyPasteModeName(CopyPasteMode mode);
const char* SampleOrderName(SampleOrder order);
const char* WindowIoName(WindowIo io);

// A value as a user writes it: "0.015", "1.0", "shuffle", "true".
std::string OptionText(const OptionValue& value);
// `text` as a Markdown table cell ('|' escaped). A Markdown table of the options (name, type, default, values, meaning); hyperparameters only or the rest.
std::string MarkdownCell(std::string text);
std::string LoaderOptionsMarkdown(bool hyp);

}  // namespace yc
