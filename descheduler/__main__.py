"""`python -m descheduler` runs the CLI."""

from descheduler.cli import main

main()
