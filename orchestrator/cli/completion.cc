// Shell completion scripts generated from the command table; see completion.h.
//
// Both scripts share four helper functions written in the common subset of bash and zsh:
// _vanguard_valued (does a flag take a value), _vanguard_command (which command do the
// positional words so far select), _vanguard_words (the words that may follow a partial
// command) and _vanguard_values (what a flag's value may be). Each shell's own _vanguard
// reads the command line, skips flags and their values, and asks those helpers.
#include "orchestrator/cli/completion.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "orchestrator/cli/usage.h"

namespace vanguard::cli {
namespace {

// A one-letter flag ("-o") takes its value from the next word.
bool IsShort(const FlagSpec& flag) { return flag.name.size() == 1; }

// The flag as typed, with "=" for a long flag that takes a value: "--version=", "-o", "--wait".
std::string TypedFlag(const FlagSpec& flag) {
  return absl::StrCat(FlagDisplayName(flag.name), flag.is_bool() || IsShort(flag) ? "" : "=");
}

// The name a script sees after stripping the dashes: "version" for model_version.
std::string BareName(const FlagSpec& flag) {
  std::string shown = FlagDisplayName(flag.name);
  return shown.substr(shown.find_first_not_of('-'));
}

// A word in double quotes for a case pattern (command words are plain identifiers).
std::string Quoted(const std::string& text) { return absl::StrCat("\"", text, "\""); }

std::string ValuedHelper(const std::vector<CommandSpec>& commands) {
  std::set<std::string> names;
  auto add = [&names](const std::vector<FlagSpec>& flags) {
    for (const FlagSpec& flag : flags) {
      if (!flag.is_bool()) names.insert(BareName(flag));
    }
  };
  add(GlobalFlags());
  for (const CommandSpec& spec : commands) add(spec.flags);
  return absl::StrCat("_vanguard_valued() {\n  case \"$1\" in\n    ", absl::StrJoin(names, "|"),
                      ") return 0 ;;\n  esac\n  return 1\n}\n");
}

std::string CommandHelper(const std::vector<CommandSpec>& commands) {
  std::string out = "_vanguard_command() {\n  case \"$*\" in\n";
  for (const CommandSpec& spec : commands) {
    const std::string name = spec.Name();
    absl::StrAppend(&out, "    ", Quoted(name), "|", Quoted(name + " "), "*) echo ", Quoted(name),
                    " ;;\n");
  }
  return absl::StrCat(out, "  esac\n}\n");
}

// Every partial command (words typed so far) -> the words that may come next, in table order.
std::map<std::string, std::vector<const CommandSpec*>> NextWords(
    const std::vector<CommandSpec>& commands) {
  std::map<std::string, std::vector<const CommandSpec*>> next;
  for (const CommandSpec& spec : commands) {
    for (size_t n = 0; n < spec.words.size(); ++n) {
      next[absl::StrJoin(spec.words.begin(), spec.words.begin() + n, " ")].push_back(&spec);
    }
  }
  return next;
}

// The word after `prefix` in `spec`, once per distinct word.
std::vector<std::string> DistinctNext(const std::vector<const CommandSpec*>& specs, size_t depth) {
  std::vector<std::string> words;
  for (const CommandSpec* spec : specs) {
    if (std::find(words.begin(), words.end(), spec->words[depth]) == words.end()) {
      words.push_back(spec->words[depth]);
    }
  }
  return words;
}

size_t Depth(const std::string& prefix) {
  return prefix.empty() ? 0 : std::count(prefix.begin(), prefix.end(), ' ') + 1;
}

std::string WordsHelper(const std::vector<CommandSpec>& commands) {
  std::string out = "_vanguard_words() {\n  case \"$*\" in\n";
  for (const auto& [prefix, specs] : NextWords(commands)) {
    absl::StrAppend(&out, "    ", Quoted(prefix), ") echo ",
                    Quoted(absl::StrJoin(DistinctNext(specs, Depth(prefix)), " ")), " ;;\n");
  }
  return absl::StrCat(out, "  esac\n}\n");
}

// "<file>" for a file flag, else its choices.
std::string ValuesOf(const FlagSpec& flag) {
  return flag.file ? "<file>" : absl::StrJoin(flag.choices, " ");
}

std::string ValuesHelper(const std::vector<CommandSpec>& commands) {
  std::string out =
      "# _vanguard_values COMMAND FLAG: the values FLAG offers (\"<file>\": file names).\n"
      "_vanguard_values() {\n  case \"$1/$2\" in\n";
  for (const CommandSpec& spec : commands) {
    for (const FlagSpec& flag : spec.flags) {
      if (ValuesOf(flag).empty()) continue;
      absl::StrAppend(&out, "    ", Quoted(spec.Name() + "/" + BareName(flag)), ") echo ",
                      Quoted(ValuesOf(flag)), " ;;\n");
    }
  }
  for (const FlagSpec& flag : GlobalFlags()) {
    if (ValuesOf(flag).empty()) continue;
    absl::StrAppend(&out, "    */", BareName(flag), ") echo ", Quoted(ValuesOf(flag)), " ;;\n");
  }
  return absl::StrCat(out, "  esac\n}\n");
}

std::string SharedHelpers(const std::vector<CommandSpec>& commands) {
  return absl::StrCat(ValuedHelper(commands), CommandHelper(commands), WordsHelper(commands),
                      ValuesHelper(commands));
}

// bash only: a command's flags as typed, and its arguments' values.
std::string BashFlagsAndArgs(const std::vector<CommandSpec>& commands) {
  std::vector<std::string> global;
  for (const FlagSpec& flag : GlobalFlags()) global.push_back(TypedFlag(flag));
  global.push_back("--help");
  std::string flags = "_vanguard_flags() {\n  case \"$1\" in\n";
  std::string args = "_vanguard_args() {\n  case \"$1\" in\n";
  for (const CommandSpec& spec : commands) {
    std::vector<std::string> typed;
    for (const FlagSpec& flag : spec.flags) typed.push_back(TypedFlag(flag));
    if (!typed.empty()) {
      absl::StrAppend(&flags, "    ", Quoted(spec.Name()), ") echo ",
                      Quoted(absl::StrJoin(typed, " ")), " ;;\n");
    }
    if (!spec.arg_choices.empty()) {
      absl::StrAppend(&args, "    ", Quoted(spec.Name()), ") echo ",
                      Quoted(absl::StrJoin(spec.arg_choices, " ")), " ;;\n");
    }
  }
  absl::StrAppend(&flags, "  esac\n  echo ", Quoted(absl::StrJoin(global, " ")), "\n}\n");
  absl::StrAppend(&args, "  esac\n}\n");
  return flags + args;
}

constexpr char kBashMain[] = R"sh(# _vanguard_complete_values COMMAND FLAG CURRENT PREFIX
_vanguard_complete_values() {
  local values
  values="$(_vanguard_values "$1" "$2")"
  if [[ "$values" == "<file>" ]]; then
    COMPREPLY=($(compgen -f -- "$3"))
  else
    COMPREPLY=($(compgen -W "$values" -- "$3"))
  fi
  if [[ -n "$4" ]]; then COMPREPLY=("${COMPREPLY[@]/#/$4}"); fi
}

_vanguard() {
  local line="${COMP_LINE:0:COMP_POINT}" cur="" t skip=0 cmd i
  local -a toks=() pos=()
  read -ra toks <<< "$line"
  if [[ "$line" != *[[:space:]] && ${#toks[@]} -gt 1 ]]; then
    cur="${toks[${#toks[@]}-1]}"
    unset "toks[${#toks[@]}-1]"
  fi
  for ((i = 1; i < ${#toks[@]}; i++)); do
    t="${toks[i]}"
    if ((skip)); then skip=0; continue; fi
    case "$t" in
      --) break ;;
      -*=*) ;;
      -*) t="${t#-}"; _vanguard_valued "${t#-}" && skip=1 ;;
      *) pos+=("$t") ;;
    esac
  done
  cmd="$(_vanguard_command "${pos[@]}")"
  COMPREPLY=()
  if ((skip)); then
    t="${toks[${#toks[@]}-1]}"; t="${t#-}"
    _vanguard_complete_values "$cmd" "${t#-}" "$cur" ""
    return 0
  fi
  case "$cur" in
    -*=*)
      t="${cur%%=*}"; t="${t#-}"
      local prefix=""
      [[ "$COMP_WORDBREAKS" != *=* ]] && prefix="${cur%%=*}="
      _vanguard_complete_values "$cmd" "${t#-}" "${cur#*=}" "$prefix"
      ;;
    -*)
      COMPREPLY=($(compgen -W "$(_vanguard_flags "$cmd")" -- "$cur"))
      if [[ ${#COMPREPLY[@]} -eq 1 && "${COMPREPLY[0]}" == *= ]]; then
        compopt -o nospace 2>/dev/null
      fi
      ;;
    *)
      if [[ -n "$cmd" ]]; then
        COMPREPLY=($(compgen -W "$(_vanguard_args "$cmd")" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "$(_vanguard_words "${pos[@]}")" -- "$cur"))
      fi
      ;;
  esac
  return 0
}
complete -F _vanguard vanguard
)sh";

// Text inside a single-quoted zsh word.
std::string ZshQuoted(const std::string& text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "'\\''"}}), "'");
}

// Text for an _arguments explanation or message: brackets and colons escaped.
std::string ZshEscaped(const std::string& text) {
  return absl::StrReplaceAll(text, {{"\\", "\\\\"}, {"[", "\\["}, {"]", "\\]"}, {":", "\\:"}});
}

// One _arguments spec: --name=[help]:VALUE:(choices) or --wait[help].
std::string ZshFlagSpec(const FlagSpec& flag) {
  // "--name=": the value after "=" or in the next word; "-o+": in the same or the next word.
  const char* takes = flag.is_bool() ? "" : IsShort(flag) ? "+" : "=";
  std::string spec =
      absl::StrCat(FlagDisplayName(flag.name), takes, "[", ZshEscaped(flag.help), "]");
  if (!flag.is_bool()) {
    const std::string action = flag.file ? "_files"
                               : flag.choices.empty()
                                   ? " "
                                   : absl::StrCat("(", absl::StrJoin(flag.choices, " "), ")");
    absl::StrAppend(&spec, ":", ZshEscaped(flag.value), ":", action);
  }
  return ZshQuoted(spec);
}

std::string ZshSpecs(const std::vector<CommandSpec>& commands) {
  std::string out = "  case \"$cmd\" in\n";
  for (const CommandSpec& spec : commands) {
    std::vector<std::string> specs;
    for (const FlagSpec& flag : spec.flags) specs.push_back(ZshFlagSpec(flag));
    const std::string message = spec.args.empty() ? "argument" : ZshEscaped(spec.args);
    const std::string action = spec.arg_choices.empty()
                                   ? " "
                                   : absl::StrCat("(", absl::StrJoin(spec.arg_choices, " "), ")");
    specs.push_back(ZshQuoted(absl::StrCat("*:", message, ":", action)));
    absl::StrAppend(&out, "    ", Quoted(spec.Name()), ") specs=(\n      ",
                    absl::StrJoin(specs, "\n      "), ") ;;\n");
  }
  absl::StrAppend(&out, "  esac\n  specs+=(");
  for (const FlagSpec& flag : GlobalFlags()) absl::StrAppend(&out, "\n    ", ZshFlagSpec(flag));
  return absl::StrCat(out, "\n    '--help[Show the command'\\''s flags]')\n");
}

// _describe entries for the words that may follow a partial command.
std::string ZshDescribe(const std::vector<CommandSpec>& commands) {
  std::string out = "_vanguard_describe_words() {\n  local -a next\n  case \"$*\" in\n";
  for (const auto& [prefix, specs] : NextWords(commands)) {
    const size_t depth = Depth(prefix);
    std::vector<std::string> entries;
    for (const std::string& word : DistinctNext(specs, depth)) {
      // A group word ("models") is described by its commands' words.
      std::vector<std::string> what;
      for (const CommandSpec* spec : specs) {
        if (spec->words[depth] != word) continue;
        what.push_back(spec->words.size() == depth + 1 ? spec->summary : spec->words.back());
      }
      entries.push_back(ZshQuoted(absl::StrCat(word, ":", absl::StrJoin(what, ", "))));
    }
    absl::StrAppend(&out, "    ", Quoted(prefix), ") next=(", absl::StrJoin(entries, " "),
                    ") ;;\n");
  }
  return absl::StrCat(out, "  esac\n  _describe -t commands 'vanguard command' next\n}\n");
}

constexpr char kZshMain[] = R"sh(
_vanguard() {
  local -a pos specs
  local i t skip=0 cmd
  for (( i = 2; i < CURRENT; i++ )); do
    t=${words[i]}
    if (( skip )); then skip=0; continue; fi
    case $t in
      --) break ;;
      -*=*) ;;
      -*) t=${t#-}; _vanguard_valued ${t#-} && skip=1 ;;
      *) pos+=("$t") ;;
    esac
  done
  cmd=$(_vanguard_command "${pos[@]}")
  if [[ -z $cmd && $skip -eq 0 && ${words[CURRENT]} != -* ]]; then
    _vanguard_describe_words "${pos[@]}"
    return
  fi
)sh";

}  // namespace

std::string BashCompletion(const std::vector<CommandSpec>& commands) {
  return absl::StrCat(
      "# bash completion for vanguard, generated by `vanguard completion bash`.\n"
      "# Load it with: source <(vanguard completion bash)\n",
      SharedHelpers(commands), BashFlagsAndArgs(commands), kBashMain);
}

std::string ZshCompletion(const std::vector<CommandSpec>& commands) {
  return absl::StrCat(
      "#compdef vanguard\n"
      "# zsh completion for vanguard, generated by `vanguard completion zsh`.\n"
      "# Save it as _vanguard in a directory on $fpath, then run compinit.\n",
      SharedHelpers(commands), ZshDescribe(commands), kZshMain, ZshSpecs(commands),
      "  _arguments -S : \"${specs[@]}\"\n}\n\n"
      "if [[ \"$funcstack[1]\" == _vanguard ]]; then\n"
      "  _vanguard \"$@\"\n"
      "else\n"
      "  compdef _vanguard vanguard\n"
      "fi\n");
}

CommandSpec CompletionCommand() {
  return Command<std::string>(
      {.words = {"completion"},
       .args = "bash|zsh",
       .arg_choices = {"bash", "zsh"},
       .summary = "Print the shell completion script, e.g. source <(vanguard completion bash).",
       .outputs = kEveryOutput,
       .parse = [](const CommandInput& in) -> absl::StatusOr<std::string> {
         RETURN_IF_ERROR(ExpectArgs(in.command, 1, "a shell: bash or zsh"));
         const std::string& shell = in.command.args[0];
         if (shell != "bash" && shell != "zsh") {
           return absl::InvalidArgumentError(
               absl::StrCat("'completion': '", shell, "' is not bash or zsh"));
         }
         return shell;
       },
       .run_offline =
           [](std::ostream& out, const std::string& shell) {
             out << (shell == "bash" ? BashCompletion(Commands()) : ZshCompletion(Commands()));
             return kExitOk;
           }});
}

}  // namespace vanguard::cli
