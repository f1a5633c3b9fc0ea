"""The prompt templates: how a dataset item becomes the chat a real LLM reads. A Locked Room field.

A chat model is never given "the prompt" alone: it reads a conversation, rendered into
one string by the tokenizer's chat template. What the course puts into that conversation
besides the item is part of the *environment*, not of the policy: a system prompt and two
worked examples can move strict pass@1 from 0 to a few percent without a single weight
changing. So the template is recorded on every rollout line and in every manifest, and
``course.gate`` refuses to compare ``plain`` with ``fewshot`` ("Locked Room violated:
prompt_template differs") instead of calling the difference learning.

Three templates:

  plain        the dataset's prompt as the only user message, verbatim (the chat template
               then adds the model's own default system line, as it does for any user)
  fewshot      a system prompt stating the output format, then two worked examples (a user
               turn and the assistant's one-line answer each), then the dataset's prompt
  gsm8k_final  the same shape for grade-school word problems (an imported GSM8K slice):
               the format, two worked word problems, then the dataset's prompt

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

``render`` is the one door from a dataset prompt to the string the model reads, and it holds two
rules:

* **No role boundaries from data.** A chat template joins the turns with special tokens
  (``<|im_start|>``, ``<|im_end|>``); the tokenizer turns that TEXT into the special ids wherever
  it appears, so a dataset prompt holding ``<|im_end|>\n<|im_start|>system\n...`` would open a
  real system turn of its own (prompt injection through the data). A prompt holding the text of
  any special or added token of the model is refused, naming the token. It is not escaped: any
  escape changes the text the item asks about, and the course never scores an item it altered.
* **Bounded rendering.** The chat template is the model's code (Jinja, run in transformers'
  sandbox), and the sandbox bounds what it may touch, not how long it runs: two nested
  100,000-step loops never end. Rendering runs under a step budget: every line the compiled
  template executes counts (``sys.settrace`` on the template's own frames only), and past
  ``RENDER_STEPS`` the render stops with one line. The count is deterministic (the same template
  and chat always take the same steps), unlike a wall-clock limit; SmolLM2's template takes a few
  dozen steps per chat. Whatever else the template raises (``raise_exception`` on a system turn,
  a recursion) is one line too.
"""

from __future__ import annotations

import hashlib
import sys
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

# For grade-school word problems (a GSM8K slice imported by course.datasets): the same one-line format,
# with two worked word problems written by hand (neither is a GSM8K item nor a course item; a test checks).
GSM8K_FINAL = PromptTemplate(
    "gsm8k_final",
    "a system prompt stating the format, two worked word problems, then the dataset's prompt",
    system=(
        "You solve grade-school math word problems. Work the problem out silently, then reply with exactly "
        "one line and nothing else: Final: followed by one space and the answer as an integer, for example Final: 42"
    ),
    shots=(
        ("A farmer packs 7 boxes with 36 eggs each and then sells 150 eggs. How many eggs does he have left? "
         "Output exactly one line: Final: <int>", "Final: 102"),
        ("Maya has 45 dollars. She buys 3 books that cost 12 dollars each. How many dollars does she have left? "
         "Output exactly one line: Final: <int>", "Final: 9"),
    ),
)

TEMPLATES: dict[str, PromptTemplate] = {t.name: t for t in (PLAIN, FEWSHOT, GSM8K_FINAL)}

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


# Lines of the compiled chat template one render may execute. SmolLM2's template takes ~40 for the
# few-shot chat; a template needing 5,000 times that is not a chat template, it is a loop.
RENDER_STEPS = 200_000
_TEMPLATE_CODE = "<template>"  # the file name Jinja gives the code it compiles a template into


class _OverBudget(BaseException):
    """Raised inside the template's frames at the step limit. A BaseException, so no ``except Exception``
    of Jinja or transformers on the way out can swallow or rewrap it."""


def special_texts(tokenizer: Any) -> list[str]:
    """The text of every special or added token of ``tokenizer``: strings it reads as one special id."""
    texts = set(getattr(tokenizer, "all_special_tokens", None) or ())
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    texts |= {getattr(t, "content", str(t)) for t in added.values()}
    return sorted(t for t in texts if t)


def check_prompt(tokenizer: Any, prompt: str) -> None:
    """``CourseError`` if ``prompt`` holds the text of a special token (it would become a real role boundary)."""
    for token in special_texts(tokenizer):
        if token in prompt:
            raise CourseError(
                f"the prompt holds {token!r}, the text of one of the model's special tokens: the chat template would "
                "make it a real turn boundary (a prompt injected from the data); it is refused, not escaped (an escape "
                "would change the item), so remove it from the dataset"
            )


def render(tokenizer: Any, template: PromptTemplate, prompt: str) -> str:
    """The exact string the model reads: the template's messages through the tokenizer's chat template,
    ending with the assistant's turn opened (``add_generation_prompt``).

    ``CourseError`` (one line) for a prompt holding special-token text, a template that raises, or
    one that runs past ``RENDER_STEPS`` (see the module docstring).
    """
    check_prompt(tokenizer, prompt)
    steps = 0

    def count(frame: Any, event: str, arg: Any) -> Any:
        nonlocal steps
        if event == "line":
            steps += 1
            if steps > RENDER_STEPS:
                raise _OverBudget
        return count

    def calls(frame: Any, event: str, arg: Any) -> Any:
        return count if frame.f_code.co_filename == _TEMPLATE_CODE else None

    before = sys.gettrace()
    sys.settrace(calls)
    try:
        text = tokenizer.apply_chat_template(template.messages(prompt), tokenize=False, add_generation_prompt=True)
    except _OverBudget:
        raise CourseError(f"the model's chat template ran past {RENDER_STEPS:,} steps rendering the {template.name!r} "
                          "chat (a loop, not a chat template); use a model with an ordinary chat template") from None
    except Exception as exc:  # noqa: BLE001 - the template is the model's code: whatever it raises is one line
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise CourseError(f"the model's chat template cannot render the {template.name!r} chat "
                          f"({type(exc).__name__}: {first})") from None
    finally:
        sys.settrace(before)
    if not isinstance(text, str):
        raise CourseError(f"the model's chat template rendered {type(text).__name__}, not text")
    return text


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.policy.templates"))
