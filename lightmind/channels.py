"""Channels for calls from one service to another (and from the CLI): one way to open them.

``open_channel`` applies what every outgoing hop needs: TLS when a CA bundle is configured,
the message size limit, keepalive, quick reconnects, and the tracing interceptors that carry
trace context.
Callers still pass a deadline (``ClientConfig.call_timeout_seconds``) and
``tenancy.forward_metadata()`` on each call.
"""

from __future__ import annotations

from pathlib import Path

import grpc

from lightmind import tracing


def open_channel(
    address: str,
    *,
    tls_ca_file: Path | None = None,
    max_message_bytes: int = 16 * 1024 * 1024,
) -> grpc.aio.Channel:
    options = [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 10_000),
        # Reconnect quickly once a restarted peer is back, instead of gRPC's default of
        # backing off for up to two minutes.
        ("grpc.initial_reconnect_backoff_ms", 200),
        ("grpc.min_reconnect_backoff_ms", 200),
        ("grpc.max_reconnect_backoff_ms", 2000),
    ]
    interceptors = tracing.client_interceptors()
    if tls_ca_file is not None:
        credentials = grpc.ssl_channel_credentials(root_certificates=tls_ca_file.read_bytes())
        return grpc.aio.secure_channel(
            address, credentials, options=options, interceptors=interceptors
        )
    return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)
