"""The library layer: what the tools do, with no command line in it.

Modules here take and return values and records; they never parse arguments,
print, or exit (the tools in ``course/<tool>.py`` do that). ``jsonl`` owns every
JSON/JSONL byte read or written; ``formats`` declares each file format once.
"""
