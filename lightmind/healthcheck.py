"""``python -m lightmind.healthcheck ADDRESS [SERVICE]``: exit 0 when the server is SERVING.

The container health check in compose and the Dockerfile; also handy by hand. Exit codes:
0 SERVING, 1 reachable but not serving, 2 unreachable or bad usage.
"""

from __future__ import annotations

import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def check(address: str, service: str = "", timeout: float = 3.0) -> int:
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError as exc:
            print(f"{address}: {exc.code().name}", file=sys.stderr)
            return 2
    serving = reply.status == health_pb2.HealthCheckResponse.SERVING
    print(f"{address}: {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}")
    return 0 if serving else 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not 1 <= len(args) <= 2:
        print("usage: python -m lightmind.healthcheck HOST:PORT [SERVICE]", file=sys.stderr)
        return 2
    return check(args[0], args[1] if len(args) == 2 else "")


if __name__ == "__main__":
    raise SystemExit(main())
