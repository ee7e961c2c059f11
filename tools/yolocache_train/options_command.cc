// `yolocache-train options --markdown [--loader | --hyp]` (hidden): the docs' option tables, made from the
// definitions themselves: train's from its command line, the loader's from loader/option_table.h.
// docs/TRAINER.md and docs/PYTHON.md hold their output; tests/trainer/train_cli_test.cc checks they agree.
#include <iostream>
#include <memory>
#include <stdexcept>

#include "loader/option_table.h"
#include "tools/common/command.h"

namespace yc::cli {
namespace {

struct OptionsArgs {
  bool markdown = false, loader = false, hyp = false;
};

// `train`'s options as its --help lists them (hidden ones left out).
std::string TrainOptionsMarkdown() {
  CLI::App train;
  Action bound;  // holds the variables train's options are bound to while the table is read
  for (const CommandInfo& command : Registry())
    if (command.name == "train") bound = command.setup(train);
  std::string md = "| option | default | what |\n|---|---|---|\n";
  for (const CLI::Option* option : train.get_options()) {
    if (option->get_group().empty() || option->get_name() == "--help") continue;
    const std::string value = option->get_default_str();
    md += "| `" + option->get_name() + "` | " + (value.empty() ? std::string() : "`" + value + "`") + " | " +
          MarkdownCell(option->get_description()) + " |\n";
  }
  return md;
}

int RunOptions(const OptionsArgs& a) {
  if (a.loader || a.hyp) {
    std::cout << LoaderOptionsMarkdown(a.hyp);
  } else {
    std::cout << TrainOptionsMarkdown();
  }
  return kExitOk;
}

Registration reg(
    "options", "Print the option tables of docs/ (Markdown)",
    [](CLI::App& app) -> Action {
      auto a = std::make_shared<OptionsArgs>();
      app.add_flag("--markdown", a->markdown, "As a Markdown table (the only form)")->required();
      auto* loader = app.add_flag("--loader", a->loader, "The loader's options (yolocache.Loader's keywords)");
      app.add_flag("--hyp", a->hyp, "The loader's augmentation hyperparameters")->excludes(loader);
      return [a] { return RunOptions(*a); };
    },
    /*hidden=*/true);

}  // namespace
}  // namespace yc::cli
