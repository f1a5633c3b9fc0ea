"""What a model emitted, read from a chat message the same way in every bridge.

A chat message's ``content`` is either one string or a list of *parts*: text parts, and parts
that are not text (images, audio, a reasoning block). Libraries disagree on how the text parts
make one string: TRL's callers and the OpenAI message shape leave it to you, inspect_ai's
``ChatMessage.text`` (and so ``ModelOutput.completion``) joins them with ``"\\n"``. The same
message ``["Final: ", "66"]`` then scored 1 through one bridge and 0 (``multiple_lines``)
through another: the verdict depended on the library, not on the model.

The course's rule, for every bridge (TRL, inspect_ai, verl, the importer, the batch adapter):
**the text parts are joined with nothing in between**, because the parts are consecutive
pieces of one generated stream: a provider splits a reply into parts where its stream was
cut, not where the model wrote a separator, and a newline the model did not write is not
the model's. Parts that are not text are skipped (an image or a reasoning block is not the
answer; the strict verifier reads the answer line only). A text part whose ``text`` is not a
string makes the whole content that value, so the scorer (it never raises) names it
``not_a_string``, as it does any content that is not text.

>>> emitted_text([{"type": "text", "text": "Final: "}, {"type": "text", "text": "66"}])
'Final: 66'
>>> emitted_text("Final: 66"), emitted_text([{"type": "image", "image": "x.png"}])
('Final: 66', '')
"""

from __future__ import annotations

from typing import Any


def _part(part: Any) -> tuple[Any, Any]:
    """``(type, text)`` of one content part: a dict (TRL, OpenAI shape) or an object (inspect's ``ContentText``)."""
    if isinstance(part, dict):
        return part.get("type"), part.get("text")
    return getattr(part, "type", None), getattr(part, "text", None)


def emitted_text(content: Any) -> Any:
    """The text of a message's ``content``: a string as is; text parts joined with ``""``; else ``content``.

    >>> emitted_text([{"type": "text", "text": 3}])
    3
    """
    if isinstance(content, (list, tuple)):
        texts = [text for kind, text in map(_part, content) if kind == "text"]
        odd = [t for t in texts if not isinstance(t, str)]
        return odd[0] if odd else "".join(texts)
    return content


def completion_text(completion: Any) -> Any:
    """The text to score: a string as is; for a conversation, the last assistant message's ``emitted_text``.

    A conversation without an assistant message raises ``ValueError`` (scoring the last message
    would score the user's own text).

    >>> completion_text([{"role": "assistant", "content": "Final: 3"}])
    'Final: 3'
    >>> completion_text([{"role": "assistant", "content": [{"type": "text", "text": "Final: 3"}]}])
    'Final: 3'
    """
    if isinstance(completion, list) and completion and all(isinstance(m, dict) for m in completion):
        replies = [m for m in completion if m.get("role") == "assistant"]
        if not replies:
            roles = sorted({str(m.get("role")) for m in completion})
            raise ValueError(f"a conversation with no assistant message (roles: {', '.join(roles)}): nothing the "
                             f"model said to score; pass the generated turn(s), as TRL does")
        return emitted_text(replies[-1].get("content"))
    return completion


def output_text(output: Any) -> Any:
    """What an inspect_ai ``ModelOutput`` emitted: its first choice's message under ``emitted_text``.

    inspect's own ``output.completion`` joins text parts with ``"\\n"``; an output without a
    choice (a solver that set ``completion`` by hand) falls back to ``completion``.
    """
    choices = getattr(output, "choices", None)
    if choices:
        return emitted_text(choices[0].message.content)
    return output.completion


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.external.messages"))
