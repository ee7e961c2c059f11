#include "tools/yolocache_train/ultralytics_line.h"

#include <algorithm>
#include <cstdlib>
#include <cctype>
#include <filesystem>
#include <optional>
#include <sstream>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "libcache/base/path_text.h"
#include "tools/yolocache_train/ultralytics_keys.h"
#include "tools/yolocache_train/weights_lookup.h"

namespace yc::cli {
namespace fs = std::filesystem;
namespace {

constexpr const char* kTasks[] = {"detect", "segment", "classify", "pose", "obb"};

bool IsOneOf(const std::string& word, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(), [&](const char* w) { return word == w; });
}
bool IsTask(const std::string& w) { return std::any_of(std::begin(kTasks), std::end(kTasks), [&](const char* t) { return w == t; }); }

Status Refuse(std::string why) { return Status::InvalidArgument(std::move(why)); }

Status TaskStatus(const std::string& task) {
  if (task == "detect") return Status::OK();
  if (IsTask(task)) {
    return Refuse("task=" + task + ": yolocache-train trains and runs detection models only (task=detect)");
  }
  return Refuse("task=" + PrintableText(task) + ": not a task (detect, segment, classify, pose, obb)");
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}


// The number `text` holds entirely (Python's float()), or nullopt.
std::optional<double> Number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() ? std::optional<double>(v) : std::nullopt;
}

// "[640, 480]" / "640,480" -> {"640", "480"}; a scalar -> {itself}.
std::vector<std::string> ListItems(std::string v) {
  if (v.size() >= 2 && (v.front() == '[' || v.front() == '(') && (v.back() == ']' || v.back() == ')')) v = v.substr(1, v.size() - 2);
  std::vector<std::string> items;
  std::stringstream s(v);
  for (std::string item; std::getline(s, item, ',');) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

// A YAML node as the key=value text Ultralytics' CLI would have been given: scalars as they are,
// sequences as [a,b]; "" for null.
std::string YamlValueText(const YAML::Node& node) {
  if (node.IsNull()) return "";
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence()) {
    std::string out = "[";
    for (size_t i = 0; i < node.size(); ++i) out += (i ? "," : "") + YamlValueText(node[i]);
    return out + "]";
  }
  return "";
}

// Ordered key=value overrides: a later value of a key replaces the earlier one in place.
class Overrides {
 public:
  void Set(const std::string& key, std::string value) {
    for (auto& [k, v] : items_) {
      if (k == key) {
        v = std::move(value);
        return;
      }
    }
    items_.emplace_back(key, std::move(value));
  }
  void Clear() { items_.clear(); }
  std::optional<std::string> Get(const std::string& key) const {
    for (const auto& [k, v] : items_) {
      if (k == key) return v;
    }
    return std::nullopt;
  }
  void Erase(const std::string& key) {
    items_.erase(std::remove_if(items_.begin(), items_.end(), [&](const auto& kv) { return kv.first == key; }), items_.end());
  }
  const std::vector<std::pair<std::string, std::string>>& items() const { return items_; }

 private:
  std::vector<std::pair<std::string, std::string>> items_;
};

// cfg=FILE: its keys replace the overrides read so far (Ultralytics' entrypoint), save_dir aside.
Status LoadCfg(const std::string& file, Overrides* overrides) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("cfg=" + PrintableText(file) + ": " + e.what());
  }
  if (!root.IsMap()) return Status::InvalidArgument("cfg=" + PrintableText(file) + ": not a YAML mapping of keys");
  overrides->Clear();
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>("");
    if (key.empty() || key == "cfg" || key == "save_dir") continue;  // args.yaml's save_dir is an output
    if (kv.second.IsMap()) continue;                                  // nested settings have no key here
    overrides->Set(key, YamlValueText(kv.second));
  }
  return Status::OK();
}

// One line's reading: the subcommand, the overrides in order, and the other tokens (our --flags).
struct Line {
  std::string mode;
  Overrides overrides;
  std::vector<std::string> passthrough;  // tokens after the subcommand that are not key=value
  std::vector<std::string> before;       // tokens before it (--help, --version)
};

bool IsKeyToken(const std::string& a, size_t* eq) {
  *eq = a.find('=');
  if (*eq == std::string::npos || *eq == 0 || a[0] == '-') return false;
  return std::all_of(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(*eq),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
}

// A token following one of our options that takes a value is that value, never a key or a word.
bool TakesValue(CLI::App* sub, const std::string& token) {
  if (sub == nullptr || token.size() < 2 || token[0] != '-' || token.find('=') != std::string::npos) return false;
  const CLI::Option* opt = sub->get_option_no_throw(token);
  return opt != nullptr && opt->get_expected_max() != 0;
}

CLI::App* Subcommand(CLI::App& app, const std::string& name) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->check_name(name)) return sub;
  }
  return nullptr;
}

// The subcommand the line names: its first word that is one, else a mode= key (Ultralytics allows
// both); nullptr when there is neither. Known before the tokens are read, so that a value of one of its
// options is never read as a word.
CLI::App* NamedSubcommand(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* from_key = nullptr;
  for (const std::string& a : args) {
    if (a == "--") break;
    if (CLI::App* sub = Subcommand(app, a)) return sub;
    if (a.rfind("mode=", 0) == 0 && from_key == nullptr) from_key = Subcommand(app, a.substr(5));
  }
  return from_key;
}

Result<Line> Tokenize(CLI::App& app, const std::vector<std::string>& args) {
  Line line;
  CLI::App* const named = NamedSubcommand(app, args);
  bool seen_word = false;  // the subcommand's word, when the line has one
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    size_t eq = 0;
    if (a == "--") {
      line.passthrough.insert(line.passthrough.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    if (IsKeyToken(a, &eq)) {
      const std::string key = a.substr(0, eq), value = a.substr(eq + 1);
      if (key == "cfg" && !IsNullWord(value)) {
        YC_RETURN_IF_ERROR(LoadCfg(value, &line.overrides));
      } else {
        line.overrides.Set(key, value);
      }
      continue;
    }
    if (!a.empty() && a[0] == '-') {
      // The program's own options (--help, --version) stay before the subcommand; the rest are its.
      const bool program_option = !seen_word && app.get_option_no_throw(a.substr(0, a.find('='))) != nullptr;
      (program_option ? line.before : line.passthrough).push_back(a);
      if (!program_option && TakesValue(named, a) && i + 1 < args.size()) line.passthrough.push_back(args[++i]);
      continue;
    }
    if (IsTask(a)) {
      YC_RETURN_IF_ERROR(TaskStatus(a));
      continue;
    }
    if (!seen_word && (named == nullptr || named->check_name(a)) && line.mode.empty()) {
      if (IsOneOf(a, {"track", "benchmark"})) {
        return Refuse("'" + a + "' is an Ultralytics mode yolocache-train does not have (train, val, predict, export)");
      }
      line.mode = a;  // an unknown word: CLI11 refuses it with "did you mean"
      seen_word = true;
      continue;
    }
    const UltralyticsKey* k = FindUltralyticsKey(a);
    const bool is_file = std::filesystem::exists(a);
    if (k != nullptr && !is_file && !BoolWord(k->default_value).empty() &&
        !std::isdigit(static_cast<unsigned char>(k->default_value[0]))) {
      line.overrides.Set(a, "True");  // `yolo train rect`: a bare boolean key is key=True
      continue;
    }
    line.passthrough.push_back(a);
  }
  return line;
}

// The mode from task=/mode= keys and the words.
Status ResolveMode(Line* line) {
  if (auto task = line->overrides.Get("task")) {
    if (!IsNullWord(*task)) YC_RETURN_IF_ERROR(TaskStatus(*task));
    line->overrides.Erase("task");
  }
  if (auto mode = line->overrides.Get("mode")) {
    if (!IsNullWord(*mode)) {
      if (line->mode.empty()) line->mode = *mode;
      else if (*mode != line->mode) return Refuse("mode=" + PrintableText(*mode) + " contradicts the command '" + line->mode + "'");
    }
    line->overrides.Erase("mode");
  }
  return Status::OK();
}

class Emitter {
 public:
  Emitter(CLI::App* sub, const std::string& mode, std::ostream& notes) : sub_(sub), mode_(mode), notes_(notes) {}

  bool Has(const std::string& option) const { return sub_ != nullptr && sub_->get_option_no_throw(option) != nullptr; }
  // The key=value being read, for the note when the command has no option for it.
  void Reading(const std::string& key, bool is_default) {
    key_ = key;
    key_is_default_ = is_default;
  }
  void Option(const std::string& option, const std::string& value) {
    if (!Usable(option)) return;
    out_.push_back(option);
    out_.push_back(value);
  }
  void Flag(const std::string& option) {
    if (Usable(option)) out_.push_back(option);
  }
  void Token(const std::string& token) { out_.push_back(token); }
  void Note(const std::string& text) { notes_ << "yolocache-train " << mode_ << ": " << text << "\n"; }
  const std::string& mode() const { return mode_; }
  std::vector<std::string>& out() { return out_; }

 private:
  // A key another mode uses (batch= for predict) is dropped, with a note unless it holds its default.
  bool Usable(const std::string& option) {
    if (Has(option) || sub_ == nullptr) return true;  // no such command: CLI11 says so
    if (!key_is_default_) Note("'" + key_ + "' is not used by " + mode_ + " (ignored, as Ultralytics' " + mode_ + " ignores it)");
    return false;
  }
  std::string key_;
  bool key_is_default_ = true;
  CLI::App* sub_;
  std::string mode_;
  std::ostream& notes_;
  std::vector<std::string> out_;
};

// model=: an architecture (NAME.yaml) for train, else weights looked up where Ultralytics looks.
Status EmitModel(const std::string& value, bool resume, Emitter* e) {
  const fs::path p(value);
  const std::string ext = Lower(p.extension().string());
  if (ext == ".yaml" || ext == ".yml") {
    if (e->mode() != "train") return Refuse("model=" + PrintableText(value) + ": " + e->mode() + " needs trained weights (a .pt)");
    std::string name = Lower(p.stem().string());
    if (name == "yolov8" || name == "yolo11") {  // no scale in the name: Ultralytics takes the n scale
      e->Note("model=" + PrintableText(value) + " names no scale: using " + name + "n, as Ultralytics does");
      name += "n";
    }
    e->Option("--model", name);
    return Status::OK();
  }
  const std::string file = ext.empty() ? value + ".pt" : value;  // model=yolov8n is yolov8n.pt
  YC_ASSIGN_OR_RETURN(const fs::path found, FindWeights(file));
  e->Option(resume ? "--resume" : "--weights", found.string());
  return Status::OK();
}

// resume=True without a model: the newest last*.pt under the runs folder.
Status EmitLatestRun(const Overrides& o, Emitter* e) {
  const fs::path runs = o.Get("project").value_or("runs");
  Result<fs::path> last = LatestLastPt(runs);
  if (!last.ok()) {
    return Refuse("resume=True: no last.pt found below " + PrintableText(runs.string()) +
                  " to resume; give resume=path/to/last.pt (or model=path/to/last.pt resume=True)");
  }
  e->Note("resume=True: resuming " + PrintableText(last->string()) + " (the newest last.pt below " +
          PrintableText(runs.string()) + ")");
  e->Option("--resume", last->string());
  return Status::OK();
}

Status NotImplemented(const UltralyticsKey& k, const std::string& value, const std::string& mode) {
  return Refuse(std::string(k.key) + "=" + PrintableText(value) + ": not implemented by yolocache-train " + mode +
                " yet (only Ultralytics' default, " + std::string(k.key) + "=" +
                (k.default_value.empty() ? std::string("None") : std::string(k.default_value)) + ", is)");
}

// imgsz=[h,w]: train and val take one size (Ultralytics uses the largest and says so); predict and
// export take a square one.
Status EmitImgsz(const UltralyticsKey& k, const std::string& value, Emitter* e) {
  const std::vector<std::string> items = ListItems(value);
  if (items.size() <= 1) {
    e->Option("--imgsz", items.empty() ? value : items[0]);
    return Status::OK();
  }
  if (items.size() != 2) return Refuse("imgsz=" + PrintableText(value) + ": give one size or [h,w]");
  if (items[0] == items[1]) {
    e->Option("--imgsz", items[0]);
    return Status::OK();
  }
  if (e->mode() == "train" || e->mode() == "val") {
    const std::string largest = Number(items[0]).value_or(0) >= Number(items[1]).value_or(0) ? items[0] : items[1];
    e->Note("'" + e->mode() + "' imgsz must be an integer, not the list " + PrintableText(value) + ": using imgsz=" +
            largest + ", as Ultralytics does");
    e->Option("--imgsz", largest);
    return Status::OK();
  }
  return NotImplemented(k, value, e->mode());
}

// freeze=N (a count) or a list of layer indices, [0, 3, 5] or (0, 3, 5): --freeze N or --freeze 0,3,5 (kept a
// list, so args.yaml writes it back as Ultralytics does; --freeze checks the items).
Status EmitFreeze(const std::string& value, Emitter* e) {
  const std::vector<std::string> items = ListItems(value);
  if (items.size() == 1 && value.find_first_of("[(") == std::string::npos) {
    e->Option("--freeze", items[0]);
    return Status::OK();
  }
  std::string list = "[";
  for (const std::string& item : items) list += (list.size() > 1 ? "," : "") + item;
  e->Option("--freeze", list + "]");
  return Status::OK();
}

// batch=N; batch=-1 (AutoBatch at 60% of the GPU's memory) or a fraction: --autobatch.
Status EmitBatch(const std::string& value, Emitter* e) {
  const std::optional<double> number = Number(value);
  const double b = number.value_or(1);  // not a number: --batch, whose check names the bad value
  if (b >= 1 || e->mode() != "train") {
    e->Option("--batch", value);
    return Status::OK();
  }
  e->Option("--autobatch", b > 0 ? value : "0.6");
  return Status::OK();
}

// Keys whose reading is more than a rename (kGrammar), other than task, mode and cfg.
Status EmitGrammarKey(const UltralyticsKey& k, const std::string& value, const Overrides& o, Emitter* e) {
  const std::string key(k.key);
  const std::string& mode = e->mode();
  const std::string on = BoolWord(value);
  if (key == "model") {
    if (IsNullWord(value)) return Status::OK();
    const bool resume = mode == "train" && BoolWord(o.Get("resume").value_or("")) == "true";
    return EmitModel(value, resume, e);
  }
  if (key == "resume") {
    if (mode != "train" || on == "false" || IsNullWord(value)) return Status::OK();
    if (on == "true") {
      const std::string model = o.Get("model").value_or("");
      return IsNullWord(model) ? EmitLatestRun(o, e) : Status::OK();  // with a model, EmitModel resumes it
    }
    e->Option("--resume", value);
    return Status::OK();
  }
  if (key == "batch") return EmitBatch(value, e);
  if (key == "imgsz") return EmitImgsz(k, value, e);
  if (key == "freeze") return IsNullWord(value) ? Status::OK() : EmitFreeze(value, e);
  if (key == "save_period") {
    if (mode == "train" && !IsNullWord(value) && Number(value).value_or(1) >= 1) e->Option("--save-every", value);
    return Status::OK();
  }
  if (key == "device") {
    if (IsNullWord(value)) return Status::OK();
    // device=[0, 1] / (0,1) / 0,1: train starts a rank per device (train_ranks.h); val, predict and
    // export run in one process on the first, as Ultralytics' select_device returns cuda:0 for them.
    const std::vector<std::string> items = ListItems(value);
    if (items.size() > 1 && mode != "train") {
      e->Note("device=" + PrintableText(value) + ": " + mode + " runs on one device, the first (" + items[0] +
              "), as Ultralytics' " + mode + " does");
      e->Option("--device", items[0]);
      return Status::OK();
    }
    std::string joined;
    for (const std::string& item : items) joined += (joined.empty() ? "" : ",") + item;
    e->Option("--device", joined.empty() ? value : joined);
    return Status::OK();
  }
  if (key == "pretrained") {
    // True/False only matter for a model YAML, where Ultralytics has no weights to load either way;
    // a path is the weights to start from.
    if (on.empty() && !IsNullWord(value) && mode == "train") {
      YC_ASSIGN_OR_RETURN(const fs::path found, FindWeights(value));
      e->Option("--weights", found.string());
    }
    return Status::OK();
  }
  if (key == "rect") {
    if (mode == "val" && on == "false") e->Flag("--no-rect");  // Ultralytics' val runs rect=True unless told
    if (mode == "train" && on == "true") e->Flag("--rect");
    return Status::OK();
  }
  if (key == "half") {  // export: an fp16 file; val and predict: fp16 inference
    if (on == "true" && mode != "train") e->Flag("--half");
    return Status::OK();
  }
  if (key == "source") {
    if (mode == "predict" && !IsNullWord(value)) e->Token(value);
    return Status::OK();
  }
  return Status::OK();
}

Status EmitKey(const std::string& key, const std::string& value, const Overrides& o, Emitter* e) {
  const UltralyticsKey* k = FindUltralyticsKey(key);
  if (k == nullptr) {
    e->Token(key + "=" + value);  // ours (cache_dir=, order=) or a typo: cli_args.h maps or refuses it
    return Status::OK();
  }
  e->Reading(key, IsDefaultValue(*k, value));
  switch (k->use) {
    case KeyUse::kGrammar:
      return EmitGrammarKey(*k, value, o, e);
    case KeyUse::kIgnored:
      if (!IsDefaultValue(*k, value)) e->Note("'" + key + "=" + PrintableText(value) + "' is ignored: " + std::string(k->detail));
      return Status::OK();
    case KeyUse::kOption: {
      if (IsNullWord(value)) return Status::OK();  // None: the option's default
      const std::string option = OptionForKey(*k);
      const std::string negated = "--no-" + option.substr(2);
      if (e->Has(option) || e->Has(negated)) {
        e->Token(option.substr(2) + "=" + value);  // cli_args.h reads booleans and negated flags
      } else {
        e->Flag(option);  // no such option here: dropped, with a note unless at its default
      }
      return Status::OK();
    }
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<std::string>> ReadUltralyticsLine(CLI::App& app, const std::vector<std::string>& args,
                                                     std::ostream& notes) {
  YC_ASSIGN_OR_RETURN(Line line, Tokenize(app, args));
  YC_RETURN_IF_ERROR(ResolveMode(&line));
  std::vector<std::string> out = line.before;
  if (line.mode.empty()) {  // no command: CLI11 says so (or runs --help / --version)
    for (const auto& [k, v] : line.overrides.items()) out.push_back(k + "=" + v);
    out.insert(out.end(), line.passthrough.begin(), line.passthrough.end());
    return out;
  }
  Emitter e(Subcommand(app, line.mode), line.mode, notes);
  e.Token(line.mode);
  // Ultralytics' modes read its keys; our own commands (ceiling) take key=value as their options.
  const bool ultralytics_mode = IsOneOf(line.mode, {"train", "val", "predict", "export"});
  for (const auto& [key, value] : line.overrides.items()) {
    if (ultralytics_mode) {
      YC_RETURN_IF_ERROR(EmitKey(key, value, line.overrides, &e));
    } else {
      e.Token(key + "=" + value);
    }
  }
  out.insert(out.end(), e.out().begin(), e.out().end());
  out.insert(out.end(), line.passthrough.begin(), line.passthrough.end());
  return out;
}

}  // namespace yc::cli
