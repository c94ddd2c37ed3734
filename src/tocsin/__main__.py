# SPDX-License-Identifier: Apache-2.0
"""``python -m tocsin``: the same as the ``tocsin`` command."""

import sys

from tocsin.cli import main

if __name__ == "__main__":
    sys.exit(main())
