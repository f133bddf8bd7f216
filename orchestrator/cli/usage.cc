// Help texts generated from the command table; see usage.h.
#include "orchestrator/cli/usage.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace vanguard::cli {
namespace {

constexpr size_t kWidth = 100;

constexpr char kExitCodes[] =
    "Exit codes: 0 ok; 1 RPC error (report: also a file that could not be written); 2 usage\n"
    "error; 3 the followed test ended FAILED or CANCELLED (compare: a test has no result); 4 a\n"
    "--fail_below or --fail_if_regressed gate failed (a test that did not succeed fails every\n"
    "gate), or regressions --fail_on_regression listed a regression; 130 Ctrl-C stopped\n"
    "following a test (it goes on running: vanguard cancel ID).\n";

// "--name=VALUE", "[--name=VALUE]" or "[--wait]".
std::string SynopsisToken(const FlagSpec& flag) {
  std::string token = FlagDisplayName(flag.name);
  if (!flag.is_bool()) absl::StrAppend(&token, token.size() == 2 ? " " : "=", flag.value);
  return flag.required ? token : absl::StrCat("[", token, "]");
}

// Words joined by spaces, wrapped before kWidth; continuation lines start with `indent`.
std::string Wrap(const std::vector<std::string>& tokens, size_t first_column, size_t indent) {
  std::string out;
  size_t column = first_column;
  for (const std::string& token : tokens) {
    if (!out.empty() && column + 1 + token.size() > kWidth) {
      absl::StrAppend(&out, "\n", std::string(indent, ' '));
      column = indent;
    } else if (!out.empty()) {
      out.push_back(' ');
      ++column;
    }
    out += token;
    column += token.size();
  }
  return out;
}

// "models register [--name=N] ..." wrapped, starting at `column`.
std::string Synopsis(const CommandSpec& spec, size_t column) {
  std::vector<std::string> tokens = {spec.Name()};
  if (!spec.args.empty()) tokens.push_back(spec.args);
  for (const FlagSpec& flag : spec.flags) tokens.push_back(SynopsisToken(flag));
  return Wrap(tokens, column, column + spec.Name().size() + 1);
}

// Prose wrapped at kWidth, every line starting with `indent` spaces.
std::string Paragraph(const std::string& text, size_t indent) {
  std::vector<std::string> words = absl::StrSplit(text, ' ', absl::SkipEmpty());
  return absl::StrCat(std::string(indent, ' '), Wrap(words, indent, indent), "\n");
}

// A flag with its help below it; choices the help does not already name are appended.
std::string FlagEntry(const FlagSpec& flag) {
  std::string help = flag.help;
  bool names_choices = true;
  for (const std::string& choice : flag.choices) names_choices &= absl::StrContains(help, choice);
  if (!names_choices) absl::StrAppend(&help, " One of: ", absl::StrJoin(flag.choices, ", "), ".");
  if (flag.required) absl::StrAppend(&help, " Required.");
  std::string name = FlagDisplayName(flag.name);
  if (!flag.is_bool()) absl::StrAppend(&name, name.size() == 2 ? " " : "=", flag.value);
  return absl::StrCat("  ", name, "\n", Paragraph(help, 6));
}

std::string GlobalFlagsText() {
  std::string out = "Global flags:\n";
  for (const FlagSpec& flag : GlobalFlags()) absl::StrAppend(&out, FlagEntry(flag));
  absl::StrAppend(&out,
                  "  $VANGUARD_TOKEN, when set, is sent as \"authorization: Bearer <token>\".\n");
  return out;
}

std::string OutputsText(const CommandSpec& spec) {
  std::vector<std::string> names;
  for (OutputFormat format : spec.outputs) names.push_back(OutputFormatName(format));
  return absl::StrCat("Output: --output=", absl::StrJoin(names, "|"), "\n");
}

}  // namespace

std::string UsageText() {
  std::string out =
      "vanguard: register models and run capacity tests on a Vanguard orchestrator.\n\n"
      "Usage: vanguard COMMAND [ARGS] [--flag=value ...]\n"
      "       vanguard COMMAND --help      (the command's flags, each with its help)\n\n"
      "Commands:\n";
  for (const CommandSpec& spec : Commands()) {
    absl::StrAppend(&out, "  ", Synopsis(spec, 2), "\n", Paragraph(spec.summary, 6));
  }
  absl::StrAppend(&out, "\n", GlobalFlagsText(), "\n", kExitCodes);
  return out;
}

std::string CommandHelp(const CommandSpec& spec) {
  std::string out =
      absl::StrCat("Usage: vanguard ", Synopsis(spec, 16), "\n\n", Paragraph(spec.summary, 0));
  if (!spec.details.empty()) absl::StrAppend(&out, Paragraph(spec.details, 0));
  if (!spec.flags.empty()) {
    absl::StrAppend(&out, "\nFlags:\n");
    for (const FlagSpec& flag : spec.flags) absl::StrAppend(&out, FlagEntry(flag));
  }
  absl::StrAppend(&out, "\n", OutputsText(spec), "\n", GlobalFlagsText(), "\n", kExitCodes);
  return out;
}

}  // namespace vanguard::cli
