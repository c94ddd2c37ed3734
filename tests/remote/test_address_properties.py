# SPDX-License-Identifier: Apache-2.0
"""Hypothesis: every node address prints and parses back, and a PID string always splits
at the start of its actor path (whatever the host, socket path or actor names hold)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from tests.strategies import (
    remote_actor_paths,
    remote_hosts,
    remote_socket_paths,
    remote_system_names,
)

from tocsin.remote._address import NodeAddress, parse_system_address, split_pid_string

tcp_nodes = st.builds(
    lambda host, port: NodeAddress("tcp", host=host, port=port),
    remote_hosts,
    st.integers(1, 65535),
)
unix_nodes = remote_socket_paths.map(lambda path: NodeAddress("unix", path=path))


@given(tcp_nodes | unix_nodes)
def test_a_node_address_prints_and_parses_back(node: NodeAddress) -> None:
    assert NodeAddress.parse(node.url) == node


@given(tcp_nodes | unix_nodes, remote_system_names, remote_actor_paths)
def test_a_pid_string_splits_at_its_actor_path(node: NodeAddress, system: str, path: str) -> None:
    address = node.system_address(system)
    assert parse_system_address(address) == (system, node)
    assert split_pid_string(address + path) == (address, path)
