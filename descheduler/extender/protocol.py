"""The kube-scheduler extender wire format, and decoding a request body into checked parts.

Shapes mirror `k8s.io/kube-scheduler/extender/v1` (kubernetes/kubernetes,
staging/src/k8s.io/kube-scheduler/extender/v1/types.go). The Go structs carry no json tags, so
encoding/json writes the Go field names as keys, and kube-scheduler (pkg/scheduler/extender.go,
`HTTPExtender.send`) POSTs them as JSON to `<urlPrefix>/<verb>`:

    ExtenderArgs         {Pod *v1.Pod; Nodes *v1.NodeList; NodeNames *[]string}
    ExtenderFilterResult {Nodes *v1.NodeList; NodeNames *[]string; FailedNodes FailedNodesMap;
                          FailedAndUnresolvableNodes FailedNodesMap; Error string}
    HostPriority         {Host string; Score int64}    HostPriorityList []HostPriority
    ExtenderBindingArgs  {PodName string; PodNamespace string; PodUID types.UID; Node string}
    ExtenderBindingResult {Error string}
    MaxExtenderPriority = 10

With `bindVerb` set, kube-scheduler POSTs ExtenderBindingArgs to `<urlPrefix>/<bindVerb>` and does
not bind the pod itself: the extender creates the pods/binding.

With `nodeCacheCapable: true` the scheduler sends `NodeNames` (and reads `NodeNames` back);
otherwise it sends the full `Nodes` list and reads `Nodes` back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import msgspec

from descheduler import decode
from descheduler.model import Pod

MAX_EXTENDER_PRIORITY = 10
MIN_EXTENDER_PRIORITY = 0
_ABSENT = msgspec.Raw(b"null")
# The largest request or limit accepted, in units (millicores, bytes): 2^53, far above any node,
# and small enough that the core's int64 arithmetic (× 100, × factors) cannot overflow.
MAX_QUANTITY = 2**53


class ObjectMeta(msgspec.Struct):
    name: str = ""


class NamedObject(msgspec.Struct):
    """Just enough of a Node to know its name."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class NodeList(msgspec.Struct, omit_defaults=True):
    """v1.NodeList: items are passed through untouched (the cache, not the request, describes nodes)."""

    items: list[msgspec.Raw] | None = None
    apiVersion: str = ""
    kind: str = ""


class ExtenderArgs(msgspec.Struct):
    """What the scheduler sends to `filterVerb` and `prioritizeVerb`."""

    Pod: msgspec.Raw = _ABSENT  # v1.Pod (decoded by `decode.RawPod`); msgspec.Raw cannot be in a union
    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None


class ExtenderFilterResult(msgspec.Struct):
    """The answer to `filterVerb`."""

    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None
    FailedNodes: dict[str, str] | None = None
    FailedAndUnresolvableNodes: dict[str, str] | None = None
    Error: str = ""


class HostPriority(msgspec.Struct):
    """One entry of the answer to `prioritizeVerb` (a HostPriorityList is a JSON array of these)."""

    Host: str
    Score: int


class ExtenderBindingArgs(msgspec.Struct):
    """What the scheduler sends to `bindVerb`: the pod and the node it chose."""

    PodName: str = ""
    PodNamespace: str = ""
    PodUID: str = ""
    Node: str = ""


class ExtenderBindingResult(msgspec.Struct):
    """The answer to `bindVerb`: empty Error when the pod was bound."""

    Error: str = ""


class _Envelope(msgspec.Struct):
    """ExtenderArgs with its parts left as raw JSON: each is decoded (and cached) on its own.
    (msgspec.Raw cannot be part of a union: an absent part reads as JSON null.)"""

    Pod: msgspec.Raw = _ABSENT
    Nodes: msgspec.Raw = _ABSENT
    NodeNames: msgspec.Raw = _ABSENT


class RequestError(ValueError):
    """A request the extender cannot act on; `status` is the HTTP code to answer with."""

    def __init__(self, reason: str, status: int = 400) -> None:
        self.reason = reason
        self.status = status
        super().__init__(reason)


@dataclass(frozen=True, slots=True)
class Request:
    """A decoded ExtenderArgs: the pod, the candidate names, and the raw parts to key caches by."""

    pod: Pod
    pod_raw: bytes
    names: list[str] | None  # None: not decoded, because the NodeNames bytes were recognised
    names_raw: bytes  # the NodeNames array as sent (b"" when the request carried Nodes)
    node_items: list[msgspec.Raw] | None  # the Nodes items as sent, when the request carried Nodes


_envelope = msgspec.json.Decoder(_Envelope)
_binding = msgspec.json.Decoder(ExtenderBindingArgs)
T = TypeVar("T")
_names = msgspec.json.Decoder(list[str])
_node_list = msgspec.json.Decoder(NodeList)
_named = msgspec.json.Decoder(NamedObject)
_pod = msgspec.json.Decoder(decode.RawPod)


def printable(text: str) -> str:
    """Text kube-scheduler can show: it passes extender reasons and errors through a Go format string,
    where a `%` becomes `%!,(MISSING)`, so none is left."""
    return text.replace("%", " percent") if "%" in text else text


def _where(error: msgspec.ValidationError, field: str) -> str:
    """msgspec's "… - at `$.a.b`" message, with the path rooted at the ExtenderArgs field."""
    message, _, path = str(error).partition(" - at `$")
    return f"{field}{path.rstrip('`')}: {message}" if path else f"{field}: {message}"


def _decode(decoder: msgspec.json.Decoder[T], body: bytes, kind: str) -> T:
    """The body as `kind`; not JSON, or not that object, is a RequestError naming what is wrong."""
    try:
        return decoder.decode(body)
    except msgspec.ValidationError as err:
        raise RequestError(f"body is not an {kind} object: {_where(err, '$')}") from None
    except msgspec.DecodeError as err:
        raise RequestError(f"body is not valid JSON: {err}") from None


def decode_envelope(body: bytes) -> tuple[bytes, bytes | None, bytes | None]:
    """(Pod, Nodes, NodeNames) as raw JSON; a body that is not an ExtenderArgs object is a RequestError."""
    envelope = _decode(_envelope, body, "ExtenderArgs")
    pod, nodes, names = (_present(part) for part in (envelope.Pod, envelope.Nodes, envelope.NodeNames))
    if pod is None:
        raise RequestError("ExtenderArgs.Pod is missing or null")
    if names is None and nodes is None:
        raise RequestError("ExtenderArgs carries neither NodeNames nor Nodes")
    return pod, nodes, names


_POD_FIRST = b'{"Pod":{'
_NAMES_LAST = b',"Nodes":null,"NodeNames":['


def split_envelope(body: bytes) -> tuple[bytes, bytes] | None:
    """(Pod, NodeNames) cut out of the body by position, when it is laid out as Go's encoding/json
    writes an ExtenderArgs with NodeNames: `{"Pod":{…},"Nodes":null,"NodeNames":[…]}`. Nothing is
    checked here: the split stands only if the pod then decodes as one JSON object and the names
    as an array the state recognises (`ClusterState.candidates`); otherwise the caller decodes the
    body in full (`decode_envelope`). That check is enough: a cut inside a string of the pod leaves
    the pod part unterminated, or a names part holding `"Nodes":`, which no array of names holds."""
    if not (body.startswith(_POD_FIRST) and body.endswith(b"]}")):
        return None
    at = body.find(_NAMES_LAST, len(_POD_FIRST))
    if at < 0:
        return None
    return body[len(_POD_FIRST) - 1 : at], body[at + len(_NAMES_LAST) - 1 : -1]


def _present(part: msgspec.Raw) -> bytes | None:
    raw = bytes(part)
    return None if raw == b"null" else raw


def decode_pod(raw: bytes) -> Pod:
    """The pod being scheduled, as the planner's record; bad fields name their path."""
    try:
        pod = decode.pod_from_raw(_pod.decode(raw))
    except msgspec.ValidationError as err:
        raise RequestError(_where(err, "Pod")) from None
    except msgspec.DecodeError as err:  # cannot happen for a part the envelope parsed; kept for safety
        raise RequestError(f"Pod: {err}") from None
    except decode.DecodeError as err:
        raise RequestError(f"Pod.{err.field}: {err.message}" if err.field else f"Pod: {err.message}") from None
    if not pod.name:
        raise RequestError("Pod.metadata.name: required")
    for kind, values in (("requests", pod.requests), ("limits", pod.limits)):
        for name, units in values.items():
            if not 0 <= units <= MAX_QUANTITY:
                raise RequestError(f"Pod: {name} {kind} of {units} units is out of range (0 to {MAX_QUANTITY})")
    return pod


def decode_names(raw: bytes) -> list[str]:
    try:
        names = _names.decode(raw)
    except msgspec.ValidationError as err:
        raise RequestError(_where(err, "NodeNames")) from None
    if not all(names):
        raise RequestError("NodeNames: a node name is empty")
    return names


def decode_nodes(raw: bytes) -> tuple[list[str], list[msgspec.Raw]]:
    """Names and raw items of a v1.NodeList (sent when the extender is not nodeCacheCapable)."""
    try:
        items = _node_list.decode(raw).items or []
        names = [_named.decode(item).metadata.name for item in items]
    except msgspec.ValidationError as err:
        raise RequestError(_where(err, "Nodes")) from None
    if not all(names):
        raise RequestError("Nodes.items: a node has no metadata.name")
    return names, items


def decode_binding(body: bytes) -> ExtenderBindingArgs:
    """An ExtenderBindingArgs with every field set; anything else is a RequestError naming the field."""
    args = _decode(_binding, body, "ExtenderBindingArgs")
    for field in ("PodName", "PodNamespace", "Node"):
        if not getattr(args, field):
            raise RequestError(f"ExtenderBindingArgs.{field} is missing or empty")
    return args
