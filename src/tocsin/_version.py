# SPDX-License-Identifier: Apache-2.0
"""tocsin's version: a leaf module (it imports nothing), so any layer can read it without
importing the package root (``from .. import __version__`` closed a cycle through
``tocsin/__init__.py``). The build reads it too (``[tool.hatch.version]``)."""

__version__ = "0.1.0.dev0"
