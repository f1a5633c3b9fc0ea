"""`python -m course.llm`: list the real-LLM tools, one line each."""

from course.lib.toolbox import listing

print(listing("course.llm."))
