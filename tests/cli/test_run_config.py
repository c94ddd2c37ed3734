# SPDX-License-Identifier: Apache-2.0
"""``tocsin run`` / ``tocsin.run``: every bad argument is refused before anything starts.

No process is forked here (the supervisor's behaviour is in
``tests/integration/test_run_processes.py``).
"""

from __future__ import annotations

import math
import os
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import tocsin
from tocsin._run._arbiter import describe_exit
from tocsin._run._config import (
    MAX_WORKERS_PER_CORE,
    RunUsageError,
    check_environment,
    default_workers,
    make_config,
    open_run_dir,
)
from tocsin._run._target import check_targets, load_main, load_messages


async def good_main(system: tocsin.ActorSystem) -> None:
    del system


def sync_main(system: tocsin.ActorSystem) -> None:
    del system


def test_defaults_are_one_worker_per_core_sharing_one_sqlite_store(tmp_path: Path) -> None:
    config = make_config("app:main", run_dir=tmp_path)
    assert config.workers == default_workers() >= 1
    assert config.store == f"sqlite:///{tmp_path}/store.db"
    spec = config.worker_spec(2, "s" * 64)
    assert spec.name == "tocsin-2"
    assert spec.store == config.worker_spec(1, "s" * 64).store == config.store
    assert spec.listen == f"unix://{tmp_path}/worker-2.sock"
    assert spec.coordinator == f"sqlite:///{tmp_path}/coordinator.db"


def test_default_run_dir_is_named_after_the_run_in_the_current_directory() -> None:
    config = make_config("app:main", name="shop", workers=1)
    assert config.run_dir == Path.cwd().absolute() / ".tocsin" / "shop"


@pytest.mark.parametrize("workers", [0, -1, True, 2.0, "2"])
def test_workers_must_be_a_positive_int(workers: object) -> None:
    with pytest.raises(RunUsageError, match=r"`workers` must be a positive int, got"):
        make_config("app:main", workers=workers)  # type: ignore[arg-type]


def test_workers_above_four_per_core_are_refused_unless_allowed(tmp_path: Path) -> None:
    limit = MAX_WORKERS_PER_CORE * default_workers()
    assert make_config("app:main", workers=limit, run_dir=tmp_path).workers == limit
    with pytest.raises(
        RunUsageError,
        match=rf"`workers` {limit + 1} is more than 4 per core .*--allow-many-workers",
    ):
        make_config("app:main", workers=limit + 1, run_dir=tmp_path)
    config = make_config("app:main", workers=limit + 1, run_dir=tmp_path, allow_many_workers=True)
    assert config.workers == limit + 1


def test_workers_beyond_the_open_files_limit_are_refused_even_when_allowed(
    tmp_path: Path,
) -> None:
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    with pytest.raises(RunUsageError, match=r"open files in the arbiter, and its limit is"):
        make_config("app:main", workers=soft, run_dir=tmp_path, allow_many_workers=True)


def test_the_command_refuses_10000_workers_in_one_line_before_forking(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("async def main(system):\n    pass\n")
    result = subprocess.run(
        [sys.executable, "-m", "tocsin.cli", "run", "app:main", "--workers", "10000"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "`workers` 10000 is more than 4 per core" in lines[0]
    assert "--allow-many-workers" in lines[0]
    assert not (tmp_path / ".tocsin").exists()  # nothing was created, nothing forked


@pytest.mark.parametrize("name", ["", "a/b", " shop", 3])
def test_name_must_be_a_plain_word(name: object) -> None:
    with pytest.raises(RunUsageError, match="`name` must be"):
        make_config("app:main", name=name, workers=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [0, -1, math.nan, math.inf, True])
def test_stop_timeout_must_be_positive_finite_seconds(value: object) -> None:
    with pytest.raises(RunUsageError, match="`stop_timeout` must be a positive finite"):
        make_config("app:main", workers=1, stop_timeout=value)  # type: ignore[arg-type]


def test_restart_backoff_must_be_min_then_max() -> None:
    with pytest.raises(RunUsageError, match=r"min <= max, got \(2, 1\)"):
        make_config("app:main", workers=1, restart_backoff=(2, 1))
    with pytest.raises(RunUsageError, match=r"a \(min, max\) pair of seconds, got 5"):
        make_config("app:main", workers=1, restart_backoff=5)  # type: ignore[arg-type]
    with pytest.raises(RunUsageError, match="`restart_backoff\\[0\\]` must be a positive"):
        make_config("app:main", workers=1, restart_backoff=(0, 1))


def test_every_worker_gets_the_one_store_given(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/app.db"
    config = make_config("app:main", workers=2, store=url)
    assert config.worker_spec(1, "s").store == config.worker_spec(2, "s").store == url
    pg = "postgresql://app@db/app"
    assert make_config("app:main", workers=3, store=pg).worker_spec(3, "s").store == pg


def test_a_per_worker_store_is_refused_since_workers_share_one(tmp_path: Path) -> None:
    per_worker = f"sqlite:///{tmp_path}/app-{{worker}}.db"
    with pytest.raises(RunUsageError, match=r"contains \{worker\}: the workers share one"):
        make_config("app:main", workers=2, store=per_worker)


@pytest.mark.parametrize("url", ["memory://", "sqlite://:memory:"])
def test_a_process_private_store_is_refused_for_several_workers(url: str) -> None:
    with pytest.raises(RunUsageError, match=r"private to each process, and 2 workers"):
        make_config("app:main", workers=2, store=url)
    assert make_config("app:main", workers=1, store=url).store == url


def test_a_bad_store_url_is_refused_with_the_store_message() -> None:
    with pytest.raises(RunUsageError, match="`store`: "):
        make_config("app:main", workers=1, store="bogus://x")


def test_a_bad_coordinator_url_is_refused_with_the_cluster_message() -> None:
    with pytest.raises(RunUsageError, match="`coordinator`: "):
        make_config("app:main", workers=1, coordinator="bogus://x")
    config = make_config("app:main", workers=1, coordinator="redis://localhost:6379/0")
    assert config.worker_spec(1, "s").coordinator == "redis://localhost:6379/0"


def test_a_run_dir_too_long_for_socket_paths_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RunUsageError, match="too long for Unix socket paths"):
        make_config("app:main", workers=1, run_dir=tmp_path / ("x" * 120))


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nocolon", r"MODULE:FUNC \(e.g. shop.app:main\) expected, got 'nocolon'"),
        ("a:b:c", r"MODULE:FUNC \(e.g. shop.app:main\) expected"),
        (":main", r"MODULE:FUNC \(e.g. shop.app:main\) expected"),
        ("tocsin_no_such_module:main", "cannot import 'tocsin_no_such_module': ModuleNotFound"),
        ("os:no_such_function", "module 'os' has no attribute 'no_such_function'"),
        ("os:getcwd", r"must be `async def main\(system: ActorSystem\) -> None`"),
    ],
)
def test_a_bad_target_is_refused_with_what_was_wrong(target: str, message: str) -> None:
    with pytest.raises(RunUsageError, match=message):
        load_main(target)


def test_a_target_may_be_a_function_or_a_dotted_name() -> None:
    label, func = load_main(good_main)
    assert func is good_main
    assert label.endswith(":good_main")
    with pytest.raises(RunUsageError, match="must be `async def"):
        load_main(sync_main)  # type: ignore[arg-type]


def test_run_dir_is_private_and_gets_a_fresh_0600_secret_each_run(tmp_path: Path) -> None:
    path = tmp_path / "run"
    first = open_run_dir(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert stat.S_IMODE(first.secret_file.stat().st_mode) == 0o600
    assert first.secret_file.read_text().strip() == first.secret
    first.close()
    os.chmod(first.secret_file, 0o644)  # an older file with loose bits is re-moded
    second = open_run_dir(path)
    assert second.secret != first.secret
    assert stat.S_IMODE(second.secret_file.stat().st_mode) == 0o600
    second.close()


def test_a_locked_run_dir_is_refused_naming_the_holder(tmp_path: Path) -> None:
    held = open_run_dir(tmp_path)
    try:
        with pytest.raises(
            RunUsageError, match=rf"in use by another tocsin run \(pid {os.getpid()}\)"
        ):
            open_run_dir(tmp_path)
    finally:
        held.close()
    open_run_dir(tmp_path).close()  # free again once the holder is gone


def test_exit_descriptions_name_the_signal() -> None:
    assert describe_exit(1) == "exited with status 1"
    assert describe_exit(-9) == "was killed by SIGKILL"


async def test_run_refuses_to_start_inside_a_running_event_loop(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="outside a running event loop"):
        tocsin.run(good_main, workers=1, run_dir=tmp_path)


def test_run_refuses_to_start_outside_the_main_thread(tmp_path: Path) -> None:
    errors: list[BaseException] = []

    def target() -> None:
        try:
            tocsin.run(good_main, workers=1, run_dir=tmp_path)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(30)
    assert len(errors) == 1
    assert isinstance(errors[0], RuntimeError)
    assert "main thread" in str(errors[0])


def test_run_raises_value_error_for_a_bad_argument(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="`workers` must be a positive int"):
        tocsin.run(good_main, workers=0, run_dir=tmp_path)


def test_the_command_prints_one_line_and_exits_2_on_a_bad_target(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tocsin.cli", "run", "tocsin_no_such_module:main"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "tocsin run: cannot import 'tocsin_no_such_module': "
        "ModuleNotFoundError: No module named 'tocsin_no_such_module'"
    ]
    assert not (tmp_path / ".tocsin").exists()  # nothing was created


class Ping:
    pass


def test_messages_are_classes_given_or_named() -> None:
    assert load_messages([Ping]) == (Ping,)
    # By name: imported afresh (pytest imported this file under another module name).
    named = load_messages("tests.cli.test_run_config:MESSAGES")
    assert [c.__qualname__ for c in named] == ["Ping"]
    with pytest.raises(RunUsageError, match=r"MODULE:ATTR \(e.g. shop.messages:ALL\) expected"):
        load_messages("no_colon")
    with pytest.raises(RunUsageError, match="must hold classes only, got \\[1\\]"):
        load_messages([Ping, 1])  # type: ignore[list-item]
    with pytest.raises(RunUsageError, match="must be an iterable of classes, got 3"):
        load_messages(3)  # type: ignore[arg-type]


def test_check_targets_reports_a_bad_messages_name_without_importing_it() -> None:
    with pytest.raises(RunUsageError, match="cannot import 'tocsin_no_such_module'"):
        check_targets(good_main, "tocsin_no_such_module:ALL")


MESSAGES = [Ping]


def test_listen_gives_worker_n_the_port_plus_n_minus_1_and_advertise_its_host(
    tmp_path: Path,
) -> None:
    config = make_config(
        "app:main", workers=3, run_dir=tmp_path, listen="tcp://0.0.0.0:7100", advertise="10.0.0.5"
    )
    spec = config.worker_spec(3, "s" * 64)
    assert spec.listen == "tcp://0.0.0.0:7102"
    assert spec.advertise == "tcp://10.0.0.5:7102"
    plain = make_config("app:main", workers=2, run_dir=tmp_path, listen="tcp://127.0.0.1:7100")
    assert plain.worker_spec(1, "s").listen == "tcp://127.0.0.1:7100"
    assert plain.worker_spec(1, "s").advertise is None


@pytest.mark.parametrize(
    ("listen", "message"),
    [
        ("unix:///tmp/x.sock", r"`listen` must be 'tcp://HOST:PORT'"),
        ("tcp://127.0.0.1:0", r"`listen` needs a real port"),
        ("tcp://127.0.0.1:65535", r"leaves no room for 2 ports"),
        ("tcp://127.0.0.1", r"`listen`"),
    ],
)
def test_a_bad_listen_address_is_refused(listen: str, message: str) -> None:
    with pytest.raises(RunUsageError, match=message):
        make_config("app:main", workers=2, listen=listen)


def test_advertise_needs_listen_and_a_bare_host() -> None:
    with pytest.raises(RunUsageError, match=r"`advertise` '10.0.0.5' needs `listen`"):
        make_config("app:main", workers=1, advertise="10.0.0.5")
    with pytest.raises(RunUsageError, match=r"`advertise` must be the host"):
        make_config("app:main", workers=1, listen="tcp://0.0.0.0:7100", advertise="tcp://h:1")


def test_a_shared_secret_file_is_used_as_it_is_and_must_be_private(tmp_path: Path) -> None:
    secret = tmp_path / "cluster.secret"
    secret.write_text("x" * 40 + "\n")
    secret.chmod(0o644)
    with pytest.raises(RunUsageError, match=r"has mode 0644: other users could read it"):
        make_config("app:main", workers=1, secret_file=secret)
    secret.chmod(0o600)
    config = make_config("app:main", workers=1, run_dir=tmp_path / "run", secret_file=secret)
    run_dir = open_run_dir(config.run_dir, config.secret_file)
    try:
        assert run_dir.secret == "x" * 40
        assert run_dir.secret_file == secret
        assert not (tmp_path / "run" / "secret").exists()  # nothing generated
    finally:
        run_dir.close()
    secret.write_text("short")
    with pytest.raises(RunUsageError, match=r"holds 5 characters, at least 16"):
        make_config("app:main", workers=1, secret_file=secret)
    with pytest.raises(RunUsageError, match=r"cannot be read"):
        make_config("app:main", workers=1, secret_file=tmp_path / "missing")


def closed_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def held_port() -> Iterator[int]:
    """A TCP port on 127.0.0.1 something listens on for the test's length."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_wildcard_listen_needs_advertise() -> None:
    with pytest.raises(RunUsageError, match=r"is a wildcard address.*give `advertise`"):
        make_config("app:main", workers=2, listen="tcp://0.0.0.0:7100")
    with pytest.raises(RunUsageError, match=r"is a wildcard address"):
        make_config("app:main", workers=2, listen="tcp://[::]:7100")


def test_a_memory_coordinator_is_refused_for_several_workers(tmp_path: Path) -> None:
    with pytest.raises(RunUsageError, match=r"joins the systems of one process only, and 2 work"):
        make_config("app:main", workers=2, coordinator="memory://", run_dir=tmp_path)
    one = make_config("app:main", workers=1, coordinator="memory://", run_dir=tmp_path)
    assert one.coordinator == "memory://"


def test_a_sqlite_file_in_a_missing_directory_is_refused(tmp_path: Path) -> None:
    for option in ("store", "coordinator"):
        url = f"sqlite:///{tmp_path}/nope/x.db"
        config = make_config(
            "app:main",
            workers=1,
            run_dir=tmp_path,
            store=url if option == "store" else None,
            coordinator=url if option == "coordinator" else None,
        )
        with pytest.raises(RunUsageError, match=rf"`{option}` .*{tmp_path}/nope' does not exist"):
            check_environment(config, explicit=(option,))
    (tmp_path / "file").write_text("")
    config = make_config("app:main", workers=1, store=f"sqlite:///{tmp_path}/file/x.db")
    with pytest.raises(RunUsageError, match=r"is not a directory"):
        check_environment(config, explicit=("store",))
    # The defaults live in the run directory, which open_run_dir creates next.
    check_environment(make_config("app:main", workers=1, run_dir=tmp_path / "new"))


@pytest.mark.parametrize("scheme", ["postgresql", "redis"])
def test_an_unreachable_server_is_refused_within_the_connect_timeout(scheme: str) -> None:
    port = closed_port()
    url = (
        f"{scheme}://u@127.0.0.1:{port}/x"
        if scheme == "postgresql"
        else f"redis://127.0.0.1:{port}/0"
    )
    option = "store" if scheme == "postgresql" else "coordinator"
    config = make_config(
        "app:main",
        workers=1,
        store=url if option == "store" else None,
        coordinator=url if option == "coordinator" else None,
    )
    kind = "PostgreSQL" if scheme == "postgresql" else "Redis"
    with pytest.raises(
        RunUsageError,
        match=rf"`{option}`: cannot reach the {kind} server at 127.0.0.1:{port} "
        rf"\(127.0.0.1:{port}: "
        "Connection refused\\)",
    ):
        check_environment(config)


def test_a_reachable_server_passes(held_port: int) -> None:
    config = make_config("app:main", workers=1, store=f"postgresql://u@127.0.0.1:{held_port}/x")
    check_environment(config)  # accepts a connection: the check asks no more


@pytest.fixture
def held_after_a_free_port() -> Iterator[int]:
    """A held port P (as ``held_port``) whose neighbour P - 1 was free when it was taken:
    the first worker's port must be free for the check to reach the second's. Other
    processes (the suite runs in shards side by side) take ephemeral ports too, so the
    neighbour is looked at, not assumed free."""
    for _ in range(100):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            sock.listen()
            port: int = sock.getsockname()[1]
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port - 1))
                except OSError:
                    continue
            yield port
            return
    raise AssertionError("no held port with a free neighbour in 100 tries")


def test_a_listen_port_in_use_is_refused(held_after_a_free_port: int) -> None:
    held = held_after_a_free_port
    config = make_config("app:main", workers=2, listen=f"tcp://127.0.0.1:{held - 1}")
    with pytest.raises(RunUsageError, match=rf"`listen`: cannot listen on 127.0.0.1:{held}"):
        check_environment(config)


def bad_setting_cases(tmp: Path, held: int) -> list[list[str]]:
    closed = closed_port()
    return [
        ["--listen", "tcp://0.0.0.0:7100"],
        ["--store", f"sqlite:///{tmp}/missing/store.db"],
        ["--coordinator", f"sqlite:///{tmp}/missing/coordinator.db"],
        ["--coordinator", "memory://", "--workers", "2"],
        ["--store", f"postgresql://u@127.0.0.1:{closed}/app"],
        ["--coordinator", f"redis://127.0.0.1:{closed}/0"],
        ["--listen", f"tcp://127.0.0.1:{held}"],
    ]


@pytest.mark.parametrize(
    "case",
    range(7),
    ids=["wildcard", "store-dir", "coordinator-dir", "memory", "pg-down", "redis-down", "port"],
)
def test_each_bad_setting_is_one_line_and_exit_2_before_any_fork(
    tmp_path: Path, held_port: int, case: int
) -> None:
    (tmp_path / "app.py").write_text("async def main(system):\n    pass\n")
    args = bad_setting_cases(tmp_path, held_port)[case]
    result = subprocess.run(
        [sys.executable, "-m", "tocsin.cli", "run", "app:main", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines  # no traceback, no log of a started worker
    assert lines[0].startswith("tocsin run: `"), lines
    assert not (tmp_path / ".tocsin").exists()  # nothing was created, nothing forked


def test_a_port_template_gives_each_worker_its_port() -> None:
    from tocsin._run._metrics import expand_port_template

    assert expand_port_template("metrics", "127.0.0.1:91{worker:02d}", 3) == [
        ("127.0.0.1", 9101),
        ("127.0.0.1", 9102),
        ("127.0.0.1", 9103),
    ]
    assert expand_port_template("metrics", "[::1]:{worker}000", 2) == [("::1", 1000), ("::1", 2000)]
    assert expand_port_template("metrics", "127.0.0.1:9100", 1) == [("127.0.0.1", 9100)]
    assert expand_port_template("metrics", "127.0.0.1:0", 2) == [("127.0.0.1", 0)] * 2


@pytest.mark.parametrize(
    ("template", "workers", "message"),
    [
        (
            "127.0.0.1:9100",
            2,
            r"gives all 2 workers one port; each needs its own: write \{worker\}",
        ),
        ("127.0.0.1:9{n}", 2, r"the only field is \{worker\}, not \{n\}"),
        ("127.0.0.1:9{worker", 2, r"must be HOST:PORT"),
        ("9100{worker}", 2, r"worker 1: '91001'"),
        ("127.0.0.1:7{worker}0000", 1, r"worker 1: '127.0.0.1:710000'"),
        ("127.0.0.1:91{worker:.0s}", 2, r"must be HOST:PORT"),
    ],
)
def test_a_bad_port_template_is_refused(template: str, workers: int, message: str) -> None:
    with pytest.raises(RunUsageError, match=message):
        make_config("app:main", workers=workers, metrics=template, metrics_public=True)


def test_operator_ports_must_not_collide(tmp_path: Path) -> None:
    with pytest.raises(RunUsageError, match=r"`console` gives worker 1 port 9101, which `metrics`"):
        make_config(
            "app:main",
            workers=2,
            metrics="127.0.0.1:91{worker:02d}",
            console="127.0.0.1:91{worker:02d}",
            metrics_public=True,
        )
    with pytest.raises(RunUsageError, match=r"`metrics` gives worker 1 port 7101, which `listen`"):
        make_config(
            "app:main",
            workers=2,
            listen="tcp://127.0.0.1:7100",
            metrics="127.0.0.1:71{worker:02d}",
            metrics_public=True,
        )
    config = make_config(
        "app:main",
        workers=2,
        metrics="127.0.0.1:91{worker:02d}",
        console="127.0.0.1:88{worker:02d}",
        metrics_public=True,
    )
    assert config.worker_spec(2, "s").metrics == ("127.0.0.1", 9102)
    assert config.worker_spec(2, "s").console == "127.0.0.1:8802"
    assert ("metrics", "127.0.0.1", 9101) in config.tcp_ports()


def test_a_console_off_loopback_takes_a_token_file_or_makes_one(tmp_path: Path) -> None:
    # Without a token file each worker's console makes its own token (printed in the
    # worker's ready line, as the console does everywhere): nothing is served bare.
    bare = make_config("app:main", workers=1, console="0.0.0.0:8801")
    assert bare.worker_spec(1, "s").console_token is None
    token = tmp_path / "token"
    token.write_text("t" * 32)
    token.chmod(0o600)
    config = make_config("app:main", workers=1, console="0.0.0.0:8801", console_token_file=token)
    assert config.worker_spec(1, "s").console_token == "t" * 32
    assert "t" * 32 not in repr(config)
    token.chmod(0o644)
    with pytest.raises(RunUsageError, match=r"`console_token_file` .* has mode 0644"):
        make_config("app:main", workers=1, console="0.0.0.0:8801", console_token_file=token)
    with pytest.raises(RunUsageError, match=r"`console_token_file` was given without `console`"):
        make_config("app:main", workers=1, console_token_file=token)


def test_a_metrics_port_in_use_is_refused(held_port: int) -> None:
    config = make_config(
        "app:main", workers=1, metrics=f"127.0.0.1:{held_port}", metrics_public=True
    )
    with pytest.raises(RunUsageError, match=rf"`metrics`: cannot listen on 127.0.0.1:{held_port}"):
        check_environment(config)


@pytest.mark.parametrize("bits", [0o770, 0o707, 0o777, 0o1777])
def test_a_run_dir_others_can_write_is_refused(tmp_path: Path, bits: int) -> None:
    path = tmp_path / "run"
    path.mkdir()
    path.chmod(bits)
    with pytest.raises(RunUsageError, match=rf"has mode {bits & 0o777:04o}.*chmod 700"):
        open_run_dir(path)
    assert not (path / "arbiter.lock").exists()


def test_a_run_dir_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the directory to another user")
    path = tmp_path / "run"
    path.mkdir(mode=0o700)
    os.chown(path, 65534, 65534)
    with pytest.raises(RunUsageError, match=r"belongs to uid 65534.*must be yours"):
        open_run_dir(path)
    assert not (path / "arbiter.lock").exists()


def test_a_run_dir_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "run"
    link.symlink_to(real)
    with pytest.raises(RunUsageError, match="is a symbolic link"):
        open_run_dir(link)
    open_run_dir(real).close()


def test_a_planted_arbiter_lock_symlink_is_refused_and_its_target_not_truncated(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    path = tmp_path / "run"
    path.mkdir(mode=0o700)
    (path / "arbiter.lock").symlink_to(victim)
    with pytest.raises(RunUsageError, match=r"arbiter\.lock is a symbolic link"):
        open_run_dir(path)
    assert victim.read_text() == "keep me"


def test_a_hard_linked_arbiter_lock_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    path = tmp_path / "run"
    path.mkdir(mode=0o700)
    os.link(victim, path / "arbiter.lock")
    with pytest.raises(RunUsageError, match="hard links"):
        open_run_dir(path)
    assert victim.read_text() == "keep me"


def test_metrics_ask_a_token_unless_made_public(tmp_path: Path) -> None:
    with pytest.raises(RunUsageError, match=r"asks a token: give --metrics-token-file"):
        make_config("app:main", workers=1, metrics="127.0.0.1:9101")
    token = tmp_path / "metrics.token"
    token.write_text("m" * 32)
    token.chmod(0o600)
    own = make_config("app:main", workers=1, metrics="127.0.0.1:9101", metrics_token_file=token)
    assert own.worker_spec(1, "s").metrics_token == "m" * 32
    assert "m" * 32 not in repr(own)
    console_token = tmp_path / "console.token"
    console_token.write_text("c" * 32)
    console_token.chmod(0o600)
    shared = make_config(
        "app:main",
        workers=1,
        metrics="127.0.0.1:9101",
        console="127.0.0.1:8801",
        console_token_file=console_token,
    )
    assert shared.worker_spec(1, "s").metrics_token == "c" * 32
    public = make_config("app:main", workers=1, metrics="127.0.0.1:9101", metrics_public=True)
    assert public.worker_spec(1, "s").metrics_token is None
    with pytest.raises(RunUsageError, match="both given"):
        make_config(
            "app:main",
            workers=1,
            metrics="127.0.0.1:9101",
            metrics_token_file=token,
            metrics_public=True,
        )
    with pytest.raises(RunUsageError, match="`metrics_public` was given without `metrics`"):
        make_config("app:main", workers=1, metrics_public=True)


async def test_the_metrics_endpoint_asks_its_token_and_bounds_strangers() -> None:
    import asyncio

    import aiohttp

    from tocsin import ActorSystem
    from tocsin._run._metrics import MAX_CONNECTIONS, serve_metrics

    async with ActorSystem() as system:
        server = await serve_metrics(system, "127.0.0.1", 0, token="m" * 32)
        try:
            async with aiohttp.ClientSession() as http:
                async with http.get(server.url) as r:
                    assert r.status == 401
                    assert r.headers["WWW-Authenticate"] == 'Bearer realm="tocsin metrics"'
                async with http.get(server.url, headers={"Authorization": "Bearer nope"}) as r:
                    assert r.status == 401
                idle = [
                    await asyncio.open_connection("127.0.0.1", int(server.url.split(":")[2][:-8]))
                    for _ in range(MAX_CONNECTIONS + 5)
                ]
                try:
                    for _ in range(100):
                        if server.refused >= 5:
                            break
                        await asyncio.sleep(0.01)
                    assert server.refused >= 5
                finally:
                    for _, writer in idle:
                        writer.close()
                for _ in range(100):
                    async with http.get(
                        server.url, headers={"Authorization": "Bearer " + "m" * 32}
                    ) as r:
                        if r.status == 200:
                            assert "tocsin_" in await r.text()
                            break
                    await asyncio.sleep(0.01)
                else:
                    pytest.fail("the endpoint never answered once the strangers left")
            assert server.unauthorized == 2
        finally:
            await server.close()
