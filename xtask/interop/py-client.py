"""The Python SDK's client (`mcp`, pinned in requirements.txt) driving modelctx's
`conformance-server` example. `cargo xtask interop` runs it twice:

    python py-client.py http <url>            streamable HTTP
    python py-client.py stdio <server binary>  stdio (the binary is run with --stdio)

Every step asserts on the result; the exit status is non-zero on the first mismatch.
"""

import asyncio
import json
import sys

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from pydantic import AnyUrl

asked = {"sampling": [], "elicitation": []}
logs = []


async def on_sampling(context, params):
    asked["sampling"].append(params)
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=f"echo: {params.messages[0].content.text}"),
        model="py-test-model",
    )


async def on_elicitation(context, params):
    asked["elicitation"].append(params)
    return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})


async def on_log(params):
    logs.append(params)


def text(result):
    return "".join(c.text for c in result.content if c.type == "text")


async def drive(session):
    steps = []
    init = await session.initialize()
    assert init.serverInfo.name == "modelctx-conformance-server", init.serverInfo
    caps = init.capabilities
    assert caps.tools and caps.resources and caps.prompts and caps.completions and caps.logging
    steps.append("initialize")

    names = [t.name for t in (await session.list_tools()).tools]
    for name in ["test_simple_text", "test_tool_with_progress", "test_sampling", "test_elicitation"]:
        assert name in names, names
    steps.append("tools/list")

    result = await session.call_tool("test_simple_text", {})
    assert text(result) == "This is a simple text response for testing.", result
    failed = await session.call_tool("test_error_handling", {})
    assert failed.isError is True, failed
    steps.append("tools/call")

    progress = []

    async def on_progress(value, total, message):
        progress.append((value, total))

    result = await session.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
    assert text(result) == "Progress completed", result
    assert progress == [(0, 100), (50, 100), (100, 100)], progress
    steps.append("progress")

    await session.set_logging_level("info")
    await session.call_tool("test_tool_with_logging", {})
    got = [l.data for l in logs if l.level == "info"]
    assert got == ["Tool execution started", "Tool processing data", "Tool execution completed"], got
    steps.append("logging")

    resources = (await session.list_resources()).resources
    assert any(str(r.uri) == "test://static-text" for r in resources), resources
    read = await session.read_resource(AnyUrl("test://static-text"))
    assert read.contents[0].text == "This is the content of the static text resource.", read
    templated = await session.read_resource(AnyUrl("test://template/42/data"))
    assert json.loads(templated.contents[0].text) == {
        "id": "42",
        "templateTest": True,
        "data": "Data for ID: 42",
    }, templated
    steps.append("resources")

    prompt = await session.get_prompt("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"})
    assert prompt.messages[0].content.text == "Prompt with arguments: arg1='hello', arg2='world'", prompt
    steps.append("prompts")

    completion = await session.complete(
        types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
        {"name": "arg1", "value": "par"},
    )
    assert completion.completion.values == ["paris", "park", "party"], completion
    steps.append("completion")

    result = await session.call_tool("test_sampling", {"prompt": "ping?"})
    assert text(result) == "LLM response: echo: ping?", result
    assert len(asked["sampling"]) == 1 and asked["sampling"][0].maxTokens == 100
    steps.append("sampling")

    result = await session.call_tool("test_elicitation", {"message": "Who are you?"})
    assert (
        text(result) == 'User response: action=accept, content={"email":"ada@example.com","username":"ada"}'
    ), result
    assert asked["elicitation"][0].message == "Who are you?"
    steps.append("elicitation")
    return steps


async def main(mode, target):
    callbacks = dict(
        sampling_callback=on_sampling,
        elicitation_callback=on_elicitation,
        logging_callback=on_log,
    )
    if mode == "http":
        async with streamablehttp_client(target) as (read, write, _):
            async with ClientSession(read, write, **callbacks) as session:
                steps = await drive(session)
    else:
        params = StdioServerParameters(command=target, args=["--stdio"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, **callbacks) as session:
                steps = await drive(session)
    print(f"py-client ({mode}): {len(steps)} steps passed: {', '.join(steps)}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("http", "stdio"):
        print("usage: py-client.py http <url> | stdio <server binary>", file=sys.stderr)
        sys.exit(2)
    asyncio.run(main(sys.argv[1], sys.argv[2]))
