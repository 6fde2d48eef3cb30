"""The Python SDK (`mcp`, pinned in requirements.txt) side of the cross-SDK benchmark
(`cargo xtask bench --sdks`): the same `echo` tool every bench server offers (returns its
`text` argument as one text block), written the way the SDK's guide writes a tool
(`MCPServer`, a decorated function).

    python bench-py-server.py stdio          stdio
    python bench-py-server.py http stateful  stateful streamable HTTP at /mcp on an
                                             ephemeral loopback port, printed as
                                             "listening ADDR" on stdout; ends when stdin
                                             closes
"""

import asyncio
import os
import socket
import sys
import threading

from mcp.server.mcpserver import MCPServer

# Warnings only: the SDK logs every session at INFO.
server = MCPServer("bench-python", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Returns its text argument."""
    return text


def serve_http() -> None:
    # A free port, then the SDK's own way to serve it (`run_streamable_http_async`, what
    # `server.run(transport="streamable-http")` runs), announced once it accepts.
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    # The load generator closes stdin to stop the server.
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()

    async def main() -> None:
        serving = asyncio.create_task(server.run_streamable_http_async(host="127.0.0.1", port=port))
        while not serving.done():
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                print(f"listening 127.0.0.1:{port}", flush=True)
                break
            except OSError:
                await asyncio.sleep(0.01)
        # Raises (the process fails, nothing announced) if the server could not start.
        await serving
        sys.exit(1)

    asyncio.run(main())


if __name__ == "__main__":
    if sys.argv[1:] == ["stdio"]:
        server.run(transport="stdio")
    elif sys.argv[1:] == ["http", "stateful"]:
        serve_http()
    else:
        print("usage: bench-py-server.py stdio | http stateful", file=sys.stderr)
        sys.exit(2)
