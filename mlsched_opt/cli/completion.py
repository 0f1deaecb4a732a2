"""``mlsched completion SHELL``: the shell completion script (click's mechanism)."""

from __future__ import annotations

import click

from .app import cli, verb

SHELLS = ("bash", "zsh", "fish")


@verb("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> int:
    """Print the completion script for SHELL: commands, options, and problem, method and solver names.

    \b
    bash:  eval "$(mlsched completion bash)"       (in ~/.bashrc)
    zsh:   eval "$(mlsched completion zsh)"        (in ~/.zshrc)
    fish:  mlsched completion fish > ~/.config/fish/completions/mlsched.fish

    Click's own mechanism underneath: the script calls `_MLSCHED_COMPLETE=bash_complete mlsched`,
    and `_MLSCHED_COMPLETE=bash_source mlsched` prints the same script.  Completing a problem,
    method or solver name loads the problem registry (about a second).
    """
    from click.shell_completion import get_completion_class

    completer = get_completion_class(shell)
    assert completer is not None  # `shell` is a click.Choice of the shells click completes
    script = completer(cli, {}, "mlsched", "_MLSCHED_COMPLETE").source()
    click.echo(script)
    return 0
