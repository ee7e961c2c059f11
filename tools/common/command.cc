#include "tools/common/command.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "base/status.h"
#include "tools/common/program.h"

namespace yc::cli {

std::vector<CommandInfo>& Registry() {
  static std::vector<CommandInfo> commands;
  return commands;
}

namespace {

std::unique_ptr<Program>& ProgramSlot() {
  static std::unique_ptr<Program> program;
  return program;
}

// Position in `order`, then by name: a binary lists its commands in the order a user meets them.
void SortCommands(const std::vector<std::string>& order, std::vector<CommandInfo>* commands) {
  auto rank = [&order](const CommandInfo& c) {
    return static_cast<size_t>(std::find(order.begin(), order.end(), c.name) - order.begin());
  };
  std::sort(commands->begin(), commands->end(), [&](const CommandInfo& a, const CommandInfo& b) {
    return std::make_pair(rank(a), a.name) < std::make_pair(rank(b), b.name);
  });
}

// `token` as a POSIX shell reads it back: bare when it holds only safe characters, else single-quoted.
std::string ShellQuoted(const std::string& token) {
  const bool bare = !token.empty() && std::all_of(token.begin(), token.end(), [](unsigned char c) {
    return std::isalnum(c) || std::strchr("-_./=:,+@%", c) != nullptr;
  });
  if (bare) return token;
  std::string out = "'";
  for (char c : token) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
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
  bool explain = false;
  if (line.rewrite) {
    app.add_flag("--explain", explain,
                 "Print the command line as it is read (Ultralytics' keys as our options) and stop, running nothing");
  }
  std::vector<std::string> read;
  if (const int rc = ParseCommandLine(app, argc, argv, line.aliases, line.rewrite, &read); rc >= 0) return rc;
  if (explain) {
    std::string text = std::filesystem::path(argv[0]).filename().string();
    for (const std::string& token : read) {
      if (token != "--explain") text += " " + ShellQuoted(token);
    }
    std::cout << text << "\n";
    return kExitOk;
  }
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

ProgramRegistration::ProgramRegistration(Program program) { ProgramSlot() = std::make_unique<Program>(std::move(program)); }

const Program* RegisteredProgram() { return ProgramSlot().get(); }

namespace {
RunningProgram& RunningSlot() {
  static RunningProgram running;
  return running;
}
}  // namespace

const RunningProgram& CurrentProgram() { return RunningSlot(); }

int RunRegisteredProgram(const std::vector<std::string>& args, const std::string& self_executable) {
  RunningSlot() = {args, self_executable};
  const Program* program = RegisteredProgram();
  if (program == nullptr || args.empty()) {
    std::cerr << "yolocache: no command line registered in this binary\n";
    return kExitFatal;
  }
  CLI::App app{program->description};
  app.require_subcommand(1);
  app.set_version_flag("--version", program->version);
  std::vector<std::string> copies = args;  // argv is mutable char*
  std::vector<char*> argv;
  for (std::string& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  return RunRegisteredCommand(app, static_cast<int>(copies.size()), argv.data(), program->line);
}

}  // namespace yc::cli
