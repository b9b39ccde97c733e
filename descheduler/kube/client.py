"""The Kubernetes API client: the official client for config, auth and transport, with our request path.

Every request — ours (`KubeClient.request`, `get_json`, `stream`) and the generated APIs'
(`kubernetes.client.CoreV1Api(kube.api_client)` …) — goes through one path that

- waits for the client-side token bucket (QPS/burst),
- honours 429 Too Many Requests with its Retry-After (except on pods/eviction, whose 429 means a
  PodDisruptionBudget said no: the caller decides what to do about that),
- retries 5xx and connection errors with capped exponential backoff and jitter — reads always;
  writes only when the server said Retry-After or the connection was never made (client-go's rule,
  because a write that failed mid-flight may have been applied),
- counts every attempt in `descheduler_api_requests_total{verb, code}`.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import msgspec
import structlog
import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from descheduler import __version__, metrics
from descheduler.errors import ClusterUnreachableError, InputError, NoClusterConfigError
from descheduler.kube.ratelimit import Cancelled, TokenBucket

log = structlog.get_logger(__name__)

USER_AGENT = f"descheduler/{__version__}"
_RETRYABLE_STATUS = frozenset({500, 502, 503, 504})
_SAFE_METHODS = frozenset({"GET", "HEAD"})
# The connection was never made, so the request cannot have reached the server: safe to resend any verb.
_NOT_SENT = (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry; delays grow base·2ⁿ up to cap, jittered down by up to half."""

    max_retries: int = 5
    backoff_base: float = 0.25
    backoff_cap: float = 10.0
    max_retry_after: float = 60.0

    def backoff(self, attempt: int) -> float:
        return min(self.backoff_cap, self.backoff_base * float(2**attempt)) * random.uniform(0.5, 1.0)


class KubeApiError(Exception):
    """The API server answered with an error Status (after any retries)."""

    def __init__(self, method: str, path: str, status: int, body: bytes) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.body = body
        self.reason = ""
        self.message = ""
        self.details: dict[str, Any] = {}
        try:
            decoded = msgspec.json.decode(body) if body else None
        except msgspec.DecodeError:
            decoded = None
        if isinstance(decoded, dict) and decoded.get("kind") == "Status":
            self.reason = str(decoded.get("reason") or "")
            self.message = str(decoded.get("message") or "")
            details = decoded.get("details")
            self.details = details if isinstance(details, dict) else {}
        else:
            self.message = body[:200].decode("utf-8", "replace").strip()
        super().__init__(str(self))

    def __str__(self) -> str:
        what = f"{self.method} {self.path}: {self.status} {self.reason}".strip()
        return f"{what}: {self.message}" if self.message else what


def kube_verb(method: str, url: str) -> str:
    """The Kubernetes verb of a request (get, list, watch, create, update, patch, delete, deletecollection)."""
    method = method.upper()
    parts = urlsplit(url)
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    named = _names_an_object(parts.path)
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    if method in _SAFE_METHODS:
        if named:
            return "get"
        query = parts.query
        return "watch" if "watch=true" in query or "watch=1" in query or "watch=True" in query else "list"
    return method.lower()


def _names_an_object(path: str) -> bool:
    segments = [s for s in path.split("/") if s]
    if not segments or segments[0] not in ("api", "apis"):
        return True  # /version, /healthz: not a collection
    rest = segments[2:] if segments[0] == "api" else segments[3:]
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    return len(rest) >= 2


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP-date: rare from the API server; fall back to our own backoff


class _LimitedApiClient(k8s.ApiClient):
    """The official ApiClient whose every HTTP call goes through `KubeClient._send`."""

    def __init__(self, configuration: Any, owner: KubeClient) -> None:
        super().__init__(configuration)
        self._owner = owner
        self.user_agent = USER_AGENT

    def call_api(
        self,
        method: str,
        url: str,
        header_params: Any = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        if _request_timeout is None and kube_verb(method, url) != "watch":
            _request_timeout = self._owner.timeout

        def attempt() -> Any:
            return super(_LimitedApiClient, self).call_api(
                method, url, header_params, body, post_params, _request_timeout=_request_timeout
            )

        return self._owner._send(method, url, attempt, None)


class KubeClient:
    """A rate-limited, retrying Kubernetes client. Build with `connect` (or `from_configuration`).

    `api_client` is a `kubernetes.client.ApiClient` for the generated APIs (writes, events, leases);
    `request`/`get_json`/`stream` are the raw-JSON read path the cache and load readers use.
    """

    def __init__(
        self,
        configuration: Any,
        *,
        qps: float = 50.0,
        burst: int = 100,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        # Our retry loop owns retries: urllib3 must raise connection errors at once, not retry them silently.
        configuration.retries = False
        configuration.connection_pool_maxsize = max(getattr(configuration, "connection_pool_maxsize", 0) or 0, 32)
        self.configuration = configuration
        self.host: str = str(configuration.host)
        self.limiter = TokenBucket(qps, burst)
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._closed = threading.Event()
        self.api_client: Any = _LimitedApiClient(configuration, self)

    @classmethod
    def from_configuration(
        cls,
        configuration: Any,
        *,
        qps: float = 50.0,
        burst: int = 100,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> KubeClient:
        return cls(configuration, qps=qps, burst=burst, timeout=timeout, retry=retry)

    # ------------------------------------------------------------------ the request path

    def _send(self, method: str, url: str, attempt: Callable[[], Any], cancel: threading.Event | None) -> Any:
        """Run `attempt` (one HTTP exchange returning a RESTResponse) under the limiter, with retries."""
        verb = kube_verb(method, url)
        method = method.upper()
        tries = 0
        while True:
            self._acquire(cancel)
            try:
                response = attempt()
            except (urllib3.exceptions.HTTPError, OSError) as error:
                metrics.API_REQUESTS.labels(verb, "error").inc()
                retryable = method in _SAFE_METHODS or isinstance(error, _NOT_SENT)
                if tries >= self.retry.max_retries or not retryable:
                    raise
                delay = self.retry.backoff(tries)
                log.debug("api request failed; retrying", verb=verb, url=url, error=str(error), delay=round(delay, 2))
            else:
                status = int(response.status)
                metrics.API_REQUESTS.labels(verb, str(status)).inc()
                delay_or_none = self._retry_delay(method, url, status, response.headers, tries)
                if delay_or_none is None:
                    return response
                delay = delay_or_none
                _discard(response)
                log.debug("api request refused; retrying", verb=verb, url=url, status=status, delay=round(delay, 2))
            tries += 1
            self._sleep(delay, cancel)

    def _retry_delay(self, method: str, url: str, status: int, headers: Any, tries: int) -> float | None:
        if tries >= self.retry.max_retries:
            return None
        after = _retry_after(headers)
        if status == 429:
            if urlsplit(url).path.endswith("/eviction"):
                return None  # a PodDisruptionBudget refusal: the caller's decision, not a transient error
        elif status not in _RETRYABLE_STATUS or (method not in _SAFE_METHODS and after is None):
            return None
        if after is not None:
            return min(after, self.retry.max_retry_after)
        return self.retry.backoff(tries)

    def _acquire(self, cancel: threading.Event | None) -> None:
        if self._closed.is_set():
            raise Cancelled("the Kubernetes client is closed")
        self.limiter.acquire(cancel or self._closed)

    def _sleep(self, seconds: float, cancel: threading.Event | None) -> None:
        if (cancel or self._closed).wait(seconds):
            raise Cancelled("stopped while waiting to retry a Kubernetes API request")

    # ------------------------------------------------------------------ raw JSON helpers

    def _serialize(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, Any]] | Mapping[str, Any] | None,
        body: Any,
        content_type: str | None,
    ) -> tuple[str, str, dict[str, str], Any]:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        params = list(query.items()) if isinstance(query, Mapping) else list(query or ())
        params = [(k, _query_value(v)) for k, v in params if v is not None]
        method, url, headers, body, _ = self.api_client.param_serialize(
            method, path, query_params=params, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        return method, url, headers, body

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, Any]] | Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
    ) -> bytes:
        """One API call; the response body on 2xx, else KubeApiError. Connection failures after
        retries raise ClusterUnreachableError; a set `cancel` (or close()) raises Cancelled."""
        method, url, headers, payload = self._serialize(method, path, query, body, content_type)
        call_timeout = timeout if timeout is not None else self.timeout

        def attempt() -> Any:
            return self.api_client.rest_client.request(
                method, url, headers=headers, body=payload, _request_timeout=call_timeout
            )

        try:
            response = self._send(method, url, attempt, cancel)
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise ClusterUnreachableError(f"{method} {self.host}{path}: {_describe(error)}") from None
        data: bytes = response.read()
        if not 200 <= response.status <= 299:
            raise KubeApiError(method, path, int(response.status), data)
        return data

    def get_json(
        self,
        path: str,
        *,
        query: Sequence[tuple[str, Any]] | Mapping[str, Any] | None = None,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
    ) -> Any:
        """GET `path` and decode the JSON answer (plain dicts and lists)."""
        return msgspec.json.decode(self.request("GET", path, query=query, timeout=timeout, cancel=cancel))

    def stream(
        self,
        path: str,
        *,
        query: Sequence[tuple[str, Any]] | Mapping[str, Any] | None = None,
        read_timeout: float | None = None,
        cancel: threading.Event | None = None,
    ) -> Any:
        """Open a streaming GET (a watch); returns the urllib3 response to read lines from and close.

        `read_timeout` bounds the wait for the next bytes (None: wait forever)."""
        method, url, headers, _ = self._serialize("GET", path, query, None, None)
        timeout = urllib3.Timeout(connect=min(self.timeout, 10.0), read=read_timeout)

        def attempt() -> Any:
            response = self.api_client.rest_client.pool_manager.request(
                "GET", url, headers=headers, timeout=timeout, preload_content=False
            )
            return k8s.rest.RESTResponse(response)

        try:
            response = self._send(method, url, attempt, cancel)
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise ClusterUnreachableError(f"GET {self.host}{path}: {_describe(error)}") from None
        if not 200 <= response.status <= 299:
            data = response.read()
            raise KubeApiError("GET", path, int(response.status), data)
        return response.response

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Interrupt waits and retries in progress and release the connection pool."""
        self._closed.set()
        self.api_client.close()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _discard(response: Any) -> None:
    """Read and release a response we will not use, so its connection goes back to the pool."""
    with contextlib.suppress(urllib3.exceptions.HTTPError, OSError):
        response.read()


def _describe(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    text = str(reason or error)
    # urllib3 messages carry the object repr first: keep what a person can act on.
    marker = "Failed to establish a new connection: "
    return text.split(marker, 1)[1] if marker in text else text


# ---------------------------------------------------------------------- configuration


def connect(
    kubeconfig: str | Path | None = None,
    context: str | None = None,
    *,
    qps: float = 50.0,
    burst: int = 100,
    timeout: float = 30.0,
    retry: RetryPolicy | None = None,
    probe: bool = True,
) -> KubeClient:
    """A client for the cluster a kubeconfig (and context) names.

    With no kubeconfig, the chain kubectl uses: the files in $KUBECONFIG (a list, merged), else
    ~/.kube/config, else the pod's service account when running in a cluster; none of them is a
    NoClusterConfigError. A bad kubeconfig or unknown context is an InputError naming the file;
    `probe` checks the server answers (GET /version) and raises ClusterUnreachableError if not.
    """
    configuration = k8s.Configuration()
    configuration.client_side_validation = False
    where = load_configuration(configuration, kubeconfig, context)
    kube = KubeClient(configuration, qps=qps, burst=burst, timeout=timeout, retry=retry)
    if probe:
        try:
            kube.request("GET", "/version", timeout=min(timeout, 10.0))
        except ClusterUnreachableError as error:
            kube.close()
            raise ClusterUnreachableError(f"{kube.host} (from {where}) does not answer: {error}") from None
        except KubeApiError as error:
            kube.close()
            if error.status in (401, 403):
                raise ClusterUnreachableError(
                    f"{kube.host} (from {where}) refused our credentials: {error.status} {error.reason}"
                ) from None
            raise ClusterUnreachableError(f"{kube.host} (from {where}): {error}") from None
    return kube


def load_configuration(configuration: Any, kubeconfig: str | Path | None, context: str | None) -> str:
    """Fill `configuration` from the kubeconfig (or the default chain); returns where it came from."""
    if kubeconfig is not None:
        path = Path(kubeconfig).expanduser()
        if not path.exists():
            raise InputError("no such kubeconfig file", source=str(path), field="--kubeconfig")
        files, label = [path], f"kubeconfig {path}"
    else:
        files, looked = _default_kubeconfigs()
        label = f"kubeconfig {os.pathsep.join(map(str, files))}"
        if not files:
            if context is None and _in_cluster():
                try:
                    k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
                except k8s_config.ConfigException as error:
                    raise InputError(f"cannot use the in-cluster service account: {error}") from None
                return "in-cluster service account"
            raise NoClusterConfigError(f"no cluster configuration: {looked}, and not running in a cluster")
    # Each file is read once: a --kubeconfig <(…) pipe cannot be read a second time.
    documents = [(file, _read_kubeconfig(file)) for file in files]
    _check_context(label, documents, context)
    try:
        loader = k8s_config.kube_config.KubeConfigLoader(  # type: ignore[no-untyped-call]
            config_dict=_merged_kubeconfig(documents), active_context=context, config_base_path=None
        )
        loader.load_and_set(configuration)  # type: ignore[no-untyped-call]
    except k8s_config.ConfigException as error:
        raise InputError(f"not a usable kubeconfig: {error}", source=label) from None
    except (TypeError, KeyError, AttributeError, ValueError, OSError) as error:
        # The loader assumes a well-formed file: a wrong shape deep inside surfaces as one of these.
        raise InputError(f"not a usable kubeconfig: {type(error).__name__}: {error}", source=label) from None
    return label.removeprefix("kubeconfig ") + (f" context {context!r}" if context else "")


def _in_cluster() -> bool:
    return (
        bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
        and Path("/var/run/secrets/kubernetes.io/serviceaccount/token").is_file()
    )


def _default_kubeconfigs() -> tuple[list[Path], str]:
    """The kubeconfig files kubectl would read with no --kubeconfig, and what was looked at (for a
    message when there are none): the existing files of $KUBECONFIG when it is set, else ~/.kube/config."""
    env = os.environ.get("KUBECONFIG", "")
    if env:
        listed = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
        found = [p for p in listed if p.exists()]
        return found, f"none of the files in $KUBECONFIG exists ({env})"
    home = Path("~/.kube/config").expanduser()
    return ([home] if home.exists() else []), f"$KUBECONFIG is not set, {home} does not exist"


_SECTIONS = ("clusters", "contexts", "users")


def _read_kubeconfig(path: Path) -> dict[str, Any]:
    """One kubeconfig file, checked for the shape the loader assumes."""
    source = f"kubeconfig {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError("not a kubeconfig: not UTF-8 text", source=source) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", source=source) from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputError(f"not a kubeconfig: malformed YAML{at}", source=source) from None
    if document is None:
        raise InputError("empty file, not a kubeconfig", source=source)
    if not isinstance(document, dict) or not any(section in document for section in _SECTIONS):
        raise InputError("not a kubeconfig: expected a mapping with clusters, contexts, users", source=source)
    for section in _SECTIONS:
        entries = document.get(section)
        if entries is None:
            continue
        if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("name"), str) for e in entries
        ):
            raise InputError("must be a list of entries, each with a name", source=source, field=section)
    current = document.get("current-context")
    if current is not None and not isinstance(current, str):
        raise InputError("must be the name of a context", source=source, field="current-context")
    return document


def _merged_kubeconfig(documents: Sequence[tuple[Path, Mapping[str, Any]]]) -> Any:
    """The files merged as kubectl and the client's KubeConfigMerger merge them (the first entry of a
    name wins, the last current-context wins), each entry remembering its file so that relative
    certificate paths resolve against that file's directory."""
    ConfigNode = k8s_config.kube_config.ConfigNode
    first_path = str(documents[0][0])
    merged = ConfigNode(first_path, {**documents[0][1], **{s: [] for s in _SECTIONS}}, first_path)  # type: ignore[no-untyped-call]
    for path, document in documents:
        for section in _SECTIONS:
            names = {entry["name"] for entry in merged.value[section]}
            for entry in document.get(section) or ():
                if entry["name"] not in names:
                    names.add(entry["name"])
                    merged.value[section].append(ConfigNode(f"{path}/{entry['name']}", entry, str(path)))  # type: ignore[no-untyped-call]
        if "current-context" in document:
            merged.value["current-context"] = document["current-context"]
    return merged


def _check_context(label: str, documents: Sequence[tuple[Path, Mapping[str, Any]]], context: str | None) -> None:
    """A clear error for an unknown or unset context, listing the ones there are (merged as the
    loader merges: the first entry of a name wins, the last current-context set wins)."""
    names: list[str] = []
    current: str | None = None
    for _, document in documents:
        for entry in document.get("contexts") or ():
            if entry["name"] not in names:
                names.append(entry["name"])
        if "current-context" in document:
            current = document["current-context"]
    allowed = ", ".join(names) if names else "none"
    if context is not None:
        if context not in names:
            raise InputError(f"no context {context!r} in this kubeconfig (contexts: {allowed})", source=label)
    elif not current:
        raise InputError(f"no current-context set: give --context NAME (contexts: {allowed})", source=label)
    elif current not in names:
        raise InputError(f"current-context {current!r} is not one of its contexts (contexts: {allowed})", source=label)
