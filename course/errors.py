"""The one error type for bad input.

Library code raises ``CourseError`` with a message that says what was expected
(for files: ``path:line: what is wrong``). Each CLI catches it once, prints the
message on stderr and exits with code 2. A failure of a single *item* (a
completion that does not parse, a sample the endpoint refused) is never an
exception: it is a field in that item's record.
"""

from __future__ import annotations


class CourseError(ValueError):
    """Bad input: a malformed file, a missing argument, an unusable run directory."""
