"""Runs and records: every byte the course reads or writes, and the run directories that hold them.

``jsonl`` (the one JSON reader and writer), ``formats`` (each file format declared once),
``shapes`` (the shape of a nested value), ``runs`` (the run writer), ``temporaries`` (the
only code that removes a file) and ``manifest`` (the provenance each run carries).
"""
