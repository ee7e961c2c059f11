#include "loader/option_table.h"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

namespace yc {

namespace {

Status Bad(std::string_view name, const std::string& what) {
  return Status::InvalidArgument("loader option '" + std::string(name) + "': " + what);
}

const char* TypeName(OptionType type) {
  switch (type) {
    case OptionType::kBool: return "bool";
    case OptionType::kInt: return "int";
    case OptionType::kFloat: return "float";
    case OptionType::kChoice: return "str";
  }
  return "?";
}

// The value as a double (ints too), or nothing for another type.
bool AsNumber(const OptionValue& v, double* out) {
  if (const auto* d = std::get_if<double>(&v)) return (*out = *d), true;
  if (const auto* i = std::get_if<int64_t>(&v)) return (*out = static_cast<double>(*i)), true;
  return false;
}

Status WrongType(std::string_view name, OptionType type) {
  return Bad(name, std::string("expected ") + TypeName(type));
}

template <typename T>
Status SetInteger(std::string_view name, const OptionValue& v, T* out) {
  const auto* i = std::get_if<int64_t>(&v);
  if (i == nullptr) return WrongType(name, OptionType::kInt);
  if constexpr (std::is_unsigned_v<T>) {
    if (*i < 0) return Bad(name, "must be >= 0, got " + std::to_string(*i));
  } else {
    if (*i < std::numeric_limits<T>::min() || *i > std::numeric_limits<T>::max())
      return Bad(name, "out of range, got " + std::to_string(*i));
  }
  *out = static_cast<T>(*i);
  return Status::OK();
}

Status SetFloat(std::string_view name, const OptionValue& v, double* out) {
  double d = 0;
  if (!AsNumber(v, &d)) return WrongType(name, OptionType::kFloat);
  if (!std::isfinite(d)) return Bad(name, "must be finite");
  *out = d;
  return Status::OK();
}

Status SetBool(std::string_view name, const OptionValue& v, bool* out) {
  const auto* b = std::get_if<bool>(&v);
  if (b == nullptr) return WrongType(name, OptionType::kBool);
  *out = *b;
  return Status::OK();
}

// A choice: the text parsed by `parse` into `*out`.
template <typename T, typename Parse>
Status SetChoice(std::string_view name, const OptionValue& v, Parse parse, T* out) {
  const auto* s = std::get_if<std::string>(&v);
  if (s == nullptr) return WrongType(name, OptionType::kChoice);
  Result<T> parsed = parse(*s);
  if (!parsed.ok()) return Bad(name, parsed.status().message());
  *out = *parsed;
  return Status::OK();
}

// Mebibytes as a user writes them -> a byte count; at least `min_mib`.
Status SetMib(std::string_view name, const OptionValue& v, double min_mib, uint64_t* out) {
  double mib = 0;
  if (!AsNumber(v, &mib)) return WrongType(name, OptionType::kFloat);
  if (!(mib >= min_mib) || !std::isfinite(mib) || mib > 1e12)
    return Bad(name, "must be >= " + OptionText(min_mib) + " (MiB), got " + OptionText(mib));
  *out = static_cast<uint64_t>(mib * (1 << 20));
  return Status::OK();
}

// "hsv_h" -> "--hsv-h". The windowed order's MiB options were --window and --read-ahead before Python
// had them (window_mb, read_ahead_mb): the CLIs keep their names.
std::string FlagFor(std::string_view name) {
  if (name == "window_mb") return "--window";
  if (name == "read_ahead_mb") return "--read-ahead";
  std::string flag = "--" + std::string(name);
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

template <typename T>
OptionSpec Int(const char* name, T LoaderOptions::*member, const char* help) {
  return {name, FlagFor(name), OptionType::kInt, static_cast<int64_t>(LoaderOptions().*member), {}, help, false,
          [name, member](const OptionValue& v, LoaderOptions* o) { return SetInteger(name, v, &(o->*member)); },
          [member](const LoaderOptions& o) { return OptionValue(static_cast<int64_t>(o.*member)); }};
}

OptionSpec Float(const char* name, double LoaderOptions::*member, const char* help) {
  return {name, FlagFor(name), OptionType::kFloat, LoaderOptions().*member, {}, help, false,
          [name, member](const OptionValue& v, LoaderOptions* o) { return SetFloat(name, v, &(o->*member)); },
          [member](const LoaderOptions& o) { return OptionValue(o.*member); }};
}

OptionSpec Bool(const char* name, bool LoaderOptions::*member, const char* help) {
  return {name, FlagFor(name), OptionType::kBool, LoaderOptions().*member, {}, help, false,
          [name, member](const OptionValue& v, LoaderOptions* o) { return SetBool(name, v, &(o->*member)); },
          [member](const LoaderOptions& o) { return OptionValue(o.*member); }};
}

OptionSpec Mib(const char* name, uint64_t LoaderOptions::*member, double min_mib, const char* help) {
  return {name, FlagFor(name), OptionType::kFloat, static_cast<double>(LoaderOptions().*member >> 20), {}, help, false,
          [name, member, min_mib](const OptionValue& v, LoaderOptions* o) {
            return SetMib(name, v, min_mib, &(o->*member));
          },
          [member](const LoaderOptions& o) { return OptionValue(static_cast<double>(o.*member) / (1 << 20)); }};
}

template <typename T, typename Parse, typename Name>
OptionSpec Choice(const char* name, T LoaderOptions::*member, std::vector<std::string> choices, Parse parse,
                  Name print, const char* help) {
  return {name, FlagFor(name), OptionType::kChoice, std::string(print(LoaderOptions().*member)), std::move(choices), help, false,
          [name, member, parse](const OptionValue& v, LoaderOptions* o) {
            return SetChoice(name, v, parse, &(o->*member));
          },
          [member, print](const LoaderOptions& o) { return OptionValue(std::string(print(o.*member))); }};
}

// window_io: its default is the rule, auto, which LoaderOptions holds resolved (direct for one process).
OptionSpec WindowIoChoice(const char* help) {
  const char* name = "window_io";
  return {name, FlagFor(name), OptionType::kChoice, std::string("auto"), {"auto", "direct", "page-cache"}, help, false,
          [name](const OptionValue& v, LoaderOptions* o) {
            auto parse = [o](std::string_view text) { return ParseWindowIo(text, o->world_size); };
            return SetChoice(name, v, parse, &o->window_io);
          },
          [](const LoaderOptions& o) { return OptionValue(std::string(WindowIoName(o.window_io))); }};
}

OptionSpec Hyp(const char* name, double AugmentHyp::*member, const char* help) {
  return {name, FlagFor(name), OptionType::kFloat, AugmentHyp().*member, {}, help, true,
          [name, member](const OptionValue& v, LoaderOptions* o) { return SetFloat(name, v, &(o->hyp.*member)); },
          [member](const LoaderOptions& o) { return OptionValue(o.hyp.*member); }};
}

OptionSpec HypInt(const char* name, int AugmentHyp::*member, const char* help) {
  return {name, FlagFor(name), OptionType::kInt, static_cast<int64_t>(AugmentHyp().*member), {}, help, true,
          [name, member](const OptionValue& v, LoaderOptions* o) { return SetInteger(name, v, &(o->hyp.*member)); },
          [member](const LoaderOptions& o) { return OptionValue(static_cast<int64_t>(o.hyp.*member)); }};
}

// A choice among the hyperparameters (copy_paste_mode): read and written on o.hyp.
template <typename T, typename Parse, typename Name>
OptionSpec HypChoice(const char* name, T AugmentHyp::*member, std::vector<std::string> choices, Parse parse,
                     Name print, const char* help) {
  return {name, FlagFor(name), OptionType::kChoice, std::string(print(AugmentHyp().*member)), std::move(choices), help,
          true,
          [name, member, parse](const OptionValue& v, LoaderOptions* o) {
            return SetChoice(name, v, parse, &(o->hyp.*member));
          },
          [member, print](const LoaderOptions& o) { return OptionValue(std::string(print(o.hyp.*member))); }};
}

Result<LoaderOptions::Path> ParsePath(std::string_view text) {
  if (text == "fast") return LoaderOptions::Path::kFast;
  if (text == "reference") return LoaderOptions::Path::kReference;
  return Status::InvalidArgument("expected fast or reference, got '" + std::string(text) + "'");
}

const char* PathName(LoaderOptions::Path path) { return path == LoaderOptions::Path::kFast ? "fast" : "reference"; }

std::vector<OptionSpec> MakeTable() {
  using O = LoaderOptions;
  using H = AugmentHyp;
  return {
      Choice("mode", &O::mode, {"train", "val"}, ParseLoaderMode, LoaderModeName,
             "train: Mosaic, affine, HSV and flips; val: letterboxed, in aspect-ratio order"),
      Int("batch", &O::batch, "images per batch (per rank)"),
      Int("imgsz", &O::imgsz, "train: the square size; val: the long side (a multiple of stride)"),
      Int("epochs", &O::epochs, "epochs in the run (close_mosaic counts back from the last)"),
      Bool("rect", &O::rect, "val: rectangular batches in aspect-ratio order (false: imgsz squares)"),
      Bool("train_rect", &O::train_rect,
           "train: Ultralytics' rect=True: batches in aspect-ratio order, each at its own shape, not shuffled, "
           "no mosaic, mixup or cutmix"),
      Float("pad", &O::pad, "val rect: padding, in strides, around each batch's shape"),
      Int("stride", &O::stride, "the model's largest stride: batch shapes are multiples of it"),
      Int("seed", &O::seed, "sampling and augmentation seed: a batch depends on seed, epoch, index and ranks only"),
      Bool("shuffle", &O::shuffle, "train: a new order every epoch (val never shuffles)"),
      Bool("drop_last", &O::drop_last, "drop this rank's last, incomplete batch"),
      Int("rank", &O::rank, "this process's rank (data-parallel)"),
      Int("world_size", &O::world_size, "processes sharing each epoch"),
      Choice("order", &O::order, {"shuffle", "windowed"}, ParseSampleOrder, SampleOrderName,
             "train: shuffle (Ultralytics') | windowed (caches larger than RAM: shuffled windows of contiguous "
             "records, Mosaic partners from the window)"),
      Mib("window_mb", &O::window_bytes, 1, "windowed order: the most record MiB one window spans"),
      WindowIoChoice("windowed order: direct (O_DIRECT into the loader's buffers, around the page cache) | "
                     "page-cache (MADV_WILLNEED read-ahead) | auto (direct for one process, page-cache with several "
                     "ranks, which share it)"),
      Int("threads", &O::threads, "loader threads (0: all cores)"),
      Int("prefetch", &O::prefetch, "batches in flight ahead of the consumer"),
      Mib("read_ahead_mb", &O::read_ahead_bytes, 0, "MiB of records read from disk ahead of the workers (0: off)"),
      Choice("path", &O::path, {"fast", "reference"}, ParsePath, PathName,
             "fast (each tile warped straight into the output) | reference (Ultralytics' 2s x 2s canvas)"),
      Hyp("mosaic", &H::mosaic, "probability of Mosaic-4"),
      Hyp("mixup", &H::mixup, "probability of MixUp with a second mosaic sample"),
      Hyp("cutmix", &H::cutmix, "probability of CutMix: a region of a second mosaic sample pasted in, with its boxes"),
      Hyp("copy_paste", &H::copy_paste,
          "probability of CopyPaste (instance segments; a no-op on box labels, as in Ultralytics)"),
      HypChoice("copy_paste_mode", &H::copy_paste_mode, {"flip", "mixup"}, ParseCopyPasteMode, CopyPasteModeName,
                "where CopyPaste takes instances from: the sample mirrored (flip) or another sample (mixup)"),
      Hyp("degrees", &H::degrees, "rotation, +/- degrees"),
      Hyp("translate", &H::translate, "translation, +/- fraction of the size"),
      Hyp("scale", &H::scale, "scale gain, +/- fraction"),
      Hyp("shear", &H::shear, "shear, +/- degrees"),
      Hyp("perspective", &H::perspective, "perspective, +/- fraction (0 .. 0.001)"),
      Hyp("hsv_h", &H::hsv_h, "hue gain, fraction"),
      Hyp("hsv_s", &H::hsv_s, "saturation gain, fraction"),
      Hyp("hsv_v", &H::hsv_v, "value gain, fraction"),
      Hyp("flipud", &H::flipud, "probability of a vertical flip"),
      Hyp("fliplr", &H::fliplr, "probability of a horizontal flip"),
      Hyp("bgr", &H::bgr, "probability of the image's channels in BGR order instead of RGB"),
      HypInt("close_mosaic", &H::close_mosaic, "Mosaic, MixUp and CutMix off for the last N epochs"),
  };
}

std::string Join(const std::vector<std::string>& parts, const char* separator) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? separator : "") + parts[i];
  return s;
}

}  // namespace

const std::vector<OptionSpec>& LoaderOptionTable() {
  static const std::vector<OptionSpec> table = MakeTable();
  return table;
}

const OptionSpec* FindLoaderOption(std::string_view name) {
  for (const OptionSpec& spec : LoaderOptionTable())
    if (spec.name == name) return &spec;
  return nullptr;
}

Status SetLoaderOption(std::string_view name, const OptionValue& value, LoaderOptions* options) {
  const OptionSpec* spec = FindLoaderOption(name);
  if (spec == nullptr) return Status::InvalidArgument("unknown loader option '" + std::string(name) + "'");
  return spec->set(value, options);
}

Status SetLoaderOptions(const std::vector<std::pair<std::string, OptionValue>>& values, LoaderOptions* options) {
  for (const auto& [name, value] : values)
    if (FindLoaderOption(name) == nullptr) return Status::InvalidArgument("unknown loader option '" + name + "'");
  for (const OptionSpec& spec : LoaderOptionTable()) {
    for (const auto& [name, value] : values) {
      if (name != spec.name) continue;
      YC_RETURN_IF_ERROR(spec.set(value, options));
    }
  }
  return Status::OK();
}

Result<LoaderMode> ParseLoaderMode(std::string_view text) {
  if (text == "train") return LoaderMode::kTrain;
  if (text == "val") return LoaderMode::kVal;
  return Status::InvalidArgument("expected train or val, got '" + std::string(text) + "'");
}

Result<SampleOrder> ParseSampleOrder(std::string_view text) {
  if (text == "shuffle") return SampleOrder::kShuffle;
  if (text == "windowed") return SampleOrder::kWindowed;
  return Status::InvalidArgument("expected shuffle or windowed, got '" + std::string(text) + "'");
}

Result<WindowIo> ParseWindowIo(std::string_view text, int world_size) {
  if (text == "auto") return world_size > 1 ? WindowIo::kPageCache : WindowIo::kDirect;
  if (text == "direct") return WindowIo::kDirect;
  if (text == "page-cache") return WindowIo::kPageCache;
  return Status::InvalidArgument("expected auto, direct or page-cache, got '" + std::string(text) + "'");
}

Result<CopyPasteMode> ParseCopyPasteMode(std::string_view text) {
  if (text == "flip") return CopyPasteMode::kFlip;
  if (text == "mixup") return CopyPasteMode::kMixup;
  return Status::InvalidArgument("expected flip or mixup, got '" + std::string(text) + "'");
}

const char* CopyPasteModeName(CopyPasteMode mode) { return mode == CopyPasteMode::kFlip ? "flip" : "mixup"; }

const char* LoaderModeName(LoaderMode mode) { return mode == LoaderMode::kTrain ? "train" : "val"; }

const char* SampleOrderName(SampleOrder order) { return order == SampleOrder::kShuffle ? "shuffle" : "windowed"; }

const char* WindowIoName(WindowIo io) { return io == WindowIo::kDirect ? "direct" : "page-cache"; }

std::string OptionText(const OptionValue& value) {
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  const double d = std::get<double>(value);
  std::array<char, 32> buf;
  const auto end = std::to_chars(buf.data(), buf.data() + buf.size(), d).ptr;  // the shortest exact form
  std::string text(buf.data(), end);
  if (std::isfinite(d) && text.find_first_of(".e") == std::string::npos) text += ".0";  // reads as a float
  return text;
}

std::string MarkdownCell(std::string text) {
  for (size_t at = text.find('|'); at != std::string::npos; at = text.find('|', at + 2)) text.insert(at, "\\");
  return text;
}

std::string LoaderOptionsMarkdown(bool hyp) {
  std::string md = "| option | type | default | values | what |\n|---|---|---|---|---|\n";
  for (const OptionSpec& spec : LoaderOptionTable()) {
    if (spec.hyp != hyp) continue;
    const std::string values = spec.choices.empty() ? std::string() : "`" + Join(spec.choices, "` \\| `") + "`";
    md += "| `" + spec.name + "` | " + TypeName(spec.type) + " | `" +
          OptionText(spec.default_value) + "` | " + values + " | " + MarkdownCell(spec.help) + " |\n";
  }
  return md;
}

}  // namespace yc
