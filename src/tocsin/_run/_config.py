# SPDX-License-Identifier: Apache-2.0
"""What one ``tocsin run`` needs before any worker starts: the checked configuration, the
loaded ``main``, the run directory (locked, with its per-run secret) and the log format.

Everything here runs in the arbiter, before the first fork, so every mistake is reported
once, as one line, instead of N times by crash-looping workers.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import math
import os
import secrets
import sys
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..cluster import Cluster
from ..errors import InvalidCoordinatorURLError, InvalidStoreURLError
from ..stores import open_store
from ..stores._spi import open_lock_file, redact
from . import _worker
from ._checks import check_bindable, check_reachable, check_sqlite_directory
from ._errors import RunUsageError
from ._metrics import expand_port_template
from ._net import check_advertise, check_listen, read_secret_file, tcp_host_port
from ._worker import ActorSystem

__all__ = [
    "MAX_WORKERS_PER_CORE",
    "MainFunc",
    "RunConfig",
    "RunDir",
    "RunUsageError",
    "check_environment",
    "check_run_dir",
    "default_workers",
    "make_config",
    "open_run_dir",
    "set_log_role",
    "setup_logging",
]

MainFunc = Callable[[ActorSystem], Coroutine[Any, Any, None]]

#: ``workers`` above this many per core (:func:`default_workers`) is refused unless
#: ``allow_many_workers`` (``--allow-many-workers``): a typo such as ``--workers 10000``
#: would otherwise fork thousands of processes. Four leaves room for I/O-bound workers.
MAX_WORKERS_PER_CORE: Final = 4
#: ``--listen`` hosts that bind every interface: no other node can dial them.
WILDCARD_HOSTS: Final = frozenset({"0.0.0.0", "::", "[::]", ""})
#: Linux ``sun_path`` holds 108 bytes including the NUL; a longer socket path cannot bind.
MAX_SOCKET_PATH: Final = 107
LOG_FORMAT: Final = (
    "%(asctime)s [%(tocsin_role)s pid %(process)d] %(levelname)s %(name)s: %(message)s"
)


@dataclass(frozen=True, slots=True)
class RunConfig:
    """The checked settings of one run (see :func:`tocsin.run` for each field's meaning).

    Every worker uses the same ``store`` and ``coordinator``.
    """

    target: str
    workers: int
    name: str
    run_dir: Path
    store: str
    coordinator: str
    stop_timeout: float
    restart_backoff: tuple[float, float]
    #: Classes remoting lets cross between workers, or their ``"module:ATTR"`` name
    #: (imported by each worker after its fork, like ``target``).
    messages: str | tuple[type, ...] = ()
    #: Off only in the test of the portable fallback (the pipe the workers watch).
    parent_death_signal: bool = True
    #: ``tcp://HOST:PORT``: worker n listens on PORT + n - 1 (None: Unix sockets).
    listen: str | None = None
    #: The host other machines dial (worker n: ``tcp://ADVERTISE:PORT + n - 1``).
    advertise: str | None = None
    #: A secret file shared by the machines of one cluster (None: a fresh secret per run).
    secret_file: Path | None = None
    #: ``(host, port)`` of each worker's Prometheus endpoint, worker 1 first (``--metrics``).
    metrics: tuple[tuple[str, int], ...] = ()
    #: ``(host, port)`` of each worker's web console, worker 1 first (``--console``).
    console: tuple[tuple[str, int], ...] = ()
    #: The consoles' token (``--console-token-file``); in memory only, like the secret.
    console_token: str | None = field(default=None, repr=False)
    #: The token ``/metrics`` asks (``Authorization: Bearer``): ``--metrics-token-file``,
    #: else the consoles' token; None only with ``metrics_public``.
    metrics_token: str | None = field(default=None, repr=False)

    def tcp_ports(self) -> list[tuple[str, str, int]]:
        """``(option, host, port)`` of every TCP port the workers will listen on."""
        ports = []
        if self.listen is not None:
            host, port = tcp_host_port(self.listen)
            ports += [("listen", host, port + n) for n in range(self.workers)]
        ports += [("metrics", host, port) for host, port in self.metrics if port]
        ports += [("console", host, port) for host, port in self.console if port]
        return ports

    def worker_spec(self, number: int, secret: str) -> _worker.WorkerSpec:
        """The settings of worker ``number`` (1-based)."""
        listen = f"unix://{self.run_dir / f'worker-{number}.sock'}"
        advertise = None
        if self.listen is not None:
            host, port = tcp_host_port(self.listen)
            listen = f"tcp://{host}:{port + number - 1}"
            if self.advertise is not None:
                advertise = f"tcp://{self.advertise}:{port + number - 1}"
        return _worker.WorkerSpec(
            number=number,
            name=f"{self.name}-{number}",
            store=self.store,
            listen=listen,
            advertise=advertise,
            coordinator=self.coordinator,
            secret=secret,
            stop_timeout=self.stop_timeout,
            metrics=self.metrics[number - 1] if self.metrics else None,
            console=_bind(self.console[number - 1]) if self.console else None,
            console_token=self.console_token,
            metrics_token=self.metrics_token,
        )


def default_workers() -> int:
    """One worker per core this process may run on (the CPU affinity mask, not the host)."""
    with contextlib.suppress(AttributeError, OSError):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def make_config(
    target: str,
    *,
    workers: int | None = None,
    name: str = "tocsin",
    store: str | None = None,
    coordinator: str | None = None,
    run_dir: str | os.PathLike[str] | None = None,
    stop_timeout: float = 10.0,
    restart_backoff: tuple[float, float] = (0.5, 30.0),
    messages: str | Iterable[type] = (),
    listen: str | None = None,
    advertise: str | None = None,
    secret_file: str | os.PathLike[str] | None = None,
    allow_many_workers: bool = False,
    metrics: str | None = None,
    console: str | None = None,
    console_token_file: str | os.PathLike[str] | None = None,
    metrics_token_file: str | os.PathLike[str] | None = None,
    metrics_public: bool = False,
) -> RunConfig:
    """Check every argument and fill in the defaults.

    Raises:
        RunUsageError: an argument is wrong (the message names it and what is allowed).
    """
    if workers is None:
        workers = default_workers()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise RunUsageError(f"`workers` must be a positive int, got {workers!r}")
    cores = default_workers()
    if workers > MAX_WORKERS_PER_CORE * cores and not allow_many_workers:
        raise RunUsageError(
            f"`workers` {workers} is more than {MAX_WORKERS_PER_CORE} per core "
            f"({MAX_WORKERS_PER_CORE * cores} for the {cores} core(s) this process may use); "
            "pass --allow-many-workers (tocsin.run(..., allow_many_workers=True)) if you "
            "mean it"
        )
    _check_open_files(workers)
    if not isinstance(name, str) or not name or "/" in name or name.strip() != name:
        raise RunUsageError(f"`name` must be a non-empty str without '/' or spaces, got {name!r}")
    _check_seconds("stop_timeout", stop_timeout)
    if not isinstance(restart_backoff, tuple | list) or len(restart_backoff) != 2:
        raise RunUsageError(
            f"`restart_backoff` must be a (min, max) pair of seconds, got {restart_backoff!r}"
        )
    low, high = restart_backoff
    _check_seconds("restart_backoff[0]", low)
    _check_seconds("restart_backoff[1]", high)
    if high < low:
        raise RunUsageError(
            f"`restart_backoff` must be (min, max) with min <= max, got {restart_backoff!r}"
        )
    directory = Path(run_dir if run_dir is not None else Path.cwd() / ".tocsin" / name).absolute()
    longest = directory / f"worker-{workers}.sock"
    if len(os.fsencode(longest)) > MAX_SOCKET_PATH:
        raise RunUsageError(
            f"`run_dir` is too long for Unix socket paths ({len(os.fsencode(longest))} bytes "
            f"for {longest}, at most {MAX_SOCKET_PATH}); choose a shorter run directory"
        )
    if coordinator is None:
        coordinator = f"sqlite:///{directory / 'coordinator.db'}"
    if store is None:
        store = f"sqlite:///{directory / 'store.db'}"
    elif "{worker}" in store:
        # Earlier releases kept one store per worker; now the workers are one cluster and
        # an identity moves between them, so its state must be in the store they share.
        raise RunUsageError(
            f"`store` {redact(store)!r} contains {{worker}}: the workers share one durable store "
            "(an identity may move from one worker to another); give one URL without "
            "{worker}, e.g. sqlite:///data/app.db or postgresql://db/app"
        )
    elif workers > 1 and (store.startswith("memory:") or ":memory:" in store):
        raise RunUsageError(
            f"`store` {redact(store)!r} is private to each process, and {workers} workers must "
            "share their durable store; use a SQLite file or PostgreSQL, or run 1 worker"
        )
    try:
        open_store(store)  # validates; opens nothing
    except InvalidStoreURLError as exc:
        raise RunUsageError(f"`store`: {exc}") from None
    if listen is not None:
        check_listen(listen, workers)
    if advertise is not None:
        check_advertise(advertise, listen)
    elif listen is not None and tcp_host_port(listen)[0] in WILDCARD_HOSTS:
        raise RunUsageError(
            f"`listen` {listen!r} is a wildcard address, which other nodes cannot dial: "
            "give `advertise` (--advertise HOST), the host the others reach this machine at"
        )
    secret_path = None
    if secret_file is not None:
        secret_path = Path(secret_file).absolute()
        read_secret_file(secret_path)  # checked now: one error line, not N failing workers
    try:
        Cluster(coordinator=coordinator)  # validates the URL; connects to nothing
    except InvalidCoordinatorURLError as exc:
        raise RunUsageError(f"`coordinator`: {exc}") from None
    if workers > 1 and coordinator.lower().startswith("memory:"):
        raise RunUsageError(
            f"`coordinator` {redact(coordinator)!r} joins the systems of one process only, and "
            f"{workers} workers are {workers} processes (each would be a cluster of its own, "
            "running every durable identity and cron tick once per worker); use a SQLite "
            "file (the default), PostgreSQL or Redis, or run 1 worker"
        )
    metrics_binds, console_binds, console_token = _check_operator_ports(
        workers, listen, metrics, console, console_token_file
    )
    metrics_token = _metrics_token(metrics, metrics_token_file, metrics_public, console_token)
    return RunConfig(
        target=target,
        workers=workers,
        name=name,
        run_dir=directory,
        store=store,
        coordinator=coordinator,
        stop_timeout=float(stop_timeout),
        restart_backoff=(float(low), float(high)),
        messages=messages if isinstance(messages, str) else tuple(messages),
        listen=listen,
        advertise=advertise,
        secret_file=secret_path,
        metrics=metrics_binds,
        console=console_binds,
        console_token=console_token,
        metrics_token=metrics_token,
    )


def _metrics_token(
    metrics: str | None,
    token_file: str | os.PathLike[str] | None,
    public: bool,
    console_token: str | None,
) -> str | None:
    """The token ``--metrics`` asks, by the rule of docs/security.md: metrics name every
    schedule reference and durable kind, so they need a token unless the operator says
    they are public.

    Raises:
        RunUsageError: a token option without ``metrics``, both a token and
            ``metrics_public``, or ``metrics`` with neither (nor a console token).
    """
    if not isinstance(public, bool):
        raise RunUsageError(f"`metrics_public` must be a bool, got {public!r}")
    if metrics is None:
        if token_file is not None or public:
            given = "metrics_token_file" if token_file is not None else "metrics_public"
            raise RunUsageError(f"`{given}` was given without `metrics`")
        return None
    if token_file is not None and public:
        raise RunUsageError("`metrics_token_file` and `metrics_public` were both given: choose one")
    if token_file is not None:
        return read_secret_file(Path(token_file).absolute(), "metrics_token_file")
    if public:
        return None
    if console_token is not None:
        return console_token
    raise RunUsageError(
        "`metrics` names every schedule reference and durable kind, so it asks a token: "
        "give --metrics-token-file PATH (Prometheus sends it with "
        "authorization: {credentials_file: PATH}), or --console-token-file to share the "
        "consoles' token, or --metrics-public to serve it to anyone who can connect"
    )


def _bind(address: tuple[str, int]) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _check_operator_ports(
    workers: int,
    listen: str | None,
    metrics: str | None,
    console: str | None,
    console_token_file: str | os.PathLike[str] | None,
) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...], str | None]:
    """Expand and check ``--metrics`` / ``--console`` (their extras installed, no port
    taken twice, the console's token rule); return the binds and the console token."""
    metrics_binds = tuple(expand_port_template("metrics", metrics, workers)) if metrics else ()
    console_binds = tuple(expand_port_template("console", console, workers)) if console else ()
    if metrics is not None:
        try:
            import prometheus_client  # noqa: F401
        except ImportError:
            raise RunUsageError(
                "`metrics` needs prometheus_client: pip install 'tocsin[metrics]'"
            ) from None
    token = None
    if console_token_file is not None:
        if console is None:
            raise RunUsageError("`console_token_file` was given without `console`")
        token = read_secret_file(Path(console_token_file).absolute(), "console_token_file")
    if console is not None:
        try:
            from ..console import check_options
        except ImportError:
            raise RunUsageError("`console` needs aiohttp: pip install 'tocsin[console]'") from None
        for address in console_binds:
            try:
                check_options(_bind(address), token)
            except ValueError as exc:
                hint = " (give --console-token-file)" if token is None else ""
                raise RunUsageError(f"`console`: {exc}{hint}") from None
    taken: dict[int, str] = {}
    if listen is not None:
        first = tcp_host_port(listen)[1]
        taken.update({first + n: f"`listen` (worker {n + 1})" for n in range(workers)})
    for option, binds in (("metrics", metrics_binds), ("console", console_binds)):
        for number, (_, port) in enumerate(binds, 1):
            if port and port in taken:
                raise RunUsageError(
                    f"`{option}` gives worker {number} port {port}, which {taken[port]} "
                    "takes already; choose ports apart"
                )
            if port:
                taken[port] = f"`{option}` (worker {number})"
    return metrics_binds, console_binds, token


#: Descriptors the arbiter holds besides one per worker (its pipes, the lock, logs).
_ARBITER_FDS: Final = 32


def _check_open_files(workers: int) -> None:
    """The arbiter holds one descriptor per worker (its status socket): ``workers`` must
    fit the open-files limit (``ulimit -n``), or the last forks would fail one by one."""
    soft = None
    with contextlib.suppress(ImportError, OSError, ValueError):  # no such limit here
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY:
            soft = None
    if soft is not None and workers + _ARBITER_FDS > soft:
        raise RunUsageError(
            f"`workers` {workers} needs {workers + _ARBITER_FDS} open files in the "
            f"arbiter, and its limit is {soft}; raise it (ulimit -n, systemd's "
            "LimitNOFILE=) or run fewer workers"
        )


def check_environment(config: RunConfig, *, explicit: tuple[str, ...] = ()) -> None:
    """What :func:`make_config` cannot see in the arguments alone, checked in the arbiter
    before any fork (``_checks``): the directory of a SQLite ``store`` or
    ``coordinator`` the user named (``explicit``: the defaults are in the run directory,
    created next), that a PostgreSQL or Redis server accepts a connection, and that every
    TCP port a worker will listen on is free.

    Raises:
        RunUsageError: the first problem found, as one line.
    """
    for option in ("store", "coordinator"):
        url = getattr(config, option)
        if option in explicit:
            check_sqlite_directory(option, url)
        check_reachable(option, url)
    for option, host, port in config.tcp_ports():
        check_bindable(option, host, port)


def _check_seconds(name: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise RunUsageError(f"`{name}` must be a positive finite number of seconds, got {value!r}")


@dataclass(frozen=True, slots=True)
class RunDir:
    """An open run directory: its lock is held (by the arbiter and, inherited, its workers)."""

    path: Path
    lock_fd: int
    secret: str
    secret_file: Path

    def close(self) -> None:
        os.close(self.lock_fd)


def check_run_dir(path: Path) -> None:
    """Refuse a run directory another user could write into.

    Raises:
        RunUsageError: not a directory, a symbolic link, owned by another user, or
            writable by group or others (the message says how to fix it).
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        # Linux says ENOTDIR for a symlink opened with O_DIRECTORY | O_NOFOLLOW.
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise RunUsageError(
                f"`run_dir` {str(path)!r} is a symbolic link; name the real directory "
                f"({os.path.realpath(path)}) so nobody can swap it"
            ) from None
        if exc.errno == errno.ENOTDIR:
            raise RunUsageError(f"`run_dir` {str(path)!r} is not a directory") from None
        raise RunUsageError(f"`run_dir` {str(path)!r} cannot be opened: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    me = os.geteuid()
    if info.st_uid != me:
        raise RunUsageError(
            f"`run_dir` {str(path)!r} belongs to uid {info.st_uid}, and this run is uid {me}: "
            "a run directory holds the secret, the lock and the sockets, so it must be "
            "yours; choose another one (or remove it and let tocsin create it, mode 0700)"
        )
    if info.st_mode & 0o022:
        raise RunUsageError(
            f"`run_dir` {str(path)!r} has mode {info.st_mode & 0o777:04o}: other users can "
            f"create files in it (a symlink, a socket); make it yours only (chmod 700 {path})"
        )


def open_run_dir(path: Path, secret_file: Path | None = None) -> RunDir:
    """Create (mode 0700) or reuse the run directory, lock it, write a fresh secret.

    With ``secret_file`` (machines of one cluster share it) that file's secret is used
    instead, and nothing is written.

    The lock (``flock`` on ``arbiter.lock``) is released by the kernel when the arbiter
    and every worker that inherited it have exited, so a run killed with SIGKILL never
    blocks the next one, and a second ``tocsin run`` on the same directory is refused
    while the first (or one of its workers) still lives.

    The secret is 32 random bytes as hex, written to ``secret`` with mode 0600 (created
    that way; an older file is truncated and re-moded). Workers get it through ``fork``
    (their memory), never through argv or the environment; the file is for tools run by
    the same user that must reach the workers.

    The directory is ours (docs/security.md, "Files are ours"): one that exists must
    belong to this user and be writable by nobody else, or another local user could plant
    a symlink or a socket in it; it is never a symlink itself, and ``arbiter.lock`` is
    opened with ``O_NOFOLLOW`` (a planted link makes the run fail, never truncates the
    file it points to).

    Raises:
        RunUsageError: the directory cannot be created, is not a directory, is a symbolic
            link, belongs to another user or is writable by group or others, or is in
            use; or ``arbiter.lock`` is not a regular file of ours.
    """
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise RunUsageError(f"`run_dir` {str(path)!r} cannot be created: {exc.strerror}") from None
    check_run_dir(path)
    lock_path = path / "arbiter.lock"
    try:
        fd = open_lock_file(str(lock_path))
    except OSError as exc:
        raise RunUsageError(f"`run_dir` {str(path)!r}: {lock_path.name} {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise RunUsageError(
            f"`run_dir` {str(path)!r} is in use by another tocsin run (pid {holder}); "
            "stop it or choose another run directory"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    if secret_file is not None:
        try:
            shared = read_secret_file(secret_file)
        except RunUsageError:
            os.close(fd)
            raise
        return RunDir(path=path, lock_fd=fd, secret=shared, secret_file=secret_file)
    secret = secrets.token_hex(32)
    secret_file = path / "secret"
    sfd = os.open(
        secret_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )
    try:
        os.fchmod(sfd, 0o600)  # an older file may have been made with other bits
        os.write(sfd, secret.encode() + b"\n")
    finally:
        os.close(sfd)
    return RunDir(path=path, lock_fd=fd, secret=secret, secret_file=secret_file)


# -- logs: every line says who wrote it ------------------------------------------------

_role = "arbiter"
_factory_installed = False


def set_log_role(role: str) -> None:
    """Name this process in every log record (``%(tocsin_role)s``): "arbiter", "worker 2"."""
    global _role, _factory_installed
    _role = role
    if _factory_installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        record.tocsin_role = _role
        return record

    logging.setLogRecordFactory(factory)
    _factory_installed = True


def setup_logging(level: int | str = logging.INFO, *, force: bool = False) -> None:
    """Log to stderr with the role and pid on every line, unless logging is configured.

    ``force`` replaces an existing configuration (the ``tocsin run`` command does).
    """
    set_log_role(_role)
    root = logging.getLogger()
    if root.handlers and not force:
        return
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr, force=True)
