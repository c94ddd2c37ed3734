# SPDX-License-Identifier: Apache-2.0
"""``python -m tocsin.cli``: the same as the ``tocsin`` command."""

import sys

from . import main

sys.exit(main())
