"""The progress line of both policies' long commands: one self-overwriting line on stderr, only on a terminal.

Training, sweeping and sampling take from seconds to minutes on a laptop CPU. A
person watching a terminal should see that the command is alive and how far it
got; a log file or a pipe must get none of it (no ``\\r`` debris in captured
stderr), so the line is drawn only when the stream is a terminal, redrawn at
most twice a second, and erased at the end. It never touches stdout, a random
stream or a file of the run::

    progress = ProgressLine("rl step", total=60)
    for step in range(1, 61):
        ...
        progress.info("a line that must stay")   # erases the progress line first
        progress.update(step)
    progress.clear()

The tools (``course.tinylm.rl``, ``sweep``, ``sft``, ``sample``) use it; it is the
terminal edge of the tiny LM, like ``course.cli.info``.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from course.lib.visible import terminal_line

ERASE = "\r\033[K"  # carriage return, then erase to the end of the line
MIN_INTERVAL_S = 0.5


class ProgressLine:
    """``label done/total (elapsed, ~remaining)`` on one line of ``stream`` (stderr), if it is a terminal."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = max(1, total)
        self.stream = stream if stream is not None else sys.stderr
        self.active = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self.last = float("-inf")
        self.drawn = False

    def update(self, done: int) -> None:
        """Redraw the line (at most every MIN_INTERVAL_S seconds, and always at the last unit)."""
        if not self.active:
            return
        now = time.perf_counter()
        if now - self.last < MIN_INTERVAL_S and done < self.total:
            return
        self.last = now
        elapsed = now - self.start
        left = f", ~{elapsed / done * (self.total - done):.0f}s left" if 0 < done < self.total else ""
        self.stream.write(f"{ERASE}{self.label} {done}/{self.total} ({elapsed:.0f}s{left})")
        self.stream.flush()
        self.drawn = True

    def clear(self) -> None:
        """Erase the line (the terminal is left as if it had never been drawn)."""
        if self.drawn:
            self.stream.write(ERASE)
            self.stream.flush()
            self.drawn = False

    def info(self, message: str) -> None:
        """A diagnostic line that stays: the progress line is erased first, redrawn at the next update."""
        self.clear()
        print(terminal_line(message), file=self.stream, flush=True)  # one line, as course.cli.info prints
        self.last = float("-inf")


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.policy.progress"))
