# SPDX-License-Identifier: Apache-2.0
"""Node addresses, system addresses and PID strings: parse, print, reject."""

from __future__ import annotations

import pytest

from tocsin.remote._address import NodeAddress, parse_system_address, split_pid_string


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tcp://127.0.0.1:7100", NodeAddress("tcp", host="127.0.0.1", port=7100)),
        ("tcp://localhost:0", NodeAddress("tcp", host="localhost", port=0)),
        ("tcp://[::1]:7100", NodeAddress("tcp", host="::1", port=7100)),
        ("unix:///run/shop/n1.sock", NodeAddress("unix", path="/run/shop/n1.sock")),
    ],
)
def test_listen_addresses_parse_and_print_back(text: str, expected: NodeAddress) -> None:
    address = NodeAddress.parse(text)
    assert address == expected
    assert address.url == text
    assert NodeAddress.parse(address.url) == address


@pytest.mark.parametrize(
    "text",
    [
        "127.0.0.1:7100",
        "tcp://127.0.0.1",
        "tcp://127.0.0.1:70000",
        "tcp://127.0.0.1:-1",
        "tcp://:7100",
        "tcp://[::1:7100",
        "tcp://[nothex]:7100",
        "unix://relative.sock",
        "unix://",
        "http://x:1",
        7100,
        None,
    ],
)
def test_bad_listen_address_names_the_parameter_and_the_forms(text: object) -> None:
    with pytest.raises(ValueError, match="`listen` must be") as info:
        NodeAddress.parse(text)
    assert "tcp://host:port" in str(info.value) or "absolute" in str(info.value)


def test_system_address_round_trips_for_tcp_ipv6_and_unix() -> None:
    for node in (
        NodeAddress("tcp", host="10.0.0.5", port=7100),
        NodeAddress("tcp", host="::1", port=7100),
        NodeAddress("unix", path="/run/shop dir/n@1.sock"),
    ):
        text = node.system_address("shop")
        assert text.startswith("tocsin://shop@")
        assert parse_system_address(text) == ("shop", node)
    assert NodeAddress("tcp", host="::1", port=1).system_address("s") == "tocsin://s@[::1]:1"


def test_unix_socket_path_is_percent_encoded_so_the_actor_path_starts_at_the_first_slash() -> None:
    address = NodeAddress("unix", path="/run/n1.sock").system_address("shop")
    assert address == "tocsin://shop@unix:%2Frun%2Fn1.sock"
    assert split_pid_string(address + "/user/worker") == (address, "/user/worker")


def test_pid_string_splits_into_system_address_and_path() -> None:
    assert split_pid_string("tocsin://shop@127.0.0.1:7100/user/a/b@c") == (
        "tocsin://shop@127.0.0.1:7100",
        "/user/a/b@c",
    )


@pytest.mark.parametrize(
    "text",
    [
        "shop/user/a",
        "tocsin://shop@127.0.0.1:7100",
        "tocsin://shop@127.0.0.1:7100/",
        "tocsin://127.0.0.1:7100/user/a",
        "tocsin://shop@127.0.0.1:0/user/a",
        "tocsin://shop@unix:relative/user/a",
    ],
)
def test_malformed_pid_strings_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        split_pid_string(text)
