# SPDX-License-Identifier: Apache-2.0
"""The remoting Unix socket is owner-only (DESIGN.md "Security", "Files are ours")."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.remote.remote_support import config, make_node, running

from tocsin.remote._address import parse_system_address
from tocsin.remote._node import SOCKET_MODE


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The loosest umask: what bind() alone would give is then 0777."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("open_umask")
async def test_the_socket_file_is_0600_and_ours_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "n.sock"
    async with running(config(f"unix://{path}"), "n") as node, running(config(), "p") as peer:
        info = os.stat(path)
        assert stat.S_ISSOCK(info.st_mode)
        assert stat.S_IMODE(info.st_mode) == SOCKET_MODE == 0o600
        assert info.st_uid == os.geteuid()
        # The owner (this process) still connects.
        address = parse_system_address(node.address)[1]
        assert await peer.ask(address, "/user/x", "", "", peer.encode_message(3)) == 3


@pytest.mark.parametrize("mode", [0o777, 0o703])
async def test_a_world_writable_directory_is_refused(tmp_path: Path, mode: int) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    node = make_node(config(f"unix://{shared}/n.sock"), "n")
    with pytest.raises(PermissionError, match=rf"mode {mode:04o}: any user") as caught:
        await node.start()
    await node.stop()
    assert str(shared) in str(caught.value)
    assert list(shared.iterdir()) == []


async def test_a_sticky_shared_directory_like_tmp_is_accepted(tmp_path: Path) -> None:
    # Only the socket's owner may remove or rename it there (the sticky bit).
    shared = tmp_path / "sticky"
    shared.mkdir()
    shared.chmod(0o1777)
    async with running(config(f"unix://{shared}/n.sock"), "n"):
        assert stat.S_IMODE(os.stat(shared / "n.sock").st_mode) == 0o600


async def test_a_directory_only_we_can_write_is_accepted(tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir(mode=0o755)
    own.chmod(0o755)
    async with running(config(f"unix://{own}/n.sock"), "n"):
        assert stat.S_IMODE(os.stat(own / "n.sock").st_mode) == 0o600
