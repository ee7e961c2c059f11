// <run>/args.yaml as Ultralytics' trainer writes it (ultralytics/engine/trainer.py saves vars(self.args)
// with YAML.save): every key of ultralytics/cfg/default.yaml in that file's order, then save_dir, so that
// tooling reading an Ultralytics run folder (and `yolo cfg=args.yaml`) reads ours. Our values where we
// have the setting (data is the user's --data as given, not the cache it was built into), Ultralytics'
// defaults for settings we do not have. Options only we have (order, window, amp dtype, ...) are not in
// it: the checkpoints' meta keeps every option. The run id (engine/run_identity.h) rides in a leading
// YAML comment, which YAML readers skip. docs/TRAINER.md lists the keys.
//
//   WriteFileAtomically(out / "args.yaml", ArgsYaml(options, run_id));
//   std::string id = RunIdFromArgsYaml(text);  // "" when there is none
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trainer/config/train_options.h"

namespace yc::trainer {

// The dictionary itself (Ultralytics' vars(trainer.args)): args.yaml's content, and the `train_args` of
// the checkpoints (trainer/io/ultralytics_checkpoint_writer.h).
nlohmann::ordered_json UltralyticsArgs(const TrainOptions& options);
std::string ArgsYaml(const TrainOptions& options, const std::string& run_id);

// The run id in the leading comment of an args.yaml written by ArgsYaml, or "".
std::string RunIdFromArgsYaml(const std::string& text);

// A YAML plain scalar of `text`, single-quoted when YAML would read it as something else (empty, a
// number, a bool or null word, leading indicator characters, ": " or " #" inside); not-UTF-8 bytes as \xNN.
std::string YamlString(const std::string& text);
// A float as Python's repr (the shortest form that reads back, always with a '.' or an exponent).
std::string YamlFloat(double v);

}  // namespace yc::trainer
