"""``python -m tablestore_server …``: runs the installed binary with the same arguments."""

import os
import subprocess
import sys

from . import binary_path


def main() -> int:
    binary = binary_path()
    if os.name != "nt":
        os.execv(binary, [binary, *sys.argv[1:]])
    return subprocess.call([binary, *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
