"""The prompt templates: how a dataset item becomes the chat a real LLM reads. A Locked Room field.

A chat model is never given "the prompt" alone: it reads a conversation, rendered into
one string by the tokenizer's chat template. What the course puts into that conversation
besides the item is part of the *environment*, not of the policy: a system prompt and two
worked examples can move strict pass@1 from 0 to a few percent without a single weight
changing. So the template is recorded on every rollout line and in every manifest, and
``course.gate`` refuses to compare ``plain`` with ``fewshot`` ("Locked Room violated:
prompt_template differs") instead of calling the difference learning.

Two templates:

  plain    the dataset's prompt as the only user message, verbatim (the chat template
           then adds the model's own default system line, as it does for any user)
  fewshot  a system prompt stating the output format, then two worked examples (a user
           turn and the assistant's one-line answer each), then the dataset's prompt

The worked examples were written by hand in the course's problem style; none of them is a
dev or holdout item (tests/test_llm_templates.py checks it against the bundled datasets).

Each template has a ``name`` and a ``fingerprint``: the sha256 of its exact text (the
messages as one canonical JSON line, with ``{prompt}`` where the item goes). Rollout
files record ``{"name": ..., "sha256": ...}`` as ``prompt_template``::

    from course.lib.policy.templates import get_template, render
    t = get_template("fewshot")
    t.messages("Compute 2 + 3. Output exactly one line: Final: <int>")   # the chat, as a list
    render(tokenizer, t, prompt)         # the string the model reads (tokenizer's chat template)
    t.record()                           # {"name": "fewshot", "sha256": "..."}

A rollout file with no ``prompt_template`` (the simulated policy, the tiny LM, anything
written before the field existed) gave its policy the dataset prompt as it is: it counts as
``plain`` (``IMPLICIT``). Standard library only: the Locked Room imports this module.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from course.errors import CourseError
from course.lib.records.jsonl import dumps_line

PROMPT_SLOT = "{prompt}"  # where the dataset item goes in a template's text


@dataclass(frozen=True)
class PromptTemplate:
    """A named way of turning a dataset prompt into chat messages."""

    name: str
    summary: str
    system: str | None = None
    shots: tuple[tuple[str, str], ...] = ()  # (user, assistant) worked examples, in order

    def messages(self, prompt: str) -> list[dict[str, str]]:
        """The chat for one item: system (if any), the worked examples, then the item as the user turn."""
        chat = [] if self.system is None else [{"role": "system", "content": self.system}]
        for user, assistant in self.shots:
            chat += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        chat.append({"role": "user", "content": prompt})
        return chat

    @property
    def text(self) -> str:
        """The template's exact text: its messages as one canonical JSON line, ``{prompt}`` for the item."""
        return dumps_line(self.messages(PROMPT_SLOT))

    @property
    def fingerprint(self) -> str:
        """sha256 of ``text``: any change to a word of the template changes it."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def record(self) -> dict[str, str]:
        """What rollout lines and manifests carry as ``prompt_template``."""
        return {"name": self.name, "sha256": self.fingerprint}


PLAIN = PromptTemplate("plain", "the dataset's prompt as the only user message")

FEWSHOT = PromptTemplate(
    "fewshot",
    "a system prompt stating the format, two worked examples, then the dataset's prompt",
    system=(
        "You solve small arithmetic problems. Reply with exactly one line and nothing else: "
        "Final: followed by one space and the answer as an integer, for example Final: 42"
    ),
    shots=(
        ("Compute 14 * 6. Output exactly one line: Final: <int>", "Final: 84"),
        (
            "The temperature is 4 degrees and drops by 9 degrees. What is the temperature now? "
            "Output exactly one line: Final: <int>",
            "Final: -5",
        ),
    ),
)

TEMPLATES: dict[str, PromptTemplate] = {t.name: t for t in (PLAIN, FEWSHOT)}

# What a rollout file without the field used: the dataset prompt as it is.
IMPLICIT = PLAIN


def get_template(name: str) -> PromptTemplate:
    """The template called ``name``; ``CourseError`` naming the choices otherwise."""
    try:
        return TEMPLATES[name]
    except KeyError:
        raise CourseError(f"unknown prompt template {name!r}; choose one of: {', '.join(TEMPLATES)}") from None


def describe(record: Any) -> str:
    """A recorded ``prompt_template`` value in words (for tables and summaries).

    >>> describe(PLAIN.record()) == f"plain ({PLAIN.fingerprint[:12]})"
    True
    >>> describe(None)
    'plain (implicit: the dataset prompt as-is)'
    """
    if record is None:
        return f"{IMPLICIT.name} (implicit: the dataset prompt as-is)"
    if isinstance(record, dict) and isinstance(record.get("name"), str) and isinstance(record.get("sha256"), str):
        return f"{record['name']} ({record['sha256'][:12]})"
    return dumps_line(record)


def render(tokenizer: Any, template: PromptTemplate, prompt: str) -> str:
    """The exact string the model reads: the template's messages through the tokenizer's chat template,
    ending with the assistant's turn opened (``add_generation_prompt``)."""
    return tokenizer.apply_chat_template(template.messages(prompt), tokenize=False, add_generation_prompt=True)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.policy.templates"))
