"""Node names to table rows in bulk (`names.NameIndex`), and the extender's answers through it.

The fast path reads compact JSON arrays of known names; everything else must fall back to the
ordinary decode (None), never map a name to a wrong row.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descheduler.extender import Extender, SnapshotFileSource, kernels, protocol
from descheduler.extender.decisions import FilterDecision
from descheduler.extender.names import NameIndex
from descheduler.extender.state import ClusterState
from tests.builders import loaded_node, node

from .conftest import extender_args, kube_pod, scheduling_args, write_snapshot

TABLE = ["a", "ab", "node-1", "node-10", "eight-ch", "nine-char", "n" * 16, "n" * 17, "ü-node", "x" * 63]


def compact(names: list[str]) -> bytes:
    return msgspec.json.encode(names)


def rows_of(names: list[str], table: list[str] = TABLE) -> list[int]:
    return [table.index(n) for n in names]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(TABLE), max_size=40))
def test_known_names_map_to_their_rows_in_request_order_duplicates_included(names: list[str]) -> None:
    located = NameIndex(TABLE).locate(compact(names))
    assert located is not None
    assert located.rows.tolist() == rows_of(names)


def test_an_empty_list_maps_to_no_rows() -> None:
    located = NameIndex(TABLE).locate(b"[]")
    assert located is not None and located.rows.size == 0


@pytest.mark.parametrize(
    "raw",
    [
        b'["a","ghost"]',  # a name the table lacks
        b'["a","a "]',  # a known name plus a space
        b'["nod"]',  # a prefix of a known name
        b'["n"]',
        b'["' + b"n" * 18 + b'"]',  # longer than any known name
        b'["a",""]',  # an empty name: the ordinary decode refuses it
        b'["a", "ab"]',  # whitespace between names
        b' ["a"]',
        b'["a","\\u0061"]',  # an escape
        b'["a",1,"ab"]',  # not a string
        b'["a",["ab"]]',
        b'["a",{"ab":"a"}]',
        b'["a","ab"',  # cut short (cannot reach here: the envelope is valid JSON)
        b"null",
    ],
)
def test_anything_but_a_compact_array_of_known_names_is_left_to_the_slow_path(raw: bytes) -> None:
    assert NameIndex(TABLE).locate(raw) is None


def test_a_name_json_writes_with_escapes_is_found_only_by_the_slow_path() -> None:
    table = ["plain", "comma,name", 'quo"te', "back\\slash"]
    index = NameIndex(table)
    assert index.locate(compact(["plain", "comma,name"])) is not None
    for name in table[2:]:
        assert index.locate(compact(["plain", name])) is None


@pytest.mark.parametrize(
    "names",
    [
        ["abc", "c", ",d"],  # "c" read as long as "abc" would be `c","`: a guess that misses
        ["abc", "a", "]"],  # and `a","` before the closing bracket
        ["abc", "abc", "c", "c", ",d", "abc"],
    ],
)
def test_a_name_taken_as_long_as_the_one_before_but_shorter_is_still_found(names: list[str]) -> None:
    table = sorted(set(names))
    located = NameIndex(table).locate(compact(names))
    assert located is not None
    assert located.rows.tolist() == rows_of(names, table)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["ab", "abc", "b", ",b", "]", ",", "b,", "c", "a,b"]), min_size=1, max_size=12))
def test_names_of_any_lengths_and_commas_map_to_their_rows(names: list[str]) -> None:
    table = ["ab", "abc", "b", ",b", "]", ",", "b,", "c", "a,b"]
    located = NameIndex(table).locate(compact(names))
    assert located is not None
    assert located.rows.tolist() == rows_of(names, table)


def test_no_table_no_fast_path() -> None:
    assert NameIndex([]).locate(b'["a"]') is None


@pytest.fixture(scope="module")
def table_state(tmp_path_factory: pytest.TempPathFactory) -> ClusterState:
    path = write_snapshot(tmp_path_factory.mktemp("names") / "s.yaml", [node(name) for name in TABLE])
    extender = Extender(SnapshotFileSource(path), scheduling_args())
    assert extender.refresh(force=True) and extender.state is not None
    return extender.state


REASON_TEXTS = ["Insufficient cpu", 'node(s) had untolerated taint {"k": "v"}', "load ≥ 70 percent", "a\\b\n", ""]


@settings(max_examples=200, deadline=None)
@given(
    st.permutations(TABLE).flatmap(
        lambda names: st.tuples(
            st.just(names[: len(names) // 2 + 1]),
            st.lists(st.integers(-1, len(REASON_TEXTS) - 1), min_size=len(TABLE), max_size=len(TABLE)),
            st.lists(st.booleans(), min_size=len(REASON_TEXTS), max_size=len(REASON_TEXTS)),
        )
    )
)
def test_a_filter_answer_is_written_as_json_would_write_it(
    table_state: ClusterState, case: tuple[list[str], list[int], list[bool]]
) -> None:
    """The names that passed are the request's own bytes less the failed ones; each failed name sits
    in the map its reason's resolvability says, in request order."""
    names, reasons, hopeless = case
    reason = np.array(reasons[: len(names)], dtype=np.int64)
    raw = compact(names)
    located = table_state.names.locate(raw)
    assert located is not None
    decision = FilterDecision(reason, REASON_TEXTS, [], hopeless)
    texts = kernels.Pieces.of([msgspec.json.encode(text) for text in REASON_TEXTS])
    answer, passed, kept = table_state.filter_answer(located.spans, located.rows, decision, texts)
    failed = [(n, r) for n, r in zip(names, reason.tolist(), strict=True) if r >= 0]
    expected = {
        "Nodes": None,
        "NodeNames": [n for n, r in zip(names, reason.tolist(), strict=True) if r < 0],
        "FailedNodes": {n: REASON_TEXTS[r] for n, r in failed if not hopeless[r]},
        "FailedAndUnresolvableNodes": {n: REASON_TEXTS[r] for n, r in failed if hopeless[r]},
        "Error": "",
    }
    assert answer == msgspec.json.encode(expected)
    assert passed == msgspec.json.encode(expected["NodeNames"])
    # The names that passed, as candidates: their rows, and spans pointing at them in the bytes written
    # (a word's low byte is its first).
    assert kept.rows.tolist() == located.rows[reason < 0].tolist() and kept.spans is not None
    cuts = zip(kept.spans.starts, kept.spans.ends, strict=True)
    written = [(kept.spans.words[a:b] & 0xFF).astype(np.uint8).tobytes() for a, b in cuts]
    assert [w.decode() for w in written] == expected["NodeNames"]


def test_a_filter_answer_refuses_a_buffer_too_short_to_hold_it() -> None:
    kernels.load()
    literals, texts = kernels.Pieces.of([b"{", b"", b"", b"}"]), kernels.Pieces.of([b'"no"'])
    raw = b'["ab"]'
    buffer = np.zeros(16, dtype=np.uint8)  # the answer takes 13 bytes, and 8 more that a kernel may write past it
    starts, ends, zero = np.array([2]), np.array([4]), np.zeros(1, dtype=np.int64)
    kept = np.zeros(3, dtype=np.int64)
    written = kernels.filter_answer(
        kernels.words_of(buffer),
        buffer,
        literals.words,
        literals.offsets,
        kernels.words_view(raw),
        starts,
        ends,
        zero - 1,
        texts.words,
        texts.offsets,
        np.zeros(1, dtype=np.bool_),
        zero,
        kept,
    )
    assert written == (-1, 0, 0, 0)
    assert not buffer.any() and not kept.any()


# --- the extender's answers through the fast path and the slow one ------------------------------


def cluster() -> list[dict[str, object]]:
    # cool-*: 1 cpu used of 8; hot-*: 5 of 8, refused by the load filter; full: 1.5 of 2 cpu requested.
    return [
        *[o for i in range(6) for o in loaded_node(f"cool-{i}", [(f"c{i}", "1")])],
        *[o for i in range(3) for o in loaded_node(f"hot-{i}", [(f"h{i}", "5")])],
        node("cordoned", unschedulable=True),
    ]


@pytest.fixture
def extender(tmp_path: Path) -> Extender:
    path = write_snapshot(tmp_path / "snapshot.yaml", cluster())
    extender = Extender(SnapshotFileSource(path), scheduling_args())
    assert extender.refresh(force=True)
    return extender


NAMES = [*(f"cool-{i}" for i in range(6)), *(f"hot-{i}" for i in range(3)), "cordoned"]


def spaced(body: bytes) -> bytes:
    """The same ExtenderArgs with spaces after separators: valid JSON the fast path does not take."""
    return json.dumps(json.loads(body)).encode()


@pytest.mark.parametrize(
    "names",
    [
        NAMES,
        list(reversed(NAMES)),
        ["hot-0", "cool-3", "hot-0", "cool-3"],  # duplicates
        ["cool-1", "ghost", "hot-2"],  # a name the table lacks
        ["hot-0", "hot-1"],  # nothing passes
        [],
    ],
)
def test_filter_and_prioritize_answer_the_same_whichever_path_maps_the_names(
    extender: Extender, names: list[str]
) -> None:
    pod = kube_pod("web-new")
    fast = extender.filter(extender_args(pod, names))
    slow = extender.filter(spaced(extender_args(pod, names)))
    assert json.loads(fast) == json.loads(slow)
    passed = json.loads(fast)["NodeNames"]
    assert json.loads(extender.prioritize(extender_args(pod, passed))) == json.loads(
        extender.prioritize(spaced(extender_args(pod, passed)))
    )


TRICKY = ['","Nodes":null,"NodeNames":["cool-0"]}', ',"Nodes":null,"NodeNames":[', '"]}', "]}", "\\", 'a"b', "cool-1"]


@settings(max_examples=300, deadline=None)
@given(
    annotation=st.sampled_from(TRICKY),
    names=st.lists(st.sampled_from([*TRICKY, *NAMES]), max_size=4),
    extra=st.sampled_from([None, "before", "after", "nodes", "twice"]),
)
def test_a_body_cut_by_position_is_taken_only_when_it_reads_as_the_decoded_one(
    annotation: str, names: list[str], extra: str | None
) -> None:
    """Whatever the pod's strings and the names hold, a split whose parts decode (the pod as one
    object, the names as an array of strings) is the split the full decode makes."""
    pod = kube_pod("web-new")
    pod["metadata"]["annotations"] = {"note": annotation}
    body = extender_args(pod, names)
    if extra == "before":
        body = body.replace(b',"Nodes":null', b',"X":' + json.dumps(annotation).encode() + b',"Nodes":null', 1)
    elif extra == "after":
        body = body[:-1] + b',"X":' + json.dumps(names).encode() + b"}"
    elif extra == "nodes":
        body = body.replace(b'"Nodes":null', b'"Nodes":{"items":[]}', 1)
    elif extra == "twice":
        body = body.replace(b'{"Pod":', b'{"Pod":{},"Pod":', 1)
    split = protocol.split_envelope(body)
    if split is None:
        return
    try:
        assert isinstance(msgspec.json.decode(split[0]), dict)
        msgspec.json.decode(split[1], type=list[str])
    except (msgspec.DecodeError, AssertionError):
        return  # the caller decodes the body in full
    pod_raw, _, names_raw = protocol.decode_envelope(body)
    assert (split[0], split[1]) == (pod_raw, names_raw)


def test_a_pod_whose_strings_look_like_the_envelope_is_answered_as_any_other(extender: Extender) -> None:
    for annotation in TRICKY:
        pod = kube_pod("web-new")
        pod["metadata"]["annotations"] = {"note": annotation}
        names = ["hot-1", "cool-4", "cordoned", "cool-0"]
        assert json.loads(extender.filter(extender_args(pod, names))) == json.loads(
            extender.filter(spaced(extender_args(pod, names)))
        )


def test_the_filters_answer_keeps_the_request_order_and_drops_the_refused(extender: Extender) -> None:
    answer = json.loads(extender.filter(extender_args(kube_pod("web-new"), ["hot-1", "cool-4", "cordoned", "cool-0"])))
    # cordoned passes: kube-scheduler's own filters judge a node's cordon (scheduling-core.md §2).
    assert answer["NodeNames"] == ["cool-4", "cordoned", "cool-0"]
    assert set(answer["FailedAndUnresolvableNodes"]) == {"hot-1"}


def test_a_node_list_that_changes_between_requests_is_mapped_afresh(extender: Extender) -> None:
    pod = kube_pod("web-new")
    first = json.loads(extender.prioritize(extender_args(pod, ["cool-0", "cool-1"])))
    second = json.loads(extender.prioritize(extender_args(pod, ["cool-2", "hot-0", "cool-0"])))
    assert [h["Host"] for h in first] == ["cool-0", "cool-1"]
    assert [h["Host"] for h in second] == ["cool-2", "hot-0", "cool-0"]


def test_prioritize_after_a_state_swap_scores_the_filters_answer_on_the_new_state(extender: Extender) -> None:
    pod = kube_pod("web-new")
    passed = json.loads(extender.filter(extender_args(pod, NAMES)))["NodeNames"]
    before = extender.state
    assert before is not None
    assert extender.refresh(force=True)
    assert extender.state is not before
    assert extender.state is not None and extender.state.names is before.names  # same nodes: index kept
    scores = json.loads(extender.prioritize(extender_args(pod, passed)))
    assert [h["Host"] for h in scores] == passed
    assert scores == json.loads(extender.prioritize(spaced(extender_args(pod, passed))))


# --- replacing the state while requests run -------------------------------------------------------


def test_a_refresh_swaps_the_state_while_a_request_is_deciding_on_the_old_one(extender: Extender) -> None:
    old = extender.state
    assert old is not None
    with old.lock:  # a request in the middle of its decision
        swapper = threading.Thread(target=extender.refresh, kwargs={"force": True})
        swapper.start()
        swapper.join(30)
        assert not swapper.is_alive()
        assert extender.state is not old
    # The request goes on answering from the state it started with; the next one gets the new state.
    assert json.loads(extender.filter(extender_args(kube_pod("web-new"), ["cool-0", "hot-0"])))["NodeNames"] == [
        "cool-0"
    ]


def test_answers_stay_the_same_while_the_state_is_replaced_over_and_over(extender: Extender) -> None:
    pod = kube_pod("web-new")
    expected_filter = extender.filter(extender_args(pod, NAMES))
    passed = json.loads(expected_filter)["NodeNames"]
    expected_scores = extender.prioritize(extender_args(pod, passed))
    stop = threading.Event()

    def refresh_forever() -> None:
        while not stop.is_set():
            extender.refresh(force=True)

    swapper = threading.Thread(target=refresh_forever)
    swapper.start()
    # Requests back to back until the state has been replaced under them: a rebuild steps aside
    # while requests are answered (RequestsFirst) but keeps a share of the time, so swaps keep
    # coming; none within the deadline means requests starve the rebuild. Two swaps, not more:
    # this fixture's rebuild reads a snapshot file, and that read alone took 1.5-15 s under
    # back-to-back requests on the two-core machine (24 ms when idle), with or without the hook's
    # hand-overs; the cluster source the extender runs on is not read that way.
    deadline = time.monotonic() + 60
    swaps = set()
    try:
        while len(swaps) < 3 and time.monotonic() < deadline:
            swaps.add(extender.state.taken_at if extender.state is not None else None)
            assert extender.filter(extender_args(pod, NAMES)) == expected_filter
            assert extender.prioritize(extender_args(pod, passed)) == expected_scores
    finally:
        stop.set()
        swapper.join(30)
    assert len(swaps) >= 3, f"only {len(swaps)} state(s) seen in 60 s of back-to-back requests"


def test_a_node_added_by_the_next_state_is_found_by_name(extender: Extender, tmp_path: Path) -> None:
    pod = kube_pod("web-new")
    assert json.loads(extender.filter(extender_args(pod, ["cool-0", "new-node"])))["NodeNames"] == [
        "cool-0",
        "new-node",  # unknown names pass
    ]
    write_snapshot(tmp_path / "snapshot.yaml", [*cluster(), *loaded_node("new-node", [("n1", "6")])])
    assert extender.refresh(force=True)
    answer = json.loads(extender.filter(extender_args(pod, ["cool-0", "new-node"])))
    assert answer["NodeNames"] == ["cool-0"]  # now known, and too hot
    assert set(answer["FailedAndUnresolvableNodes"]) == {"new-node"}


# --- random tables: the bulk mapping equals a dict's, or leaves the request to the slow path ------

_NAME = st.text(alphabet="ab-.0ü", min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(_NAME, min_size=1, max_size=30, unique=True), st.data())
def test_the_bulk_mapping_equals_a_dict_lookup_and_never_maps_an_unknown_name(
    table: list[str], data: st.DataObject
) -> None:
    """Names that share prefixes, suffixes and last words, of every length around the 8-byte words."""
    index = NameIndex(table)
    others = st.one_of(_NAME, st.sampled_from([n + "a" for n in table] + [n[:-1] for n in table if len(n) > 1]))
    names = data.draw(st.lists(st.one_of(st.sampled_from(table), others), max_size=40))
    located = index.locate(compact(names))
    rows = {name: row for row, name in enumerate(table)}
    if all(name in rows for name in names):
        assert located is not None
        assert located.rows.tolist() == [rows[n] for n in names]
    else:
        assert located is None


def test_names_that_share_length_and_ends_with_a_remembered_answer_are_not_taken_for_it(extender: Extender) -> None:
    """The remembered answers are keyed by length and ends; the middle is compared before one is used."""
    pod = kube_pod("web-new")
    first = ["cool-0"] * 8 + ["cool-1", "cool-2"] + ["cool-0"] * 8
    second = ["cool-0"] * 8 + ["cool-2", "cool-1"] + ["cool-0"] * 8
    assert len(compact(first)) == len(compact(second)) > 128
    assert json.loads(extender.filter(extender_args(pod, first)))["NodeNames"] == first  # remembered
    scores = json.loads(extender.prioritize(extender_args(pod, second)))
    assert [h["Host"] for h in scores] == second


@pytest.mark.parametrize("pattern", ["node-{:05d}", "ip-10-0-{}-7.ec2.internal", "{}", "gke-pool-a-{:08x}"])
def test_numbered_names_spread_over_the_table_without_growing_it(pattern: str) -> None:
    """Names that differ in a few bytes must not crowd into the same slots: the table stays a quarter full."""
    names = [pattern.format(i) for i in range(5000)]
    index = NameIndex(names)
    assert index.slots.size <= 4 * 8192
    raw = compact(names[::-1])
    located = index.locate(raw)
    assert located is not None and located.rows.tolist() == list(range(4999, -1, -1))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(TABLE) - 1), st.integers(0, 10)), max_size=30))
def test_a_host_priority_list_is_written_as_json_would_write_it(pairs: list[tuple[int, int]]) -> None:
    kernels.load()
    names = [TABLE[row] for row, _ in pairs]
    located = NameIndex(TABLE).locate(compact(names))
    assert located is not None
    spans, scores = located.spans, np.array([score for _, score in pairs], dtype=np.int64)
    buffer, out = kernels.output(len(compact(names)) + 23 * len(pairs) + 2)
    size = kernels.host_priorities(spans.words, spans.starts, spans.ends, scores, out)
    expected = [{"Host": name, "Score": score} for name, (_, score) in zip(names, pairs, strict=True)]
    assert buffer[:size].tobytes() == msgspec.json.encode(expected)


@pytest.mark.parametrize("score", [-1, 11])
def test_a_host_priority_list_refuses_a_score_outside_0_to_10(score: int) -> None:
    located = NameIndex(TABLE).locate(compact(["a"]))
    assert located is not None
    spans = located.spans
    _, out = kernels.output(64)
    assert kernels.host_priorities(spans.words, spans.starts, spans.ends, np.array([score]), out) == -1


def test_a_host_priority_list_refuses_a_buffer_too_short_to_hold_it() -> None:
    located = NameIndex(TABLE).locate(compact(["nine-char", "a"]))
    assert located is not None
    spans = located.spans
    buffer = np.zeros(40 + kernels.PADDING, dtype=np.uint8)
    scores = np.array([1, 2])
    assert kernels.host_priorities(spans.words, spans.starts, spans.ends, scores, kernels.words_of(buffer)) == -1
    assert not buffer[40:].any()
