"""`descheduler sim …`: run a simulated cluster. Heavy modules are imported inside the commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

sim_app = typer.Typer(
    help="Run a simulated cluster (fake API server, controllers, scheduler, kubelet).",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


HOST = "127.0.0.1"


@sim_app.command("serve")
def serve(
    scenario: Annotated[Path | None, typer.Argument(help="scenario file (default: the built-in demo)")] = None,
    port: Annotated[int, typer.Option("--port", help="port on 127.0.0.1 (0: any free port)")] = 8001,
    kubeconfig_out: Annotated[
        Path | None, typer.Option("--kubeconfig-out", help="write a kubeconfig pointing at the server here")
    ] = None,
    speed: Annotated[float, typer.Option("--speed", help="simulated seconds per wall second", min=0.01)] = 1.0,
    exporter_port: Annotated[
        int | None,
        typer.Option(
            "--exporter-port",
            help="also serve node-exporter and cAdvisor metrics for Prometheus on this port of 127.0.0.1 "
            "(0: any free port): /metrics/node/<node>, /metrics/cadvisor/<node>",
        ),
    ] = None,
    scrape_config_out: Annotated[
        Path | None,
        typer.Option("--scrape-config-out", help="with --exporter-port: write Prometheus scrape_configs for it here"),
    ] = None,
) -> None:
    """Serve a simulated cluster from a scenario until interrupted (Ctrl-C stops it cleanly)."""
    import signal
    import threading

    from descheduler.errors import InputError, listen_error
    from descheduler.fakecluster.cluster import SimulatedCluster
    from descheduler.fakecluster.scenario import load_demo_scenario, load_scenario
    from descheduler.flags import check_port

    check_port(port)
    if exporter_port is not None and not 0 <= exporter_port <= 65535:
        raise InputError(f"must be a port number (0–65535), got {exporter_port}", field="--exporter-port")
    if scrape_config_out is not None and exporter_port is None:
        raise InputError("needs --exporter-port (the exporter it configures)", field="--scrape-config-out")
    if kubeconfig_out is not None and kubeconfig_out.is_dir():
        raise InputError("is a directory: give a file to write the kubeconfig to", source=str(kubeconfig_out))
    loaded = load_scenario(scenario) if scenario is not None else load_demo_scenario()
    cluster = SimulatedCluster(loaded, host=HOST, port=port, exporter_port=exporter_port)
    try:
        cluster.server.start()  # the bind: a port in use is the user's to fix
    except OSError as error:
        raise listen_error(HOST, port, error) from None
    if cluster.exporter is not None:
        try:
            cluster.exporter.start()
        except OSError as error:
            cluster.stop()
            raise InputError(listen_error(HOST, exporter_port or 0, error).message, field="--exporter-port") from None
    cluster.start()
    stop = threading.Event()
    # Both stop it cleanly, SIGINT too when the process was started with it ignored (a background
    # job of a shell without job control), where Python would not raise KeyboardInterrupt.
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        if kubeconfig_out is not None:
            try:
                cluster.write_kubeconfig(kubeconfig_out)
            except OSError as error:
                raise InputError(f"cannot write: {error.strerror or error}", source=str(kubeconfig_out)) from None
            typer.echo(f"kubeconfig written to {kubeconfig_out}")
        typer.echo(f"simulated cluster ({loaded.source}) serving at {cluster.url}", color=False)
        if cluster.exporter is not None:
            typer.echo(f"node-exporter and cAdvisor metrics at {cluster.exporter.url}/metrics/{{node,cadvisor}}/<node>")
            if scrape_config_out is not None:
                _write_scrape_configs(scrape_config_out, cluster.exporter.address, cluster.exporter.nodes())
                typer.echo(f"prometheus scrape_configs written to {scrape_config_out}")
        cluster.run_realtime(stop, speed=speed)
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        cluster.stop()
        typer.echo("simulated cluster stopped")


def _write_scrape_configs(path: Path, address: str, nodes: list[str]) -> None:
    import yaml

    from descheduler.errors import InputError
    from descheduler.fakecluster.exporter import scrape_configs

    text = yaml.safe_dump({"scrape_configs": scrape_configs(address, nodes)}, sort_keys=False)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror or error}", source=str(path)) from None
