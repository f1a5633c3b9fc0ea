"""The library layer: what the tools do, with no command line in it.

Modules here take and return values and records; they never parse arguments,
print, or exit (the tools in ``course/<tool>.py`` do that). ``jsonl`` owns every
JSON/JSONL byte read or written; ``formats`` declares each file format once.
"""

import sys


def not_a_tool(module: str) -> int:
    """What ``python -m <library module>`` does: say it is not a tool, point at the list, exit 2."""
    print(
        f"{module} is a library module, not a tool (nothing to run). "
        "`python -m course` lists the tools.",
        file=sys.stderr,
    )
    return 2
