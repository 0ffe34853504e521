"""The pieces a streamed answer is read with, on odd inputs: the server-sent-events parser (line ends of every
kind, a CRLF or a UTF-8 character split between two network reads, comments, multi-line data, a torn last line),
the `<think>` filter against `strip_think`, and OpenAI's chunks (a malformed one is a counted `bad_response`
quoting the chunk, an error event a `server` failure)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailorbench.models.base import strip_think
from tailorbench.models.model import CallError
from tailorbench.models.openai_stream import ChunkReader
from tailorbench.models.streaming import SSEEvent, SSEParser, ThinkFilter

_TEXT = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12)
_EVENT = st.tuples(st.lists(_TEXT, min_size=1, max_size=3), st.sampled_from(["", "error", "ping"]),
                   st.booleans())
_ENDS = st.sampled_from(["\n", "\r", "\r\n", "mixed"])
#: a mixed stream does not end one line with CR and the next, blank one with LF (that reads as one CRLF)
_MIXED = st.sampled_from(["\n", "\r\n"])


def _feed_split(parser: SSEParser, body: bytes, cuts: list[int]) -> list[SSEEvent]:
    events: list[SSEEvent] = []
    start = 0
    for cut in sorted({min(c, len(body)) for c in cuts}):
        events += parser.feed(body[start:cut])
        start = cut
    events += parser.feed(body[start:])
    return events + parser.close()


@settings(max_examples=200, deadline=None)
@given(st.lists(_EVENT, max_size=6), _ENDS, st.lists(st.integers(0, 400), max_size=12), st.data())
def test_any_split_of_any_stream_gives_the_same_events(
    events: list[tuple[list[str], str, bool]], end: str, cuts: list[int], data: st.DataObject
) -> None:
    lines: list[str] = []
    expected: list[SSEEvent] = []
    for data_lines, name, comment in events:
        if comment:
            lines.append(": keep-alive")
        if name:
            lines.append(f"event: {name}")
        lines += [f"data: {value}" for value in data_lines]
        lines.append("")  # the blank line that dispatches it
        expected.append(SSEEvent("\n".join(data_lines), name or "message"))
    body = "".join(line + (data.draw(_MIXED) if end == "mixed" else end) for line in lines).encode()
    assert _feed_split(SSEParser(), body, cuts) == expected


def test_odd_but_valid_streams() -> None:
    parser = SSEParser()
    body = ("\ufeffdata:no-space\r\n\r\n"  # a byte-order mark, no space after the colon
            ": comment\n"
            "data\n\n"  # a field without a colon: empty data
            "id: 7\nretry: 100\ndata: a\ndata:  b\n\n"  # ignored fields; one space dropped, not two
            "event: error\n\n"  # an event without data is not dispatched, and its name does not leak
            "data: c\n\n").encode()
    assert _feed_split(parser, body, [1, 2, 3, 17, 18]) == [
        SSEEvent("no-space"), SSEEvent(""), SSEEvent("a\n b"), SSEEvent("c")]


def test_a_character_split_between_reads_and_a_crlf_split_between_reads() -> None:
    parser = SSEParser()
    body = "data: 问题 ✓\r\n\r\n".encode()
    at = body.index("题".encode()) + 1  # inside the three bytes of one character
    assert parser.feed(body[:at]) == []
    crlf = body.index(b"\r\n") + 1
    assert parser.feed(body[at:crlf]) == []
    assert parser.feed(body[crlf:]) == [SSEEvent("问题 ✓")]


def test_the_end_of_the_body() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: [DONE]\n") == []
    assert parser.close() == [SSEEvent("[DONE]")]  # lines that all ended, without the blank line: dispatched
    parser = SSEParser()
    assert parser.feed(b'data: {"choices": [{"del') == []
    assert parser.close() == [] and parser.torn == 'data: {"choices": [{"del'  # a torn line is not read


_PIECES = st.lists(st.sampled_from(["<think>", "</think>", "<THINK>", "<", "/", "think", ">", "a", "b c", " ",
                                    "\n", "答"]), max_size=14)


@settings(max_examples=300, deadline=None)
@given(_PIECES, st.lists(st.integers(1, 5), min_size=1, max_size=8))
def test_the_think_filter_shows_what_strip_think_leaves(pieces: list[str], sizes: list[int]) -> None:
    text = "".join(pieces)
    shown = ThinkFilter()
    out, i, n = [], 0, 0
    while i < len(text):
        size = sizes[n % len(sizes)]
        out.append(shown.feed(text[i:i + size]))
        i, n = i + size, n + 1
    out.append(shown.flush())
    joined = "".join(out)
    finished = strip_think(text)[0]
    if "<think>" in text.lower():
        assert joined.strip() == finished  # whitespace at the ends of an answer with a block may differ
    else:
        assert joined == finished == text


def _chunk(content: str | None = None, finish: str | None = None, usage: dict[str, int] | None = None) -> SSEEvent:
    delta = {} if content is None else {"content": content}
    choices = [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return SSEEvent(json.dumps({"object": "chat.completion.chunk", "choices": choices, "usage": usage}))


def test_chunks_make_the_whole_answer() -> None:
    reader = ChunkReader(logprobs=False)
    shown = [reader.read(_chunk("<think>plan")), reader.read(_chunk("</think>\n\nHel")), reader.read(_chunk("lo")),
             reader.read(_chunk(None, "stop")), reader.read(_chunk(usage={"prompt_tokens": 9, "completion_tokens": 4})),
             reader.read(SSEEvent("[DONE]")), reader.flush()]
    assert "".join(shown) == "Hello"
    result = reader.result(ended=True, torn="")
    assert (result.text, result.raw, result.reasoning) == ("Hello", "<think>plan</think>\n\nHello", "plan")
    assert (result.finish_reason, result.prompt_tokens, result.completion_tokens) == ("stop", 9, 4)


@pytest.mark.parametrize(("event", "kind", "quoted"), [
    (SSEEvent('{"choices": [{"delta": {"content": "x"'), "bad_response", '{"choices": [{"delta"'),
    (SSEEvent('["a list"]'), "bad_response", "a list"),
    (SSEEvent('{"choices": {"0": 1}}'), "bad_response", '"0"'),
    (SSEEvent('{"choices": [{"delta": {"content": 5}}]}'), "bad_response", "content"),
    (SSEEvent('{"choices": [], "usage": {"prompt_tokens": "many"}}'), "bad_response", "many"),
    (SSEEvent('{"error": {"message": "model overloaded"}}'), "server", "model overloaded"),
    (SSEEvent('{"message": "overloaded"}', "error"), "server", "overloaded"),
])
def test_a_bad_chunk_is_a_classified_error_quoting_it(event: SSEEvent, kind: str, quoted: str) -> None:
    reader = ChunkReader(logprobs=False)
    with pytest.raises(CallError) as raised:
        reader.read(event)
    assert raised.value.kind == kind
    assert quoted in raised.value.message


def test_a_body_that_ends_before_done() -> None:
    reader = ChunkReader(logprobs=False)
    reader.read(_chunk("Hel"))
    with pytest.raises(CallError, match=r"before \[DONE\].*cut mid-line") as raised:
        reader.result(ended=True, torn='data: {"cho')
    assert raised.value.kind == "connection"
    reader.read(_chunk(None, "stop"))  # a finish reason and a body that ended as framed: a server without [DONE]
    assert reader.result(ended=True, torn="").text == "Hel"
    with pytest.raises(CallError):
        reader.result(ended=False, torn="")
