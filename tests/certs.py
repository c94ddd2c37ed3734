# SPDX-License-Identifier: Apache-2.0
"""Throw-away certificates for the TLS tests (the ``openssl`` command; no Python deps)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def make_certs(directory: Path, name: str = "ca") -> dict[str, Path]:
    """A throw-away CA and one node certificate signed by it (openssl CLI)."""
    openssl = shutil.which("openssl")
    assert openssl, "the openssl command is needed to make test certificates"

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=directory, check=True, capture_output=True, timeout=60)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        f"/CN={name}",
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.pem",
    )
    run(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=node",
        "-keyout",
        f"{name}-node.key",
        "-out",
        f"{name}-node.csr",
    )
    run(
        "x509",
        "-req",
        "-in",
        f"{name}-node.csr",
        "-CA",
        f"{name}.pem",
        "-CAkey",
        f"{name}.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-out",
        f"{name}-node.pem",
    )
    return {
        "tls_cert": directory / f"{name}-node.pem",
        "tls_key": directory / f"{name}-node.key",
        "tls_ca": directory / f"{name}.pem",
    }
