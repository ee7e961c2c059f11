#include "tools/common/loader_flags.h"

#include <cctype>
#include <stdexcept>

#include "loader/option_table.h"

namespace yc::cli {

namespace {

const OptionSpec& Spec(std::string_view name) {
  const OptionSpec* spec = FindLoaderOption(name);
  if (spec == nullptr) throw std::logic_error("no loader option '" + std::string(name) + "'");  // a typo here
  return *spec;
}

// The table's help reads as a docs cell ("probability of Mosaic-4"); --help lines start capitalised.
std::string HelpLine(const OptionSpec& spec) {
  std::string help = spec.help;
  if (!help.empty()) help[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(help[0])));
  return help;
}

template <typename T>
CLI::Option* Add(CLI::App& app, std::string_view name, T* target) {
  const OptionSpec& spec = Spec(name);
  CLI::Option* option = app.add_option(spec.flag, *target, HelpLine(spec))->capture_default_str();
  if (!spec.choices.empty()) option->check(CLI::IsMember(spec.choices));
  return option;
}

}  // namespace

CLI::Option* AddLoaderFlag(CLI::App& app, std::string_view name, std::string* target) { return Add(app, name, target); }
CLI::Option* AddLoaderFlag(CLI::App& app, std::string_view name, int* target) { return Add(app, name, target); }
CLI::Option* AddLoaderFlag(CLI::App& app, std::string_view name, double* target) { return Add(app, name, target); }

void AddHypFlags(CLI::App& app, AugmentHyp* hyp) {
  // The table's setters know the fields: bind each flag to a copy of its value and set it through them.
  for (const OptionSpec& spec : LoaderOptionTable()) {
    if (!spec.hyp) continue;
    LoaderOptions defaults;
    defaults.hyp = *hyp;
    const OptionValue value = spec.get(defaults);
    auto set = [&spec, hyp](const OptionValue& v) {
      LoaderOptions o;
      o.hyp = *hyp;
      if (const Status st = spec.set(v, &o); !st.ok()) throw CLI::ValidationError(spec.flag, st.message());
      *hyp = o.hyp;
    };
    CLI::Option* option = nullptr;
    if (spec.type == OptionType::kInt) {
      option = app.add_option_function<int64_t>(spec.flag, [set](const int64_t& v) { set(v); }, HelpLine(spec));
    } else if (spec.type == OptionType::kChoice) {  // copy_paste_mode
      option = app.add_option_function<std::string>(spec.flag, [set](const std::string& v) { set(v); }, HelpLine(spec))
                   ->check(CLI::IsMember(spec.choices));
    } else {
      option = app.add_option_function<double>(spec.flag, [set](const double& v) { set(v); }, HelpLine(spec));
    }
    option->default_str(OptionText(value));
  }
}

}  // namespace yc::cli
