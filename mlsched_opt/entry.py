"""The ``mlsched`` console script: Ctrl-C is handled from its first instant.

Importing the CLI takes a moment (click, the package); a Ctrl-C in it would end in Python's
KeyboardInterrupt traceback.  Here, before that import, a Ctrl-C or SIGTERM ends the process at
once with the shell's codes (130, 143) and one line; :func:`mlsched_opt.cli.console_main` then
installs the real handling (best answer so far, temporary files removed).
"""

from __future__ import annotations

import os
import signal


def _early(signum: int, frame: object) -> None:
    os.write(2, b"mlsched: interrupted\n" if signum == signal.SIGINT else b"mlsched: terminated\n")
    os._exit(130 if signum == signal.SIGINT else 143)


def main() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _early)
    from .cli import console_main

    console_main()  # which installs the real handling over these
