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
) -> None:
    """Serve a simulated cluster from a scenario until interrupted (Ctrl-C stops it cleanly)."""
    import signal
    import threading

    from descheduler.errors import InputError, listen_error
    from descheduler.fakecluster.cluster import SimulatedCluster
    from descheduler.fakecluster.scenario import load_demo_scenario, load_scenario
    from descheduler.flags import check_port

    check_port(port)
    if kubeconfig_out is not None and kubeconfig_out.is_dir():
        raise InputError("is a directory: give a file to write the kubeconfig to", source=str(kubeconfig_out))
    loaded = load_scenario(scenario) if scenario is not None else load_demo_scenario()
    cluster = SimulatedCluster(loaded, host=HOST, port=port)
    try:
        cluster.server.start()  # the bind: a port in use is the user's to fix
    except OSError as error:
        raise listen_error(HOST, port, error) from None
    cluster.start()
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        if kubeconfig_out is not None:
            try:
                cluster.write_kubeconfig(kubeconfig_out)
            except OSError as error:
                raise InputError(f"cannot write: {error.strerror or error}", source=str(kubeconfig_out)) from None
            typer.echo(f"kubeconfig written to {kubeconfig_out}")
        typer.echo(f"simulated cluster ({loaded.source}) serving at {cluster.url}", color=False)
        cluster.run_realtime(stop, speed=speed)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        cluster.stop()
        typer.echo("simulated cluster stopped")
