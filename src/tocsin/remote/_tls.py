# SPDX-License-Identifier: Apache-2.0
"""Mutual TLS contexts from the certificate files of a :class:`~tocsin.Remoting`."""

from __future__ import annotations

import ssl

from ._config import Remoting

__all__ = ["ssl_contexts"]


def ssl_contexts(config: Remoting) -> tuple[ssl.SSLContext | None, ssl.SSLContext | None]:
    """Mutual TLS contexts from the certificate files, or ``(None, None)``.

    Both sides present a certificate and require one that chains to ``tls_ca``. Host
    names are not checked (nodes are dialled by IP or socket path; the CA is the
    deployment's own): the CA decides who is a peer.
    """
    if not config.tls:
        return None, None
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(config.tls_ca))
    server.load_cert_chain(str(config.tls_cert), str(config.tls_key))
    server.verify_mode = ssl.CERT_REQUIRED
    client = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(config.tls_ca))
    client.load_cert_chain(str(config.tls_cert), str(config.tls_key))
    client.check_hostname = False
    client.verify_mode = ssl.CERT_REQUIRED
    return server, client
