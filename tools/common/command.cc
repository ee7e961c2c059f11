#include "tools/common/command.h"

#include <algorithm>
#include <map>

#include "base/status.h"

namespace yc::cli {

std::vector<CommandInfo>& Registry() {
  static std::vector<CommandInfo> commands;
  return commands;
}

namespace {

// Position in `order`, then by name: a binary lists its commands in the order a user meets them.
void SortCommands(const std::vector<std::string>& order, std::vector<CommandInfo>* commands) {
  auto rank = [&order](const CommandInfo& c) {
    return static_cast<size_t>(std::find(order.begin(), order.end(), c.name) - order.begin());
  };
  std::sort(commands->begin(), commands->end(), [&](const CommandInfo& a, const CommandInfo& b) {
    return std::make_pair(rank(a), a.name) < std::make_pair(rank(b), b.name);
  });
}

}  // namespace

int RunRegisteredCommand(CLI::App& app, int argc, char** argv, const CommandLine& line) {
  std::vector<CommandInfo>& commands = Registry();
  SortCommands(line.order, &commands);
  std::map<CLI::App*, Action> actions;
  for (CommandInfo& command : commands) {
    CLI::App* sub = app.add_subcommand(command.name, command.description);
    if (command.hidden) sub->group("");
    actions[sub] = command.setup(*sub);
  }
  app.name(argv[0]);
  if (const int rc = ParseCommandLine(app, argc, argv, line.aliases); rc >= 0) return rc;
  for (auto& [sub, action] : actions) {
    if (!sub->parsed()) continue;
    try {
      return action();
    } catch (const std::exception& e) {
      return line.on_exception(sub->get_name(), e);
    }
  }
  return kExitUsage;
}

}  // namespace yc::cli
