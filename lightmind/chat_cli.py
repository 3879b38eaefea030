"""``lightmind chat``: talk to an agent from a terminal, with the answer streamed as it comes.

Creates (or reuses) a session for the agent and user, then sends each line typed (or the
``-m`` messages) as a Chat turn, printing text deltas as they arrive, tool calls and results
as bracketed notes, and a clarifying question with its marker; the next line answers it.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path
from typing import Any, TextIO

import grpc

from lightmind.agent.v1 import agent_service_pb2 as pb
from lightmind.agent.v1 import agent_service_pb2_grpc as pb_grpc
from lightmind.channels import open_channel

USER_NAMESPACE = uuid.UUID("0b5c7c38-3f0e-4c55-9c1a-9d8f2d1e4a77")


def user_id(value: str) -> str:
    """A UUID as given, or a stable UUID derived from a user name."""
    if not value:
        return ""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return str(uuid.uuid5(USER_NAMESPACE, value))


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    chat = commands.add_parser("chat", help="chat with an agent (streamed)")
    chat.add_argument("--agent", required=True, help="agent name or id")
    chat.add_argument("--session", help="continue this session id")
    chat.add_argument("--user", default=os.environ.get("USER", ""), help="user name or UUID")
    chat.add_argument("-m", "--message", action="append", help="send this message (repeatable)")
    chat.add_argument("--addr", default=os.environ.get("LIGHTMIND_AGENT_ADDR", "127.0.0.1:50054"))
    chat.add_argument("--api-key", default=os.environ.get("LIGHTMIND_API_KEY", ""))
    chat.add_argument("--verbose", action="store_true", help="show context and tool results")
    chat.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    try:
        return asyncio.run(_chat(args, sys.stdin, sys.stdout))
    except grpc.aio.AioRpcError as exc:
        print(f"error: {exc.code().name}: {exc.details()}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


async def _chat(args: argparse.Namespace, stdin: TextIO, out: TextIO) -> int:
    metadata = (("authorization", f"Bearer {args.api_key}"),) if args.api_key else ()
    ca = os.environ.get("LIGHTMIND_TLS_CA_FILE")
    async with open_channel(args.addr, tls_ca_file=Path(ca) if ca else None) as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        if args.session:
            session = await stub.GetSession(
                pb.GetSessionRequest(session_id=args.session), metadata=metadata
            )
        else:
            session = await stub.CreateSession(
                pb.CreateSessionRequest(
                    session=pb.Session(agent_id=args.agent, user_id=user_id(args.user))
                ),
                metadata=metadata,
            )
        out.write(f"session {session.session_id}\n")
        if session.state == pb.SESSION_STATE_AWAITING_CLARIFICATION:
            out.write(f"? {session.pending_question}\n")
        out.flush()
        messages = args.message
        interactive = messages is None
        while True:
            if interactive:
                out.write("> ")
                out.flush()
                line = stdin.readline()
                if not line:
                    out.write("\n")
                    return 0
                text = line.strip()
                if not text:
                    continue
                if text in ("/quit", "/exit"):
                    return 0
            else:
                if not messages:
                    return 0
                text = messages.pop(0)
                out.write(f"> {text}\n")
            await _turn(stub, session.session_id, text, metadata, out, args.verbose)


async def _turn(
    stub: pb_grpc.AgentServiceStub,
    session_id: str,
    text: str,
    metadata: tuple[tuple[str, str], ...],
    out: TextIO,
    verbose: bool,
) -> None:
    streamed = False
    request = pb.ChatRequest(session_id=session_id, message=text, request_id=str(uuid.uuid4()))
    stream: Any = stub.Chat(request, metadata=metadata)  # an aio stream; the stubs type it sync
    async for event in stream:
        kind = event.WhichOneof("event")
        if kind == "text_delta":
            out.write(event.text_delta.text)
            streamed = True
        elif kind == "context_retrieved" and verbose:
            out.write(f"[context: {len(event.context_retrieved.items)} memories]\n")
        elif kind == "skill_loaded":
            out.write(f"[skill loaded: {event.skill_loaded.skill}]\n")
        elif kind == "tool_call" and event.tool_call.call.name not in ("ask_user", "load_skill"):
            out.write(f"[tool: {event.tool_call.call.name}]\n")
        elif kind == "tool_result" and verbose:
            marker = "error" if event.tool_result.is_error else "result"
            out.write(f"[{marker}: {event.tool_result.content[:200]}]\n")
        elif kind == "clarification_requested":
            out.write(
                f"{'' if not streamed else chr(10)}? {event.clarification_requested.question}\n"
            )
        elif kind == "final_answer":
            if not streamed:
                out.write(event.final_answer.text)
            out.write("\n")
            if event.final_answer.reason == pb.FINISH_REASON_MAX_ITERATIONS:
                out.write("[stopped at the iteration limit]\n")
        elif kind == "error":
            out.write(f"\n[error {event.error.code}: {event.error.message}]\n")
        out.flush()
