"""A long trace is parsed a few megabytes at a time (roofline.kineto.chunks): the batches hold exactly the events
a whole parse gives, in order, whatever the events' strings and nesting hold; a file laid out otherwise is refused
(ValueError), so the reader falls back to the whole parse."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.kineto import chunks
from roofline.kineto.chunks import EventStream

TRICKY = ["}, {", "}],", "]", "\"}, {\"", "\\", "},\n{", "ü", ""]


def events_of(stream: EventStream) -> list:
    return [e for batch in stream for e in batch]


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    monkeypatch.setattr(chunks, "BATCH", 64)


def trace(n: int, **extra) -> dict:
    events = [{"ph": "X", "cat": "kernel", "name": f"k{i}{TRICKY[i % len(TRICKY)]}", "ts": i, "dur": 1,
               "args": {"Input Dims": [[4, 8], []], "s": TRICKY[(i + 3) % len(TRICKY)], "x": [1, {"y": "}],"}]}}
              for i in range(n)]
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "traceEvents": events,
            **extra}


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("extra", [{}, {"traceName": "a]b", "x": [1, [2]]}, {"z": {"q": "}, {"}}],
                         ids=["events-last", "keys-with-brackets-after", "object-after"])
def test_the_batches_are_the_events_of_a_whole_parse(indent, extra):
    doc = trace(300, **extra)
    stream = EventStream(json.dumps(doc, indent=indent).encode(), orjson.loads)
    assert events_of(stream) == doc["traceEvents"]
    assert stream.head == {**doc, "traceEvents": []}


@pytest.mark.parametrize("n", [0, 1, 2])
def test_a_short_trace_is_one_batch(n):
    doc = trace(n)
    stream = EventStream(json.dumps(doc).encode(), orjson.loads)
    assert events_of(stream) == doc["traceEvents"]


@pytest.mark.parametrize("text", [b'{"traceEvents": [1, 2', b'{"traceEvents": [{"a": 1}, {"b": ]}', b'{"x": 1}',
                                  b'{"traceEvents": [{"a": 1}] garbage'],
                         ids=["truncated", "broken-event", "no-events", "trailing-garbage"])
def test_text_that_is_not_a_whole_trace_is_refused(text):
    with pytest.raises(ValueError):
        events_of(EventStream(text, orjson.loads))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["name", "cat", "s", "t"]),
                                # integers orjson reads exactly (it reads one beyond 64 bits as a float, whole parse
                                # or batches alike): this test is about the batches, not orjson's numbers
                                st.one_of(st.text(alphabet="{}[],\": \\ab\n", max_size=12),
                                          st.integers(min_value=-2**63, max_value=2**64 - 1),
                                          st.lists(st.text(alphabet="{}[],\"", max_size=4), max_size=3)),
                                max_size=4), max_size=60),
       st.booleans())
def test_any_events_come_back_whole_and_in_order(events, indent):
    doc = {"traceEvents": events, "tail": "]}"}
    stream = EventStream(json.dumps(doc, indent=2 if indent else None).encode(), orjson.loads)
    assert events_of(stream) == events
    assert stream.head == {"traceEvents": [], "tail": "]}"}


@pytest.mark.parametrize("name", ["compiled/llama-train-compiled.json.gz",
                                  "compiled/gpt2-train-fp16-scaler-compiled.json.gz",
                                  "h200-train.json.gz", "step.json", "rank0.json"])
def test_the_reader_gives_the_same_trace_in_batches_as_whole(monkeypatch, name):
    """read_trace parses a long trace in batches: the same ops, launches, GPU events, window and unusable counts as
    the whole parse (forced here on the committed traces with 64-byte batches)."""
    from pathlib import Path

    from roofline.kineto import reader

    path = Path(__file__).parent / "data" / "kineto" / name
    monkeypatch.setattr(reader, "STREAM_FROM", 1 << 40)
    whole = reader.read_trace(path)
    monkeypatch.setattr(reader, "STREAM_FROM", 0)
    monkeypatch.setattr(reader, "_whole_doc", lambda *a: pytest.fail("parsed whole, not in batches"))
    batched = reader.read_trace(path)
    assert batched == whole
    assert whole.gpu


def test_a_long_import_says_where_it_is_and_a_short_one_says_nothing(monkeypatch, run_cli):
    """Issue 34: a progress report on long imports (a line per step in a log, a spinner on a terminal); traces under
    the batch size (8 MB) import as quietly as before."""
    from pathlib import Path

    from roofline.kineto import reader

    path = Path(__file__).parent / "data" / "kineto" / "compiled" / "llama-train-compiled.json.gz"
    code, _, err = run_cli("import", "torch", path, "--format", "json")
    assert code == 0 and "import torch: read" not in err
    monkeypatch.setattr(reader, "STREAM_FROM", 0)
    code, _, err = run_cli("import", "torch", path, "--format", "json")
    assert code == 0, err
    assert "import torch: read llama-train-compiled.json.gz: OK" in err
    assert "import torch: model 120 GPU events: OK" in err
