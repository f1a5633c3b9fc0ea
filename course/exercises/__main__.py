"""`python -m course.exercises`: list the tools, grouped by loop, one line each."""

from course.lib.toolbox import listing

print(listing("course.exercises."))
