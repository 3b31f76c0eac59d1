"""``palinode-audit completion SHELL``: a completion script made from the
parser itself (commands, each command's options, folders and files for the
rest), so it never lags behind a new option."""

from __future__ import annotations

import argparse
import re
from typing import Any

from .registry import Command

SHELLS = ("bash", "zsh", "fish")
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$|^--?[A-Za-z0-9][A-Za-z0-9-]*$")


def _words(parser: argparse.ArgumentParser) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """(commands, each command's options, the global options)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    options = {
        name: sorted({o for a in p._actions for o in a.option_strings if o.startswith("--")})
        for name, p in sub.choices.items()
    }
    top = sorted({o for a in parser._actions for o in a.option_strings})
    for word in [*options, *(o for opts in options.values() for o in opts), *top]:
        assert _WORD.match(word), word  # our own words only: nothing to quote in a shell script
    return list(sub.choices), options, top


def bash_script(parser: argparse.ArgumentParser) -> str:
    commands, options, top = _words(parser)
    cases = "\n".join(f'        {name}) opts="{" ".join(opts)}" ;;' for name, opts in options.items())
    return f"""# palinode-audit completion for bash (and zsh through bashcompinit)
_palinode_audit() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" cmd="" opts="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in -*) ;; *) cmd="${{COMP_WORDS[i]}}"; break ;; esac
    done
    # mapfile, not $(...): a file name with spaces or * stays one word, never expanded
    if [[ -z "$cmd" ]]; then
        mapfile -t COMPREPLY < <(compgen -W "{" ".join(commands)} {" ".join(top)}" -- "$cur")
        return
    fi
    case "$cmd" in
{cases}
    esac
    if [[ "$cur" == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
    else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
}}
complete -o filenames -F _palinode_audit palinode-audit
"""


def zsh_script(parser: argparse.ArgumentParser) -> str:
    return "# palinode-audit completion for zsh\nautoload -U +X bashcompinit && bashcompinit\n" + bash_script(parser)


def fish_script(parser: argparse.ArgumentParser) -> str:
    commands, options, top = _words(parser)
    lines = ["# palinode-audit completion for fish", "complete -c palinode-audit -f"]
    lines.append(f'complete -c palinode-audit -n "__fish_use_subcommand" -a "{" ".join(commands)}"')
    for name, opts in options.items():
        for opt in opts:
            lines.append(f'complete -c palinode-audit -n "__fish_seen_subcommand_from {name}" -l {opt[2:]}')
        lines.append(f'complete -c palinode-audit -n "__fish_seen_subcommand_from {name}" -F')
    lines += [f"complete -c palinode-audit -l {o[2:]}" for o in top if o.startswith("--")]
    return "\n".join(lines) + "\n"


def cmd_completion(args: argparse.Namespace) -> dict[str, Any]:
    from . import build_parser

    make = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}[args.shell]
    return {"raw": make(build_parser())}


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")


COMMANDS = (
    Command(
        "completion",
        'a shell completion script: eval "$(palinode-audit completion bash)" in ~/.bashrc',
        cmd_completion,
        _configure,
        takes_store=False,
    ),
)
