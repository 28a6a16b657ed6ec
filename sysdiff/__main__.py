"""``python -m sysdiff``: the command line."""

from sysdiff.flows.cli import main

main()
