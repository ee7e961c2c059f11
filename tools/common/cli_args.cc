#include "tools/common/cli_args.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>

#include "base/status.h"

namespace yc::cli {
namespace {

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// 1 true, 0 false, -1 not a boolean word (Python's True/False as Ultralytics' CLI writes them).
int BoolValue(const std::string& value) {
  const std::string v = Lower(value);
  if (v == "true" || v == "1" || v == "yes") return 1;
  if (v == "false" || v == "0" || v == "no") return 0;
  return -1;
}

// Flags take no value: CLI11 declares them with expected(0).
bool IsFlag(const CLI::Option* opt) { return opt != nullptr && opt->get_expected_max() == 0; }

// The subcommand named by the first token that is not an option, and that token's position.
CLI::App* FindSubcommand(CLI::App& app, const std::vector<std::string>& args, size_t* at) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].empty() && args[i][0] == '-') continue;
    *at = i;
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      if (sub->check_name(args[i])) return sub;
    }
    return nullptr;
  }
  return nullptr;
}

// key=value for `sub` -> tokens appended to *out.
void RewriteOne(CLI::App& sub, const std::string& key_in, const std::string& value, const std::vector<KeyAlias>& aliases,
                std::vector<std::string>* out) {
  std::string key = key_in;
  for (const KeyAlias& a : aliases) {
    const bool suffix_ok = a.value_suffix.empty() ||
                           (value.size() >= a.value_suffix.size() &&
                            Lower(value.substr(value.size() - a.value_suffix.size())) == a.value_suffix);
    if (a.key == key && suffix_ok && sub.get_option_no_throw(a.option) != nullptr) {
      out->push_back(a.option);
      out->push_back(value);
      return;
    }
  }
  std::replace(key.begin(), key.end(), '_', '-');
  const CLI::Option* positional = sub.get_option_no_throw(key);
  if (positional != nullptr && positional->get_positional() && !positional->nonpositional()) {
    out->push_back(value);
    return;
  }
  const std::string on = "--" + key, off = "--no-" + key;
  const CLI::Option* opt = sub.get_option_no_throw(on);
  const CLI::Option* negated = sub.get_option_no_throw(off);
  const int b = BoolValue(value);
  if (b >= 0 && (IsFlag(opt) || IsFlag(negated))) {
    if (b == 1 && IsFlag(opt)) out->push_back(on);
    if (b == 0 && IsFlag(negated)) out->push_back(off);
    return;  // the other way round is the flag's default: nothing to pass
  }
  out->push_back(on + "=" + value);  // an unknown key then fails by name, with a hint
}

}  // namespace

std::vector<std::string> RewriteKeyValueArgs(CLI::App& app, const std::vector<std::string>& args,
                                             const std::vector<KeyAlias>& aliases) {
  size_t at = 0;
  CLI::App* sub = FindSubcommand(app, args, &at);
  if (sub == nullptr) return args;
  std::vector<std::string> out(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(at + 1));
  for (size_t i = at + 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {  // everything after it is positional, as CLI11 reads it
      out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    if (a.size() >= 2 && a[0] == '-') {
      out.push_back(a);
      // `--out a=b`, `-o a=b`: the next token is this option's value.
      const CLI::Option* opt = a.find('=') == std::string::npos ? sub->get_option_no_throw(a) : nullptr;
      if (opt != nullptr && !IsFlag(opt) && i + 1 < args.size()) out.push_back(args[++i]);
      continue;
    }
    const size_t eq = a.find('=');
    if (eq == std::string::npos || !IsIdentifier(std::string_view(a).substr(0, eq))) {
      out.push_back(a);
      continue;
    }
    RewriteOne(*sub, a.substr(0, eq), a.substr(eq + 1), aliases, &out);
  }
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

namespace {

// The closest candidate within max(2, a third of the word), or "".
std::string Closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

}  // namespace

std::string ClosestMatchHint(CLI::App& app, const std::vector<std::string>& args) {
  size_t at = 0;
  CLI::App* sub = FindSubcommand(app, args, &at);
  std::string hint;
  if (sub == nullptr) {
    if (at < args.size() && !args[at].empty() && args[at][0] != '-') {
      std::vector<std::string> names;
      for (CLI::App* s : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(s->get_name());
      const std::string best = Closest(args[at], names);
      if (!best.empty()) hint += "did you mean '" + best + "'?\n";
    }
    return hint;
  }
  std::vector<std::string> names;
  for (const CLI::Option* opt : sub->get_options())
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
  for (size_t i = at + 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (a.size() <= 2 || a.compare(0, 2, "--") != 0) continue;
    const std::string name = a.substr(0, a.find('='));
    if (sub->get_option_no_throw(name) != nullptr) continue;
    const std::string best = Closest(name, names);
    const std::string shown = name.substr(2);  // as the user may have typed it: key=value
    if (!best.empty()) hint += "did you mean '" + best + "' (for '" + shown + "')?\n";
  }
  return hint;
}

int ParseCommandLine(CLI::App& app, int argc, char** argv, const std::vector<KeyAlias>& aliases,
                     const LineRewrite& rewrite, std::vector<std::string>* read) {
  std::vector<std::string> given(argv + 1, argv + argc);
  if (rewrite) {
    Result<std::vector<std::string>> read = rewrite(app, given);
    if (!read.ok()) {
      std::cerr << std::filesystem::path(app.get_name()).filename().string() << ": " << read.status().message() << "\n";
      return kExitUsage;
    }
    given = std::move(*read);
  }
  const std::vector<std::string> args = RewriteKeyValueArgs(app, given, aliases);
  if (read != nullptr) *read = args;
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes a vector last-first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    if (rc == 0) return kExitOk;
    std::cerr << ClosestMatchHint(app, args);
    return kExitUsage;
  }
  return -1;
}

}  // namespace yc::cli
