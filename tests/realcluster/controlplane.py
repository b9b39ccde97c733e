"""A real Kubernetes control plane on loopback for tests, in the envtest convention.

The binaries come from the folder named by `KUBEBUILDER_ASSETS` (etcd, kube-apiserver, and for the
tests that ask for them kube-controller-manager and kube-scheduler), as controller-runtime's
envtest takes them. Certificates are made with the openssl CLI. Every process is started in its
own session, dies with the test process (PR_SET_PDEATHSIG) and is stopped with terminate, then
kill, when the control plane stops.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ASSETS_VARIABLE = "KUBEBUILDER_ASSETS"
HOW_TO_GET = (
    f"set {ASSETS_VARIABLE} to a folder with etcd and kube-apiserver "
    "(unpack ../shared/kube/*.tar.xz, or use controller-runtime's setup-envtest)"
)
REQUIRED = ("etcd", "kube-apiserver")

# The apiserver audits only what ServiceAccount credentials do (no test component uses one but our
# processes run as deploy/'s ServiceAccounts), with the RBAC attributes and the answer, so a test can
# see every call and every 403 of theirs. Everything else (the admin, kube-*) is not written.
AUDIT_POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],  # a watch is written when it starts, and again when it ends
    "rules": [{"level": "Metadata", "userGroups": ["system:serviceaccounts"]}, {"level": "None"}],
}


def assets_folder() -> tuple[Path | None, str]:
    """The binaries' folder from the environment, or None and why it cannot be used."""
    value = os.environ.get(ASSETS_VARIABLE, "")
    if not value:
        return None, f"{ASSETS_VARIABLE} is not set: {HOW_TO_GET}"
    folder = Path(value)
    missing = [name for name in REQUIRED if not os.access(folder / name, os.X_OK)]
    if missing:
        return None, f"{ASSETS_VARIABLE}={value} has no {', '.join(missing)}: {HOW_TO_GET}"
    return folder, ""


def free_port() -> int:
    """A loopback port free now; the child that will bind it may lose it to another process first
    (see `ControlPlane._start`, and `OurProcess.alive` for our own processes)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


PORT_ATTEMPTS = 4


def lost_its_port(log: Path) -> bool:
    """Whether a process's log says it could not bind its port (etcd, kube-apiserver, kube-* all
    report Go's `bind: address already in use`)."""
    try:
        return "address already in use" in log.read_text(errors="replace")
    except OSError:
        return False


def _die_with_parent() -> None:
    # A test process killed outright must not leave an apiserver behind.
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def terminate(popen: subprocess.Popen[bytes], grace: float) -> int:
    """SIGTERM, then SIGKILL after `grace` seconds; waits until the process is gone; its exit code."""
    if popen.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            popen.terminate()
        try:
            popen.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                popen.kill()
            popen.wait(10)
    return popen.returncode


@dataclass(slots=True)
class Process:
    """One started binary and its log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    args: list[str] = field(default_factory=list)  # to start it again the same way (`ControlPlane.restart_*`)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, grace: float = 10.0) -> None:
        """Terminate, then kill after `grace` seconds; waits until the process is gone."""
        terminate(self.popen, grace)


@dataclass(frozen=True, slots=True)
class Certificates:
    ca: Path
    ca_key: Path
    serving: Path
    serving_key: Path
    admin: Path
    admin_key: Path
    service_account_key: Path
    service_account_public: Path


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {done.stderr.strip()}")


def make_certificates(folder: Path) -> Certificates:
    """A CA, a serving certificate for 127.0.0.1, an admin client (system:masters), a service-account key pair."""
    folder.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "2", "-subj", "/CN=realcluster-ca", cwd=folder)  # fmt: skip
    (folder / "serving.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n"
    )
    (folder / "admin.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name, subject in (("serving", "/CN=kube-apiserver"), ("admin", "/O=system:masters/CN=realcluster-admin")):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", subject, cwd=folder)  # fmt: skip
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext", cwd=folder)  # fmt: skip
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=folder)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=folder)
    return Certificates(
        ca=folder / "ca.crt",
        ca_key=folder / "ca.key",
        serving=folder / "serving.crt",
        serving_key=folder / "serving.key",
        admin=folder / "admin.crt",
        admin_key=folder / "admin.key",
        service_account_key=folder / "sa.key",
        service_account_public=folder / "sa.pub",
    )


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(path: Path, server: str, certs: Certificates) -> Path:
    """An admin kubeconfig with everything embedded."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "realcluster", "cluster": {"server": server, "certificate-authority-data": _b64(certs.ca)}}
        ],
        "users": [
            {
                "name": "admin",
                "user": {"client-certificate-data": _b64(certs.admin), "client-key-data": _b64(certs.admin_key)},
            }
        ],
        "contexts": [{"name": "realcluster", "context": {"cluster": "realcluster", "user": "admin"}}],
        "current-context": "realcluster",
    }
    path.write_text(yaml.safe_dump(config))
    return path


@dataclass(slots=True)
class ControlPlane:
    """etcd and kube-apiserver (and on demand controller-manager and scheduler) in `workdir`."""

    assets: Path
    workdir: Path
    ready_timeout: float = 60.0
    processes: list[Process] = field(default_factory=list)
    certs: Certificates | None = None
    etcd_url: str = ""
    server: str = ""
    kubeconfig: Path = Path()
    audit_log: Path = Path()

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> ControlPlane:
        """Certificates, etcd, kube-apiserver; returns once /readyz answers ok (or raises, stopped)."""
        try:
            self.certs = make_certificates(self.workdir / "pki")
            self._start_etcd()
            self._start_apiserver()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every process, newest first (the apiserver before etcd)."""
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def logs(self) -> str:
        """The tail of every process's log, for a failure message."""
        return "\n".join(
            f"--- {p.name} ({'running' if p.alive() else 'exited'})\n{p.log_tail()}" for p in self.processes
        )

    # ---------------------------------------------------------------- components

    def _log_path(self, name: str) -> Path:
        """`name.log`, or `name-2.log`, `name-3.log`, … when a process of that binary has logged here
        before (two kube-schedulers, or a start retried on a new port, keep their own logs)."""
        log = self.workdir / f"{name}.log"
        number = 1
        while log.exists():
            number += 1
            log = self.workdir / f"{name}-{number}.log"
        return log

    def _spawn(self, name: str, args: list[str]) -> Process:
        log = self._log_path(name)
        command = [str(self.assets / name), *args]
        # preexec_fn is unsafe once threads run (a restart mid-test): setpriv sets the same signal.
        setpriv = shutil.which("setpriv") if threading.active_count() > 1 else None
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [setpriv, "--pdeathsig", "KILL", *command] if setpriv else command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.workdir,
                start_new_session=True,
                preexec_fn=None if setpriv else _die_with_parent,
            )
        process = Process(name, popen, log, args)
        self.processes.append(process)
        return process

    def _start(self, name: str, launch: Callable[[], tuple[list[str], str, str, ssl.SSLContext | None]]) -> Process:
        """Spawn `name` with the arguments `launch()` makes (new free ports each call) and wait until
        its URL answers `expect`. `free_port` cannot hold a port for the child, so another process
        may take it first: a child that exits saying so is started again on new ports (no cost when
        the ports were free, as they almost always are)."""
        for attempt in range(1, PORT_ATTEMPTS + 1):
            args, url, expect, context = launch()
            process = self._spawn(name, args)
            try:
                self._wait(process, url, expect, context)
                return process
            except RuntimeError:
                if attempt == PORT_ATTEMPTS or process.alive() or not lost_its_port(process.log):
                    raise
                self.processes.remove(process)
        raise AssertionError("unreachable")

    def _wait(self, process: Process, url: str, expect: str, context: ssl.SSLContext | None = None) -> None:
        deadline = time.monotonic() + self.ready_timeout
        last = ""
        while time.monotonic() < deadline:
            if not process.alive():
                raise RuntimeError(f"{process.name} exited ({process.popen.returncode}):\n{process.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2, context=context) as response:
                    body = response.read().decode(errors="replace")
                    # Alive too: the answer must be our child's, not another process's that took its port.
                    if expect in body and process.alive():
                        return
                    last = body
            except (urllib.error.URLError, OSError) as error:
                last = str(error)
            time.sleep(0.2)
        raise RuntimeError(
            f"{process.name} not ready within {self.ready_timeout}s at {url} (last: {last[:300]}):\n"
            f"{process.log_tail()}"
        )

    def _start_etcd(self) -> None:
        def launch() -> tuple[list[str], str, str, ssl.SSLContext | None]:
            client, peer = free_port(), free_port()
            # A retried start must not find the data dir (and peer URL) of the attempt that lost its port.
            shutil.rmtree(self.workdir / "etcd", ignore_errors=True)
            self.etcd_url = f"http://127.0.0.1:{client}"
            peer_url = f"http://127.0.0.1:{peer}"
            args = [
                "--name=t",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=t={peer_url}",
                "--log-level=warn",
                # Progress notifications move the apiserver's watch cache to etcd's revision, so a
                # quiet resource still gets bookmarks with a newer resourceVersion (default 10 min).
                "--experimental-watch-progress-notify-interval=1s",
            ]
            return args, f"{self.etcd_url}/health", '"health":"true"', None

        self._start("etcd", launch)

    def admin_ssl_context(self) -> ssl.SSLContext:
        assert self.certs is not None
        context = ssl.create_default_context(cafile=str(self.certs.ca))
        context.load_cert_chain(str(self.certs.admin), str(self.certs.admin_key))
        return context

    def _start_apiserver(self) -> None:
        certs = self.certs
        assert certs is not None
        self.audit_log = self.workdir / "audit.log"
        policy = self.workdir / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump(AUDIT_POLICY, sort_keys=False))

        def launch() -> tuple[list[str], str, str, ssl.SSLContext | None]:
            port = free_port()
            self.server = f"https://127.0.0.1:{port}"
            args = [
                f"--etcd-servers={self.etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                "--endpoint-reconciler-type=none",
                f"--tls-cert-file={certs.serving}",
                f"--tls-private-key-file={certs.serving_key}",
                f"--client-ca-file={certs.ca}",
                f"--service-account-key-file={certs.service_account_public}",
                f"--service-account-signing-key-file={certs.service_account_key}",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--authorization-mode=Node,RBAC",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
            ]
            return args, f"{self.server}/readyz", "ok", self.admin_ssl_context()

        self._start("kube-apiserver", launch)
        self.kubeconfig = write_kubeconfig(self.workdir / "admin.kubeconfig", self.server, certs)

    # ---------------------------------------------------------------- faults

    def restart_apiserver(self, downtime: float = 0.0) -> float:
        """Stop kube-apiserver (SIGTERM), leave it down `downtime` seconds, start it again with the
        same arguments (port, certificates, etcd, audit log), so every kubeconfig and token keeps
        working; returns once /readyz answers ok, the seconds the whole restart took."""
        began = time.monotonic()
        self._restart("kube-apiserver", f"{self.server}/readyz", "ok", self.admin_ssl_context(), downtime)
        return time.monotonic() - began

    def restart_etcd(self, downtime: float = 0.0) -> float:
        """Stop etcd (SIGTERM), leave it down `downtime` seconds, start it again on the same ports
        and data; returns once the apiserver's /readyz (which checks etcd) answers ok again, the
        seconds the whole restart took."""
        began = time.monotonic()
        self._restart("etcd", f"{self.etcd_url}/health", '"health":"true"', None, downtime)
        apiserver = next(p for p in self.processes if p.name == "kube-apiserver")
        self._wait(apiserver, f"{self.server}/readyz", "ok", self.admin_ssl_context())
        return time.monotonic() - began

    def _restart(self, name: str, url: str, expect: str, context: ssl.SSLContext | None, downtime: float) -> None:
        index, old = next((i, p) for i, p in enumerate(self.processes) if p.name == name)
        old.stop()
        if downtime > 0:
            time.sleep(downtime)  # the fault's length, not a wait for a condition
        # Same arguments, so the same ports: the kernel lets the port be bound again at once (Go sets
        # SO_REUSEADDR); a process that took it meanwhile makes this fail, as it should.
        process = self._spawn(name, old.args)
        self.processes.remove(process)
        self.processes[index] = process  # the same place in the stop order
        self._wait(process, url, expect, context)

    def audit_mark(self) -> int:
        """Where the audit log ends now: `audit_events(since=…)` reads only what is written after it."""
        try:
            return self.audit_log.stat().st_size
        except OSError:
            return 0

    def audit_events(self, user: str | None = None, since: int = 0) -> list[dict[str, Any]]:
        """The audit events written so far (requests made with ServiceAccount credentials only, see
        AUDIT_POLICY), of `user` (`system:serviceaccount:NS:NAME`) when given, after the `audit_mark` `since`."""
        events = []
        try:
            with self.audit_log.open("rb") as log:
                log.seek(since)
                lines = log.read().decode(errors="replace").splitlines()
        except OSError:
            return []
        for line in lines:
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if user is None or event.get("user", {}).get("username") == user:
                    events.append(event)
        return events

    def start_controller_manager(self) -> Process:
        """kube-controller-manager with node lifecycle off (no kubelet renews node leases)."""
        certs = self.certs
        assert certs is not None
        kubeconfig = str(self.kubeconfig)

        def launch() -> tuple[list[str], str, str, ssl.SSLContext | None]:
            port = free_port()
            args = [
                *_component_args(kubeconfig, port),
                "--leader-elect=false",
                "--controllers=*,-nodelifecycle",
                f"--service-account-private-key-file={certs.service_account_key}",
                f"--root-ca-file={certs.ca}",
                "--use-service-account-credentials=false",
            ]
            return args, f"https://127.0.0.1:{port}/healthz", "ok", _insecure()

        return self._start("kube-controller-manager", launch)

    def start_scheduler(self, config: Path | None = None) -> Process:
        """kube-scheduler, with a KubeSchedulerConfiguration file when given (e.g. one naming an
        extender); then it logs each pod it could not schedule and why (-v=2), for a failure message."""
        kubeconfig = str(self.kubeconfig)

        def launch() -> tuple[list[str], str, str, ssl.SSLContext | None]:
            port = free_port()
            args = _component_args(kubeconfig, port)
            args += [f"--config={config}", "--v=2"] if config is not None else ["--leader-elect=false"]
            return args, f"https://127.0.0.1:{port}/healthz", "ok", _insecure()

        return self._start("kube-scheduler", launch)


def _component_args(kubeconfig: str, port: int) -> list[str]:
    """What kube-controller-manager and kube-scheduler both take: the cluster, and their own
    loopback HTTPS port for /healthz."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
    ]


def _insecure() -> ssl.SSLContext:
    # The components' health ports serve a self-signed certificate of their own.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context
