"""Snapshot files as `snapshot save` writes them and `plan --snapshot` reads them: every format
round-trips, the streamed layouts are plain JSON and YAML for other tools, and files that leave
the streamed layout (hand-edited, cut short, kubectl's) still load or say exactly what is wrong."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from descheduler import snapshot_file
from descheduler.errors import InputError
from descheduler.snapshot import SNAPSHOT_TIME_ANNOTATION, Snapshot, load_snapshot

NOW = datetime(2026, 1, 15, 12, tzinfo=UTC)
DEMO = Path(__file__).resolve().parent.parent / "descheduler" / "demo" / "snapshot.yaml"


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def pod(name: str, node_name: str, cpu: str = "500m") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


OBJECTS = [node("n1"), node("n2"), pod("a", "n1"), pod("b", "n2", "1"), pod("c", "n1", "250m")]


def saved(path: Path, objects: list[dict[str, Any]] = OBJECTS) -> Path:
    with snapshot_file.writing(path, "2026-01-15T12:00:00Z") as write:
        for obj in objects:
            write(msgspec.json.encode(obj))
    return path


def summary(snapshot: Snapshot) -> tuple[Any, ...]:
    return (snapshot.now, snapshot.nodes, snapshot.pods, snapshot.warnings)


@pytest.mark.parametrize("suffix", snapshot_file.SUFFIXES)
def test_every_format_loads_back_what_was_written(tmp_path: Path, suffix: str) -> None:
    snapshot = load_snapshot(saved(tmp_path / f"cluster{suffix}"))
    assert snapshot.now == NOW
    assert [n.name for n in snapshot.nodes] == ["n1", "n2"]
    assert [(p.name, p.node_name, p.requests["cpu"]) for p in snapshot.pods] == [
        ("a", "n1", 500),
        ("b", "n2", 1000),
        ("c", "n1", 250),
    ]


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_items_longer_than_a_read_and_items_across_reads_load(tmp_path: Path, suffix: str) -> None:
    big = pod("big", "n1")
    big["metadata"]["annotations"] = {"note": "x" * (3 << 20)}  # three of the reader's 1 MiB blocks
    pods = [pod(f"p{i:05d}", "n2") for i in range(3000)]  # ~0.6 MiB: some lines cross a block's end
    snapshot = load_snapshot(saved(tmp_path / f"cluster{suffix}", [node("n1"), node("n2"), *pods, big]))
    assert [p.name for p in snapshot.pods] == ["big", *(p["metadata"]["name"] for p in pods)]  # sorted


def test_a_json_snapshot_is_one_list_with_one_item_per_line(tmp_path: Path) -> None:
    text = saved(tmp_path / "cluster.json").read_text()
    document = json.loads(text)  # plain JSON for any tool
    assert document["kind"] == "List"
    assert document["metadata"]["annotations"][SNAPSHOT_TIME_ANNOTATION] == "2026-01-15T12:00:00Z"
    assert document["items"] == OBJECTS
    lines = text.splitlines()
    assert [json.loads(line.rstrip(",")) for line in lines[1:-1]] == OBJECTS


def test_items_written_in_batches_are_one_per_line_in_the_order_written(tmp_path: Path) -> None:
    # ~2.5 MiB of items: the writer gathers them a megabyte at a time; a pretty-printed one (from
    # a server that indents) is made compact, and the batches join with the same separators.
    pods = [pod(f"p{i:05d}", "n1") for i in range(12_000)]
    texts = [msgspec.json.encode(p) for p in pods]
    texts[5000] = json.dumps(pods[5000], indent=2).encode()
    path = tmp_path / "cluster.json"
    with snapshot_file.writing(path, "2026-01-15T12:00:00Z") as write:
        for text in texts:
            write(text)
    head, *lines, close = path.read_bytes().split(b"\n")[:-1]
    assert head.endswith(b'"items":[') and close == b"]}"
    assert lines == [msgspec.json.encode(p) + b"," for p in pods[:-1]] + [msgspec.json.encode(pods[-1])]


def test_a_yaml_snapshot_is_one_list_document(tmp_path: Path) -> None:
    document = yaml.safe_load(saved(tmp_path / "cluster.yaml").read_text())
    assert document["kind"] == "List"
    assert document["items"] == OBJECTS


def test_a_gzip_snapshot_is_the_same_file_compressed(tmp_path: Path) -> None:
    plain, compressed = saved(tmp_path / "c.json"), saved(tmp_path / "c.json.gz")
    assert gzip.decompress(compressed.read_bytes()) == plain.read_bytes()


def test_an_empty_cluster_is_a_list_without_items(tmp_path: Path) -> None:
    for suffix in (".json", ".yaml"):
        path = saved(tmp_path / f"empty{suffix}", [])
        assert yaml.safe_load(path.read_text())["items"] == []
        assert load_snapshot(path).nodes == ()


def test_the_demo_read_item_by_item_equals_the_demo_read_whole(tmp_path: Path) -> None:
    streamed = list(snapshot_file.documents(DEMO))
    whole = list(snapshot_file.documents(DEMO, whole=True))
    assert streamed == whole
    assert len(whole) > 20


def test_a_kubectl_list_with_items_before_its_kind_reads_item_by_item(tmp_path: Path) -> None:
    document = {"apiVersion": "v1", "items": OBJECTS, "kind": "List", "metadata": {"resourceVersion": ""}}
    path = tmp_path / "kubectl.yaml"
    path.write_text(yaml.safe_dump(document))  # keys sorted, as kubectl's -o yaml has them
    streamed, whole = list(snapshot_file.documents(path)), list(snapshot_file.documents(path, whole=True))
    assert streamed == whole[1:] + whole[:1]  # the List's own metadata comes once its items are read
    assert load_snapshot(path, now=NOW).pods[0].name == "a"


def test_a_yaml_list_that_is_not_one_item_per_block_is_read_whole(tmp_path: Path) -> None:
    # An alias into another item cannot be read one item at a time.
    path = tmp_path / "aliased.yaml"
    path.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n1, labels: &zone {zone: a}}, status: {allocatable: {cpu: '2'}}}\n"
        "- {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: d, labels: *zone}, spec: {nodeName: n1}}\n"
    )
    snapshot = load_snapshot(path, now=NOW)
    assert [(p.name, p.labels) for p in snapshot.pods] == [("p", {"zone": "a"})]


def test_a_hand_edited_json_snapshot_still_loads(tmp_path: Path) -> None:
    path = saved(tmp_path / "cluster.json")
    lines = path.read_text().splitlines()
    # One item pretty-printed over several lines, two others joined on one.
    lines[3] = json.dumps(OBJECTS[2], indent=2) + ","
    lines[4] = lines[4] + " " + lines[5]
    del lines[5]
    path.write_text("\n".join(lines) + "\n")
    assert [p.name for p in load_snapshot(path).pods] == ["a", "b", "c"]


def test_a_json_snapshot_cut_short_names_where_it_ends(tmp_path: Path) -> None:
    path = saved(tmp_path / "cluster.json")
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(InputError) as err:
        load_snapshot(path)
    assert str(err.value).startswith(f"{path}: malformed JSON")


def test_malformed_json_names_the_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "apiVersion": "v1",\n  "kind": "Node",\n  "metadata": {"name": }\n}\n')
    with pytest.raises(InputError, match=r"bad\.json: malformed JSON at line 4, column 24: invalid character"):
        load_snapshot(path)


def test_a_bad_field_in_a_streamed_json_snapshot_names_file_item_object_and_field(tmp_path: Path) -> None:
    path = saved(tmp_path / "cluster.json", [node("n1"), pod("a", "n1"), pod("b", "n1", "12x")])
    with pytest.raises(InputError) as err:
        load_snapshot(path)
    assert str(err.value).startswith(
        f"{path}: item 2 (Pod default/b): spec.containers[0].resources.requests.cpu: '12x' is not a valid quantity"
    )


def test_a_wrong_type_in_a_json_snapshot_names_the_field(tmp_path: Path) -> None:
    bad = pod("a", "n1")
    bad["spec"]["priority"] = "high"
    path = saved(tmp_path / "cluster.json", [node("n1"), bad])
    with pytest.raises(
        InputError, match=r"item 1 \(Pod default/a\): spec\.priority: Expected `int \| null`, got `str`"
    ):
        load_snapshot(path)


def test_a_json_item_that_is_not_an_object_is_named(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    path.write_text('{"apiVersion": "v1", "kind": "List", "items": [[1, 2]]}')
    with pytest.raises(InputError, match=r"odd\.json: item 0: expected a Kubernetes object, got list"):
        load_snapshot(path)


def test_a_snapshot_gzipped_by_zlib_loads_as_the_one_written(tmp_path: Path) -> None:
    """Files older versions wrote (Python's gzip) and any other gzip tool's read as before."""
    plain = saved(tmp_path / "c.json")
    other = tmp_path / "other.json.gz"
    other.write_bytes(gzip.compress(plain.read_bytes(), compresslevel=9))
    assert summary(load_snapshot(other)) == summary(load_snapshot(saved(tmp_path / "c.json.gz")))


def test_a_gzip_file_with_corrupt_data_is_named(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json.gz"
    compressed = gzip.compress(saved(tmp_path / "c.json").read_bytes())
    path.write_bytes(compressed[:20] + bytes(len(compressed) - 28) + compressed[-8:])
    with pytest.raises(InputError, match=r"cluster\.json\.gz: not a readable gzip file"):
        load_snapshot(path)


def test_a_file_named_gz_that_is_not_gzip_is_named(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json.gz"
    path.write_text("{}")
    with pytest.raises(InputError, match=r"cluster\.json\.gz: not a readable gzip file"):
        load_snapshot(path)


def test_a_directory_reads_compressed_snapshots_too(tmp_path: Path) -> None:
    saved(tmp_path / "a.json.gz", [node("n1"), pod("a", "n1")])
    saved(tmp_path / "b.yaml.gz", [node("n2"), pod("b", "n2")])
    snapshot = load_snapshot(tmp_path)
    assert [p.name for p in snapshot.pods] == ["a", "b"]


def test_a_failed_write_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    with pytest.raises(RuntimeError), snapshot_file.writing(path, "2026-01-15T12:00:00Z") as write:
        write(msgspec.json.encode(node("n1")))
        raise RuntimeError("the cluster went away")
    assert list(tmp_path.iterdir()) == []
