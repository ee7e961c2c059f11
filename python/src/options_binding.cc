// The loader's option vocabulary (loader/option_table.h) on the Python side: `loader_options()` hands the
// table to python/yolocache (LOADER_OPTIONS, HYP_DEFAULTS and Loader's signature are made from it), and
// LoaderOptionsFromDict reads a Loader's keywords through it.
#include <utility>
#include <variant>
#include <vector>

#include "loader/option_table.h"
#include "python/src/bindings.h"

namespace yc::py {
namespace {

pb::object ToPython(const OptionValue& value) {
  return std::visit([](const auto& v) -> pb::object { return pb::cast(v); }, value);
}

// `value` as the option's type wants it: True/False for a bool, an int for an int, an int or float for a
// float, a str for a choice; anything else is a ValueError naming the option and the type given.
OptionValue FromPython(const OptionSpec& spec, const pb::handle& value) {
  const bool is_bool = pb::isinstance<pb::bool_>(value);
  const bool is_int = pb::isinstance<pb::int_>(value) && !is_bool;
  try {
    switch (spec.type) {
      case OptionType::kBool:
        if (is_bool) return value.cast<bool>();
        break;
      case OptionType::kInt:
        if (is_int) return value.cast<int64_t>();
        break;
      case OptionType::kFloat:
        if (is_int) return value.cast<int64_t>();
        if (pb::isinstance<pb::float_>(value)) return value.cast<double>();
        break;
      case OptionType::kChoice:
        if (pb::isinstance<pb::str>(value)) return value.cast<std::string>();
        break;
    }
  } catch (const pb::cast_error&) {  // an int beyond 64 bits
  }
  throw pb::value_error("Loader option '" + spec.name + "' has the wrong type: " +
                        pb::str(value.get_type()).cast<std::string>());
}

pb::list LoaderOptionList() {
  pb::list options;
  for (const OptionSpec& spec : LoaderOptionTable()) {
    pb::dict d;
    d["name"] = spec.name;
    d["default"] = ToPython(spec.default_value);
    pb::list choices;
    for (const std::string& choice : spec.choices) choices.append(choice);
    d["choices"] = choices;
    d["help"] = spec.help;
    d["hyp"] = spec.hyp;
    options.append(d);
  }
  return options;
}

}  // namespace

LoaderOptions LoaderOptionsFromDict(const pb::dict& options) {
  std::vector<std::pair<std::string, OptionValue>> values;
  for (const auto& [key, value] : options) {
    const std::string name = pb::str(key);
    const OptionSpec* spec = FindLoaderOption(name);
    if (spec == nullptr) throw pb::value_error("unknown Loader option '" + name + "'");
    values.emplace_back(name, FromPython(*spec, value));
  }
  LoaderOptions o;
  ThrowIfError(SetLoaderOptions(values, &o));
  return o;
}

void BindOptions(pb::module_& m) {
  m.def("loader_options", &LoaderOptionList,
        "The loader's options: [{name, default, choices, help, hyp}] in the order the docs list them");
  m.def("loader_options_markdown", &LoaderOptionsMarkdown, pb::arg("hyp"),
        "The docs' table of the loader's options (hyp=True: the augmentation hyperparameters)");
}

}  // namespace yc::py
