"""A server built with the Python SDK (`mcp`, pinned in requirements.txt), for modelctx's
`conformance-client --interop` to drive. `cargo xtask interop` runs:

    python py-server.py http <port>   streamable HTTP at http://127.0.0.1:<port>/mcp
    python py-server.py sse <port>    only the legacy HTTP+SSE transport (2024-11-05,
        `SseServerTransport`): GET http://127.0.0.1:<port>/sse opens a session's event
        stream, whose `endpoint` event names /messages/?session_id=<id> to POST to; a
        POST to /sse (a streamable HTTP client's `initialize`) is refused with 405
    python py-server.py stdio         stdio

The same fixtures as ts-server.mjs: tools `add` (progress and a log message), `ask_llm`
(sampling) and `ask_user` (form elicitation); resource `info://about`; prompt `greet`
whose `name` completes.

`MCPServer` serves both protocol eras: the `initialize` handshake (2025-11-25 and
earlier) and the stateless 2026-07-28 envelope. Sampling and elicitation go through
`Resolve` parameters, which the SDK turns into server-to-client requests on the
handshake era and into an `input_required` result on 2026-07-28. Each era a session
(or, stateless, a request) uses is reported once on stderr as
`negotiated protocol version: <version>`.
"""

import json
import sys
import warnings
from typing import Annotated

import mcp.types as types
from mcp import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve, Sample
from pydantic import BaseModel

# `ctx.info` and `logging/setLevel` are the deprecated logging feature, used on purpose.
warnings.simplefilter("ignore", MCPDeprecationWarning)

NAMES = ["Alan", "Alice", "Bob"]

server = MCPServer("py-interop-server")


@server.tool(description="Adds two numbers, reporting progress")
async def add(a: int, b: int, ctx: Context) -> str:
    await ctx.info(f"adding {a} and {b}")
    await ctx.report_progress(1, 2)
    await ctx.report_progress(2, 2)
    return str(a + b)


def sample_question(question: str) -> Sample:
    return Sample(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))],
        max_tokens=50,
    )


@server.tool(description="Asks the client's LLM")
async def ask_llm(question: str, answer: Annotated[types.CreateMessageResult, Resolve(sample_question)]) -> str:
    return f"LLM said: {answer.content.text} (model {answer.model})"


class Person(BaseModel):
    name: str
    age: int = 0


def elicit_person(message: str) -> Elicit[Person]:
    return Elicit(message, Person)


@server.tool(description="Asks the user for a name and an age")
async def ask_user(message: str, answer: Annotated[ElicitationResult[Person], Resolve(elicit_person)]) -> str:
    content = answer.data.model_dump() if answer.action == "accept" else None
    return f"{answer.action}: {json.dumps(content)}"


@server.resource("info://about", name="about", mime_type="text/plain")
def about() -> str:
    return "A Python SDK server."


@server.prompt(description="Greets someone")
def greet(name: str) -> str:
    return f"Hello, {name}!"


# MCPServer advertises `logging` only with a `logging/setLevel` handler; register one on
# its low-level server. Log messages from tools are sent whatever the level.
async def set_level(ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


server._lowlevel_server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)


@server.completion()
async def complete(ref, argument, context):
    values = [n for n in NAMES if n.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), has_more=False)


seen_eras = set()


async def report_era(ctx, call_next):
    """Reports the era of each handshake session once (on its first request after
    `initialize`), and each stateless 2026-07-28 version once."""
    if ctx.request_id is not None and ctx.method != "initialize":
        version = ctx.protocol_version
        key = version if version in MODERN_PROTOCOL_VERSIONS else (id(ctx.session._connection), version)
        if key not in seen_eras:
            seen_eras.add(key)
            print(f"negotiated protocol version: {version}", file=sys.stderr, flush=True)
    return await call_next(ctx)


server._lowlevel_server.middleware.append(report_era)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "http":
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "sse":
        server.run(transport="sse", host="127.0.0.1", port=int(sys.argv[2]))
    elif sys.argv[1:] == ["stdio"]:
        server.run(transport="stdio")
    else:
        print("usage: py-server.py http <port> | sse <port> | stdio", file=sys.stderr)
        sys.exit(2)
