"""Reading at trace scale: the JSON structure scan that refuses a file by its counts before it is
parsed, checked against the parser on any document and any chunking."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from mlsched_opt.errors import InstanceError
from mlsched_opt.io import files, load_instance
from mlsched_opt.io.files import _JsonScan

# strings full of what a naive scanner trips on: quotes, backslash runs, brackets, the key itself
_TRICKY = st.lists(st.sampled_from([*'ab"\\[]{}: \n', '"jobs": [', "\\\\", '\\"']), max_size=8).map("".join)
_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), _TRICKY)
_VALUE = st.recursive(_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(_TRICKY, inner, max_size=4)), max_leaves=25)


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _scan(text: str, chunk: int, depth: int = 64, limit: int = 10**9) -> _JsonScan:
    files.set_limits([f"jobs={limit}"])
    try:
        scan = _JsonScan("f.json", depth, ("jobs", "jobs"))
        data = text.encode()
        for i in range(0, len(data), chunk):
            scan.feed(data[i:i + chunk])
        scan.feed(b"", final=True)
    finally:
        files.set_limits()
    return scan


@settings(max_examples=40, deadline=None)
@given(doc=st.dictionaries(_TRICKY, _VALUE, max_size=4), jobs=st.lists(st.one_of(_VALUE, st.dictionaries(_TRICKY, _VALUE)), max_size=6),
       before=st.booleans(), indent=st.sampled_from([None, 1]), chunk=st.sampled_from([5, 64, 10**6]))
def test_the_scan_counts_and_measures_as_the_parser_reads(doc, jobs, before, indent, chunk):
    """Any document, any chunk boundaries: the scan's count of the top-level jobs array's objects and
    its depth verdict agree with what json.loads reads (a miss may only leave the count unknown)."""
    doc = dict(doc)
    doc.pop("jobs", None)
    whole = {"jobs": jobs, **doc} if before else {**doc, "jobs": jobs}
    text = json.dumps(whole, indent=indent)
    objects = sum(isinstance(j, dict) for j in jobs)
    scan = _scan(text, chunk)
    assert scan.depth == 0 and not scan.in_string
    assert scan.items == -2  # found and closed, whatever the chunks
    if objects > 1:
        with pytest.raises(InstanceError, match=f"jobs \\(counted as the file is read\\) is {objects}, over the limit jobs="):
            _scan(text, chunk, limit=objects - 1)
    true_depth = _depth(whole)
    _scan(text, chunk, depth=true_depth)
    with pytest.raises(InstanceError, match="nesting depth at line"):
        _scan(text, chunk, depth=true_depth - 1)


def test_a_json_instance_over_the_jobs_limit_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    """The count stops the read: json.loads never runs, and not all of the file is read."""
    job = '{"id": "j%d", "workers": {"count": 1}, "demand": {"worker": {"gpu": 1}}}'
    text = '{"format": "mlsched-instance/1", "jobs": [' + ", ".join(job % i for i in range(300_000)) + "]}"
    path = tmp_path / "many.json"
    path.write_text(text)
    monkeypatch.setenv("MLSCHED_LIMITS", "jobs=1000")
    monkeypatch.setattr(files.json, "loads", lambda *a, **k: pytest.fail("parsed before its jobs were counted"))
    fed: list[int] = []
    real = _JsonScan.feed
    monkeypatch.setattr(_JsonScan, "feed", lambda self, chunk, final=False: (fed.append(len(chunk)), real(self, chunk, final))[1])
    with pytest.raises(InstanceError) as err:
        load_instance(path)
    assert "over the limit jobs=1000" in str(err.value) and err.value.field == "jobs"
    assert sum(fed) < len(text)  # the first 16 MiB chunk of a 19 MiB file, no more


def test_a_slow_read_refusal_states_a_time_above_the_time_left(tmp_path):
    """Half a MiB of JSON at 3 MiB/s needs about 0.17 s: the message must not round it to "0 s"
    next to "0.1 s left" (it read as a contradiction)."""
    from mlsched_opt.io.instance import refuse_slow_read

    path = tmp_path / "half.json"
    path.write_bytes(b" " * (1 << 19))
    with pytest.raises(InstanceError) as err:
        refuse_slow_read(path, 0.1)
    need, left = (float(x) for x in re.search(r"about ([\d.]+) s .* the ([\d.]+) s left", str(err.value)).groups())
    assert need > left and "0.5 MiB" in str(err.value)
    refuse_slow_read(path, 1.0)  # enough time: no refusal
