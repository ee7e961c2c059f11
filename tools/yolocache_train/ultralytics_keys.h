// Every key of Ultralytics 8.3's cfg/default.yaml, with its default and what `yolocache-train` does with
// it, so that an Ultralytics command line (`yolo train data=coco128.yaml epochs=3 ...`, a `cfg=` file, an
// args.yaml) runs here unchanged:
//  * kOption: the key is one of our options (`workers` is --threads; `epochs` is --epochs), for the
//    commands that have that option; the others ignore it, as Ultralytics' modes ignore each other's keys.
//  * kGrammar: the key changes how the line is read (task, mode, model, cfg, resume, source, ...):
//    tools/yolocache_train/ultralytics_line.h handles it.
//  * kIgnored: a key that has no effect on a detection run here (another task's, a display or export
//    backend's): accepted, with one line saying why when its value is not the default.
// The table is data, not code: tests/trainer/ultralytics_keys_test.cc feeds every key of the
// default.yaml in ../shared/ultralytics to the binary, so a key added upstream shows up as a failure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace yc::cli {

enum class KeyUse { kOption, kGrammar, kIgnored };

struct UltralyticsKey {
  std::string_view key;
  std::string_view default_value;  // as default.yaml writes it ("" for null)
  KeyUse use;
  // kOption: our option ("--threads"); "" = --key with '_' as '-'. kIgnored: why.
  std::string_view detail;
};

// default.yaml's keys in its order.
const std::vector<UltralyticsKey>& UltralyticsKeys();
// The key's entry, or nullptr for a word that is no default.yaml key.
const UltralyticsKey* FindUltralyticsKey(std::string_view key);
// The option a kOption key maps to ("--threads" for workers, "--close-mosaic" for close_mosaic).
std::string OptionForKey(const UltralyticsKey& k);
// Whether `value` means the key's default as Ultralytics reads values (True/true, 0.5/.5, None/null/"").
bool IsDefaultValue(const UltralyticsKey& k, std::string_view value);
// Whether `value` is YAML's or Python's null (None, null, ~, or nothing).
bool IsNullWord(std::string_view value);
// "true"/"false" for Python's and YAML's boolean words (True, false, 1, 0, yes, no), else "".
std::string BoolWord(std::string_view value);

}  // namespace yc::cli
