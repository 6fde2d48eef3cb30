"""The Python SDK's client (`mcp`, pinned in requirements.txt) authorizing with OAuth
against modelctx's `oauth-server` example (the resource server in front of an MCP
server, and the bundled authorization server), then calling a tool.

    python py-oauth-client.py <MCP URL> <user> <password>

The SDK's `OAuthClientProvider` discovers the protected-resource and
authorization-server metadata, registers dynamically and sends the user to the
authorization URL; this script plays the user at the consent page (GET the form, POST the
login and approval, read the redirect) and hands the redirect's `code`, `state` and
`iss` back to the SDK, which checks them. It then checks that the `whoami` tool sees the
user. Exit status non-zero on the first mismatch.
"""

import asyncio
import re
import sys
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    """Tokens and the registration, kept for this run only."""

    def __init__(self):
        self.tokens = None
        self.info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.info

    async def set_client_info(self, info):
        self.info = info


async def main(url, user, password):
    asked = []

    async def redirect_handler(authorization_url):
        asked.append(authorization_url)

    async def callback_handler():
        # The user at the consent page.
        authorization_url = asked[-1]
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            page = await http.get(authorization_url)
            assert page.status_code == 200, f"the consent page: {page.status_code}"
            txn = re.search(r'name="txn" value="([^"]*)"', page.text).group(1)
            action = authorization_url.split("?", 1)[0]
            answer = await http.post(
                action,
                data={"txn": txn, "username": user, "password": password, "decision": "approve"},
            )
            assert answer.status_code == 302, f"approval: {answer.status_code}"
        back = urlsplit(answer.headers["location"])
        assert f"{back.scheme}://{back.netloc}{back.path}" == REDIRECT, back
        params = {k: v[0] for k, v in parse_qs(back.query).items()}
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    oauth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="py-oauth-interop",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=Memory(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with httpx2.AsyncClient(auth=oauth) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            print(f"negotiated protocol version: {client.protocol_version}", flush=True)
            result = await client.call_tool("whoami", {})
    text = result.content[0].text
    assert text.startswith(f"{user} "), text
    assert len(asked) == 1, f"authorized {len(asked)} times"
    assert "code_challenge_method=S256" in asked[0], asked[0]
    print("py-oauth-client: ok")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: py-oauth-client.py <MCP URL> <user> <password>", file=sys.stderr)
        sys.exit(2)
    asyncio.run(main(*sys.argv[1:]))
