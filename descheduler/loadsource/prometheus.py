"""Prometheus: node and pod cpu/memory from the HTTP API's instant queries (`/api/v1/query`).

The four PromQL queries come from the policy (`loadSource.queries`); `$window` in them becomes
the source's window. With `percentile` set, each query is wrapped as
`quantile_over_time(p, (query)[window:])`, so a node's load is its p-th percentile over the
window rather than its current value. Queries are evaluated at the cycle's `now`; a sample's
timestamp is that evaluation time (Prometheus drops series with no sample in its lookback window,
5 minutes by default, so a node that stopped reporting is missing, not stale).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import msgspec
import urllib3

from descheduler.loadsource.reading import LoadReading, LoadSourceError
from descheduler.model import NodeUsage, PodUsage
from descheduler.policy import PrometheusSource
from descheduler.resources import Resources
from descheduler.timestamps import format_time

SOURCE = "prometheus"


class _Sample(msgspec.Struct, kw_only=True):
    metric: dict[str, str] = {}
    value: tuple[float, str]


class _Data(msgspec.Struct, rename="camel", kw_only=True):
    result_type: str
    result: msgspec.Raw


class _Response(msgspec.Struct, rename="camel", kw_only=True):
    status: str
    data: _Data | None = None
    error_type: str = ""
    error: str = ""


_RESPONSE = msgspec.json.Decoder(_Response)
_VECTOR = msgspec.json.Decoder(list[_Sample])


def promql_duration(window: timedelta) -> str:
    """A Prometheus duration for a window: 5m, 1h, 90s."""
    seconds = max(1, int(window.total_seconds()))
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def timeout_parameter(seconds: float) -> str:
    """The query API's `timeout`: Prometheus takes float seconds or a whole-unit duration (3s,
    1500ms), not "1.5s", which it refuses as bad_data; whole milliseconds, at least one."""
    millis = max(1, math.ceil(round(seconds * 1000, 6)))
    return f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis}ms"


def expression(query: str, config: PrometheusSource) -> str:
    """The PromQL actually sent: `$window` substituted, wrapped in quantile_over_time when asked."""
    window = promql_duration(config.window)
    text = query.replace("$window", window)
    if config.percentile is not None:
        text = f"quantile_over_time({config.percentile:g}, ({text})[{window}:])"
    return text


class PrometheusReader:
    """Reads usage from a Prometheus server's query API."""

    source = SOURCE

    def __init__(self, config: PrometheusSource, *, pool: urllib3.PoolManager | None = None) -> None:
        self.config = config
        self.timeout = config.timeout.total_seconds()
        retries = urllib3.Retry(
            total=2,
            backoff_factor=0.3,
            status_forcelist=(502, 503, 504),
            allowed_methods=None,  # a query is read-only, so resending the POST is safe
            raise_on_status=False,
        )
        self._pool = pool or urllib3.PoolManager(retries=retries, maxsize=4)
        self._url = config.address.rstrip("/") + "/api/v1/query"

    def read(self, now: datetime, *, keep_objects: bool = False, usage: bool = True) -> LoadReading:
        headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
        token = self._token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        queries = self.config.queries
        warnings: list[str] = []
        by_node = (self.config.node_label,)
        by_pod = ("namespace", "pod")
        node_cpu_values = self._values("nodeCpu", queries.node_cpu, by_node, now, headers, warnings)
        node_memory_values = self._values("nodeMemory", queries.node_memory, by_node, now, headers, warnings)
        pod_cpu_values = self._values("podCpu", queries.pod_cpu, by_pod, now, headers, warnings)
        pod_memory_values = self._values("podMemory", queries.pod_memory, by_pod, now, headers, warnings)
        window = int(self.config.window.total_seconds())
        node_usage: dict[str, NodeUsage] = {}
        for (name,), (stamp, cpu, memory) in _pairs("node", node_cpu_values, node_memory_values, warnings).items():
            node_usage[name] = NodeUsage(
                node=name,
                timestamp=stamp,
                usage=Resources({"cpu": cpu, "memory": memory}),
                source=SOURCE,
                window_seconds=window,
            )
        pod_usage: dict[str, PodUsage] = {}
        pods = _pairs("pod", pod_cpu_values, pod_memory_values, warnings)
        for (namespace, pod), (stamp, cpu, memory) in pods.items():
            record = PodUsage(
                namespace=namespace,
                name=pod,
                timestamp=stamp,
                usage=Resources({"cpu": cpu, "memory": memory}),
                source=SOURCE,
            )
            pod_usage[record.key] = record
        objects = _as_metrics_objects(node_usage, pod_usage, window) if keep_objects else ()
        return LoadReading(
            source=SOURCE,
            read_at=now,
            node_usage=node_usage,
            pod_usage=pod_usage,
            warnings=tuple(warnings),
            objects=objects,
        )

    def _token(self) -> str:
        path = self.config.bearer_token_file
        if path is None:
            return ""
        # Read on every call: projected service-account tokens are rotated on disk.
        try:
            return Path(path).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise LoadSourceError(f"prometheus: cannot read bearerTokenFile {path}: {error}") from None

    def _values(
        self,
        name: str,
        query: str,
        labels: tuple[str, ...],
        now: datetime,
        headers: Mapping[str, str],
        warnings: list[str],
    ) -> dict[tuple[str, ...], tuple[datetime, float]]:
        samples = self._query(name, query, now, headers)
        try:
            return _by_labels(name, samples, labels, warnings)
        except LoadSourceError as error:
            where = f"prometheus {self.config.address}: query {name}"
            raise LoadSourceError(f"{where} {error}; the query: {expression(query, self.config)}") from None

    def _query(self, name: str, query: str, now: datetime, headers: Mapping[str, str]) -> list[_Sample]:
        text = expression(query, self.config)
        body = urlencode({"query": text, "time": f"{now.timestamp():.3f}", "timeout": timeout_parameter(self.timeout)})
        where = f"prometheus {self.config.address}: query {name}"
        about = f"; the query: {text}"
        try:
            response = self._pool.request(
                "POST", self._url, body=body, headers=dict(headers), timeout=urllib3.Timeout(total=self.timeout)
            )
        except urllib3.exceptions.HTTPError as error:
            if _timed_out(error):
                raise LoadSourceError(
                    f"{where}: no answer within the {self.timeout:g}s timeout (3 tries){about}"
                ) from None
            raise LoadSourceError(f"{where}: cannot reach the server: {_reason(error)}") from None
        try:
            answer = _RESPONSE.decode(response.data)
        except msgspec.DecodeError:
            snippet = response.data[:120].decode("utf-8", "replace").strip()
            raise LoadSourceError(
                f"{where}: HTTP {response.status}, not a Prometheus API answer: {snippet!r}{about}"
            ) from None
        if answer.status != "success" or answer.data is None:
            kind = f"{answer.error_type}: " if answer.error_type else ""
            raise LoadSourceError(f"{where} failed (HTTP {response.status}): {kind}{answer.error or 'no data'}{about}")
        if answer.data.result_type != "vector":
            raise LoadSourceError(
                f"{where} returned a {answer.data.result_type}, not an instant vector; "
                f"the query must give one series per node or pod: {text}"
            )
        try:
            return _VECTOR.decode(answer.data.result)
        except msgspec.DecodeError as error:
            raise LoadSourceError(f"{where}: malformed vector: {error}{about}") from None

    def close(self) -> None:
        self._pool.clear()


def _timed_out(error: urllib3.exceptions.HTTPError) -> bool:
    reason = getattr(error, "reason", None) or error
    # NewConnectionError (refused, unresolvable) subclasses ConnectTimeoutError, but did not time out.
    refused = isinstance(reason, urllib3.exceptions.NewConnectionError)
    return isinstance(reason, urllib3.exceptions.TimeoutError) and not refused


def _reason(error: urllib3.exceptions.HTTPError) -> str:
    reason = getattr(error, "reason", None)
    return str(reason or error)


def _by_labels(
    name: str, samples: list[_Sample], labels: tuple[str, ...], warnings: list[str]
) -> dict[tuple[str, ...], tuple[datetime, float]]:
    """Series by the values of `labels`; series without them or with a non-finite or negative value
    are left out with one warning per query. Two series for the same key are an error."""
    out: dict[tuple[str, ...], tuple[datetime, float]] = {}
    unlabelled = 0
    bad: list[str] = []
    for sample in samples:
        key = tuple(sample.metric.get(label, "") for label in labels)
        if not all(key):
            unlabelled += 1
            continue
        stamp, text = sample.value
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            bad.append(f"{'/'.join(key)}={text}")
            continue
        if key in out:
            raise LoadSourceError(
                f"returned two series for {'/'.join(key)}: "
                f"aggregate it by {', '.join(labels)} (e.g. sum by ({', '.join(labels)}) (...))"
            )
        out[key] = (datetime.fromtimestamp(stamp, UTC), value)
    if unlabelled:
        warnings.append(f"prometheus: query {name}: {unlabelled} series without label(s) {', '.join(labels)}, ignored")
    if bad:
        warnings.append(f"prometheus: query {name}: {len(bad)} series with an unusable value, ignored (e.g. {bad[0]})")
    return out


def _pairs(
    what: str,
    cpu: dict[tuple[str, ...], tuple[datetime, float]],
    memory: dict[tuple[str, ...], tuple[datetime, float]],
    warnings: list[str],
) -> dict[tuple[str, ...], tuple[datetime, int, int]]:
    """Keys with both cpu (cores → millicores) and memory (bytes); a half-reported one is left out."""
    out = {}
    for key in cpu.keys() & memory.keys():
        cpu_stamp, cores = cpu[key]
        memory_stamp, used = memory[key]
        out[key] = (min(cpu_stamp, memory_stamp), math.ceil(round(cores * 1000, 6)), math.ceil(round(used, 3)))
    half = sorted(cpu.keys() ^ memory.keys())
    if half:
        example = "/".join(half[0])
        warnings.append(
            f"prometheus: {len(half)} {what}(s) reported cpu or memory but not both, left out (e.g. {example})"
        )
    return dict(sorted(out.items()))


def _as_metrics_objects(
    nodes: Mapping[str, NodeUsage], pods: Mapping[str, PodUsage], window: int
) -> tuple[msgspec.Raw, ...]:
    """metrics.k8s.io objects carrying the same usage, so a saved snapshot replays this reading."""
    out: list[dict[str, Any]] = []
    for usage in nodes.values():
        out.append(
            {
                "apiVersion": "metrics.k8s.io/v1beta1",
                "kind": "NodeMetrics",
                "metadata": {"name": usage.node},
                "timestamp": format_time(usage.timestamp),
                "window": f"{window}s",
                "usage": _exact(usage.usage),
            }
        )
    for pod in pods.values():
        out.append(
            {
                "apiVersion": "metrics.k8s.io/v1beta1",
                "kind": "PodMetrics",
                "metadata": {"name": pod.name, "namespace": pod.namespace},
                "timestamp": format_time(pod.timestamp),
                "window": f"{window}s",
                "containers": [{"name": "total", "usage": _exact(pod.usage)}],
            }
        )
    return tuple(msgspec.Raw(msgspec.json.encode(obj)) for obj in out)


def _exact(usage: Resources) -> dict[str, str]:
    """Quantities that parse back to exactly these units (cpu in millicores, the rest as plain numbers)."""
    return {name: f"{units}m" if name == "cpu" else str(units) for name, units in sorted(usage.items())}
