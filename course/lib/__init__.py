"""The library layer: what the tools do, with no command line in it.

Modules here take and return values and records; they never parse arguments,
print, or exit (the tools in ``course/<tool>.py`` do that). ``jsonl`` owns every
JSON/JSONL byte read or written; ``formats`` declares each file format once.
"""

import sys


def not_a_tool(module: str) -> int:
    """What ``python -m <library module>`` does: say it is not a tool and point at the list.

    Asked for ``--help``, that answer is the help (stdout, exit 0); run any other way, it is a
    usage error (stderr, exit 2).
    """
    message = f"{module} is a library module, not a tool (nothing to run). `python -m course` lists the tools."
    if any(arg in ("-h", "--help") for arg in sys.argv[1:]):
        print(message)
        return 0
    print(message, file=sys.stderr)
    return 2
