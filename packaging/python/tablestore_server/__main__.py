"""``python -m tablestore_server …``: runs the installed binary with the same arguments. The
wheel's ``azurite`` and ``azurite-table`` commands come here too: they run
``tablestore azurite …`` / ``tablestore azurite-table …``, Azurite's command lines as the
container image runs them (the word names the readiness line printed; docs/configuration.md).
"""

import os
import subprocess
import sys

from . import binary_path


def _run(args: list) -> int:
    binary = binary_path()
    if os.name != "nt":
        os.execv(binary, [binary, *args])
    return subprocess.call([binary, *args])


def main() -> int:
    return _run(sys.argv[1:])


def azurite() -> int:
    """The ``azurite`` command: tablestore in place of Azurite's all-in-one command."""
    return _run(["azurite", *sys.argv[1:]])


def azurite_table() -> int:
    """The ``azurite-table`` command: tablestore in place of Azurite's Table service."""
    return _run(["azurite-table", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
