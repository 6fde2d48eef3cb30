"""A server built with the Python SDK (`mcp`, pinned in requirements.txt), for modelctx's
`conformance-client --interop` to drive. `cargo xtask interop` runs:

    python py-server.py http <port>   streamable HTTP at http://127.0.0.1:<port>/mcp
    python py-server.py stdio         stdio

The same fixtures as ts-server.mjs: tools `add` (progress and a log message), `ask_llm`
(sampling) and `ask_user` (form elicitation); resource `info://about`; prompt `greet`
whose `name` completes.
"""

import json
import sys

import mcp.types as types
from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel

NAMES = ["Alan", "Alice", "Bob"]

server = FastMCP("py-interop-server", host="127.0.0.1")


@server.tool(description="Adds two numbers, reporting progress")
async def add(a: int, b: int, ctx: Context) -> str:
    await ctx.info(f"adding {a} and {b}")
    await ctx.report_progress(1, 2)
    await ctx.report_progress(2, 2)
    return str(a + b)


@server.tool(description="Asks the client's LLM")
async def ask_llm(question: str, ctx: Context) -> str:
    answer = await ctx.session.create_message(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))],
        max_tokens=50,
        related_request_id=ctx.request_id,
    )
    return f"LLM said: {answer.content.text} (model {answer.model})"


class Person(BaseModel):
    name: str
    age: int = 0


@server.tool(description="Asks the user for a name and an age")
async def ask_user(message: str, ctx: Context) -> str:
    answer = await ctx.elicit(message, schema=Person)
    content = answer.data.model_dump() if answer.action == "accept" else None
    return f"{answer.action}: {json.dumps(content)}"


@server.resource("info://about", name="about", mime_type="text/plain")
def about() -> str:
    return "A Python SDK server."


@server.prompt(description="Greets someone")
def greet(name: str) -> str:
    return f"Hello, {name}!"


# FastMCP advertises `logging` only with a `logging/setLevel` handler; register one on
# its low-level server. Log messages from tools are sent whatever the level.
@server._mcp_server.set_logging_level()
async def set_level(level: types.LoggingLevel) -> None:
    return None


@server.completion()
async def complete(ref, argument, context):
    values = [n for n in NAMES if n.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), hasMore=False)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "http":
        server.settings.port = int(sys.argv[2])
        server.run(transport="streamable-http")
    elif sys.argv[1:] == ["stdio"]:
        server.run(transport="stdio")
    else:
        print("usage: py-server.py http <port> | stdio", file=sys.stderr)
        sys.exit(2)
