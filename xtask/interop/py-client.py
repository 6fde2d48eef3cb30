"""The Python SDK's client (`mcp`, pinned in requirements.txt) driving modelctx's
`conformance-server` example. `cargo xtask interop` runs it over each transport:

    python py-client.py [--era ERA] http <url>            streamable HTTP
    python py-client.py [--era ERA] sse <url>             the legacy HTTP+SSE transport
        (2024-11-05, `sse_client`; the URL of the event stream)
    python py-client.py [--era ERA] stdio <server binary> [args...]  stdio (the binary is
        run with the given args, --stdio when there are none)

`--era` picks how the client negotiates the protocol revision:

    (absent)     the SDK's default, `mode="auto"`: probe `server/discover`, fall back to
                 the `initialize` handshake when the server does not speak 2026-07-28
    2025-11-25   `mode="legacy"`: the `initialize` handshake only, no probe
    2026-07-28   `mode="2026-07-28"`: the stateless era only (per-request `_meta`
                 envelope, no `initialize`); `server/discover` is then sent explicitly,
                 with no fallback, to learn the server's identity and capabilities

Once connected it prints `negotiated protocol version: <version>` to stdout. Every step
asserts on the result; the exit status is non-zero on the first mismatch.
"""

import asyncio
import json
import sys
import traceback
import warnings

import mcp.types as types
from mcp import Client, MCPDeprecationWarning, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

MODES = {None: "auto", "2025-11-25": "legacy", "2026-07-28": "2026-07-28"}
USAGE = "usage: py-client.py [--era 2025-11-25|2026-07-28] (http <url> | sse <url> | stdio <server binary>)"

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


async def connect_step(client, era):
    """Completes the era negotiation `Client` leaves to us, then checks the server."""
    print(f"negotiated protocol version: {client.protocol_version}", flush=True)
    if era == "2026-07-28":
        # A pinned mode adopts a synthesized discover result (no identity, no
        # capabilities); ask the server for the real one, with no legacy fallback.
        raw = await client.session.send_discover(era)
        client.session.adopt(types.DiscoverResult.model_validate(raw))
        step = "server/discover"
    else:
        step = "initialize" if client.session.initialize_result is not None else "server/discover"
    if era is not None:
        assert client.protocol_version == era, f"asked for {era}, negotiated {client.protocol_version}"
    info = client.server_info
    assert info is not None and info.name == "modelctx-conformance-server", info
    caps = client.server_capabilities
    assert caps.tools and caps.resources and caps.prompts and caps.completions and caps.logging, caps
    return step


async def drive(client, era):
    steps = [await connect_step(client, era)]
    legacy = client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS

    names = [t.name for t in (await client.list_tools()).tools]
    for name in ["test_simple_text", "test_tool_with_progress", "test_sampling", "test_elicitation"]:
        assert name in names, names
    steps.append("tools/list")

    result = await client.call_tool("test_simple_text", {})
    assert text(result) == "This is a simple text response for testing.", result
    failed = await client.call_tool("test_error_handling", {})
    assert failed.is_error is True, failed
    steps.append("tools/call")

    progress = []

    async def on_progress(value, total, message):
        progress.append((value, total))

    result = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
    assert text(result) == "Progress completed", result
    assert progress == [(0, 100), (50, 100), (100, 100)], progress
    steps.append("progress")

    # Handshake era: `logging/setLevel`. 2026-07-28: the client's `log_level` opt-in,
    # stamped on every request's `_meta`.
    if legacy:
        await client.set_logging_level("info")
    await client.call_tool("test_tool_with_logging", {})
    got = [l.data for l in logs if l.level == "info"]
    assert got == ["Tool execution started", "Tool processing data", "Tool execution completed"], got
    steps.append("logging")

    resources = (await client.list_resources()).resources
    assert any(str(r.uri) == "test://static-text" for r in resources), resources
    read = await client.read_resource("test://static-text")
    assert read.contents[0].text == "This is the content of the static text resource.", read
    templated = await client.read_resource("test://template/42/data")
    assert json.loads(templated.contents[0].text) == {
        "id": "42",
        "templateTest": True,
        "data": "Data for ID: 42",
    }, templated
    steps.append("resources")

    prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"})
    assert prompt.messages[0].content.text == "Prompt with arguments: arg1='hello', arg2='world'", prompt
    steps.append("prompts")

    completion = await client.complete(
        types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
        {"name": "arg1", "value": "par"},
    )
    assert completion.completion.values == ["paris", "park", "party"], completion
    steps.append("completion")

    result = await client.call_tool("test_sampling", {"prompt": "ping?"})
    assert text(result) == "LLM response: echo: ping?", result
    assert len(asked["sampling"]) == 1 and asked["sampling"][0].max_tokens == 100, asked["sampling"]
    steps.append("sampling")

    result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
    assert (
        text(result) == 'User response: action=accept, content={"email":"ada@example.com","username":"ada"}'
    ), result
    assert asked["elicitation"][0].message == "Who are you?", asked["elicitation"]
    steps.append("elicitation")
    return steps


async def main(era, mode, target, extra):
    if mode == "http":
        server = target
    elif mode == "sse":
        server = sse_client(target)
    else:
        server = StdioServerParameters(command=target, args=extra or ["--stdio"])
    client = Client(
        server,
        mode=MODES[era],
        sampling_callback=on_sampling,
        elicitation_callback=on_elicitation,
        logging_callback=on_log,
        log_level="info",
    )
    async with client:
        steps = await drive(client, era)
    label = f"{mode}, era {era}" if era else mode
    print(f"py-client ({label}): {len(steps)} steps passed: {', '.join(steps)}")


def parse(argv):
    era = None
    if argv[:1] == ["--era"]:
        if len(argv) < 2 or argv[1] not in MODES:
            print(f"py-client.py: unknown era {argv[1:2]}; {USAGE}", file=sys.stderr)
            sys.exit(2)
        era, argv = argv[1], argv[2:]
    if len(argv) < 2 or argv[0] not in ("http", "sse", "stdio") or (argv[0] != "stdio" and len(argv) != 2):
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    return era, argv[0], argv[1], argv[2:]


def leaves(error):
    """The exceptions inside (possibly nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def describe(error):
    if isinstance(error, AssertionError):
        return f"assertion failed: {error}"
    if isinstance(error, MCPError):
        return f"MCP error {error.error.code}: {error.error.message} (data: {error.error.data!r})"
    return f"{type(error).__name__}: {error}"


if __name__ == "__main__":
    # The handshake-era legs use `logging/setLevel` on purpose.
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    era, mode, target, extra = parse(sys.argv[1:])
    try:
        asyncio.run(main(era, mode, target, extra))
    except Exception as e:  # noqa: BLE001 - report every failure in one line, then exit 1
        traceback.print_exc()
        for leaf in leaves(e):
            print(f"py-client ({mode}): FAILED: {describe(leaf)}", file=sys.stderr)
        sys.exit(1)
