"""Logging: structlog for our own lines, the stdlib `logging` tree routed through the same renderer.

JSON lines when stderr is not a terminal (in the cluster: one object per line, easy to ship and
query), a readable console rendering on a TTY. Library modules log through `logging` or
`structlog.get_logger()`; both come out in the same format with a timestamp and level.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog
from structlog.typing import Processor

Format = Literal["auto", "json", "console"]


def configure_logging(level: str = "info", fmt: Format = "auto") -> None:
    """Configure structlog and the root logger once for the whole process (idempotent)."""
    json_lines = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Processor = (
        structlog.processors.JSONRenderer() if json_lines else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level.upper())
    # The client library logs every retry of urllib3 at WARNING; our own retry logs say more.
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
