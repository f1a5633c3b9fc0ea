"""What an imported run's policy was shown: the ``prompt_template`` record an importer writes.

The course's own rollout files record their prompt template (``course.lib.policy.templates``):
its name and the sha256 of its text, a Locked Room field. An outside tool puts the item to the
model its own way (lm-eval with or without ``--apply_chat_template``, a system instruction,
few-shot turns; inspect through its solvers) and logs what it sent. This module owns turning
those logged prompts into the same field, so the gate refuses to compare two imports whose
prompts differ, exactly as it refuses ``plain`` against ``fewshot``:

  * ``rendered_record(pairs)``: ``{"name": "rendered", "sha256": ...}``, the sha256 of the
    prompts as sent, one per item (``prompts_sha256``). A chat template, a system prompt or a
    different few-shot block changes the text and so the hash; the same prompts give the same
    hash whichever tool logged them.
  * ``stated_record(name)``: a course template named by the user (``--prompt-template`` of a
    plain import), its usual record.

Standard library only.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

from course.errors import CourseError
from course.lib.external.messages import emitted_text
from course.lib.records.jsonl import dumps_line

RENDERED = "rendered"


def prompts_sha256(pairs: Iterable[tuple[str, Any]]) -> str:
    """sha256 of ``(id, prompt)`` pairs, sorted by id, as one canonical JSON line.

    A prompt is a string (a rendered text) or a list of ``{"role", "content"}`` messages. The order
    of the source does not matter; the ids and the prompts do.

    >>> prompts_sha256([("b", "x"), ("a", "y")]) == prompts_sha256([("a", "y"), ("b", "x")])
    True
    >>> prompts_sha256([("a", "y")]) == prompts_sha256([("a", "y ")])
    False
    """
    ordered = sorted(pairs, key=lambda pair: pair[0])
    return hashlib.sha256(dumps_line([[ident, prompt] for ident, prompt in ordered]).encode("utf-8")).hexdigest()


def rendered_record(pairs: Iterable[tuple[str, Any]]) -> dict[str, str]:
    """The ``prompt_template`` of an import whose source logged the prompts it sent."""
    return {"name": RENDERED, "sha256": prompts_sha256(pairs)}


def stated_record(name: str) -> dict[str, str]:
    """The record of a course template named by the user (plain, fewshot, gsm8k_final)."""
    from course.lib.policy.templates import get_template  # standard library only

    return get_template(name).record()


def chat_prompt(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """The messages a chat model was sent, as plain ``{"role", "content"}`` objects.

    Each message is a dict or an object with ``role`` and ``content`` (inspect's ``ChatMessage``);
    text parts are joined with nothing in between (``course.lib.external.messages``).

    >>> chat_prompt([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])
    [{'role': 'user', 'content': 'ab'}]
    """
    out = []
    for m in messages:
        role = m.get("role") if isinstance(m, dict) else getattr(m, "role", None)
        content = m.get("content") if isinstance(m, dict) else getattr(m, "content", None)
        out.append({"role": str(role), "content": emitted_text(content)})
    return out


def lm_eval_context(obj: dict[str, Any], where: str) -> str:
    """The prompt lm-eval sent for one ``--log_samples`` line (``arguments.gen_args_0.arg_0``), rendered:
    with ``--apply_chat_template`` it holds the chat template's output, system instruction and few-shot
    turns included."""
    args = obj.get("arguments")
    context: Any = None
    if isinstance(args, dict) and isinstance(args.get("gen_args_0"), dict):
        context = args["gen_args_0"].get("arg_0")
    elif isinstance(args, list) and args and isinstance(args[0], (list, tuple)) and args[0]:
        context = args[0][0]
    if not isinstance(context, str):
        raise CourseError(f"{where}: the request's prompt (arguments.gen_args_0.arg_0) is not text")
    return context


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.external.prompt_records"))
