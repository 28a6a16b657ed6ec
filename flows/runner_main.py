"""``python -m sysdiff.flows.runner_main``: the warm runner's process (see ``runner_process.py``),
which runs the command line's ``main`` in a forked child for each command."""

import sys

from sysdiff.flows.cli import main
from sysdiff.flows.runner_process import Runner

if __name__ == "__main__":
    sys.exit(Runner(main).main())
