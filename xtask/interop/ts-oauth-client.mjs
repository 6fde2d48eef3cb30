// The TypeScript SDK's client (@modelcontextprotocol/sdk, pinned in package-lock.json)
// authorizing with OAuth against modelctx's `oauth-server` example (the resource server
// in front of an MCP server, and the bundled authorization server), then calling a tool.
//
//   node ts-oauth-client.mjs <MCP URL> <user> <password>
//
// The SDK discovers the protected-resource and authorization-server metadata, registers
// dynamically and sends the user to the authorization URL; this script plays the user at
// the consent page (GET the form, POST the login and approval, read the redirect), hands
// the code to the SDK and connects again. It checks `state` and `iss` on the redirect,
// and that the `whoami` tool sees the user. Exit status non-zero on the first mismatch.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [url, user, password] = process.argv.slice(2);
if (!url || !user || password === undefined) {
  console.error('usage: ts-oauth-client.mjs <MCP URL> <user> <password>');
  process.exit(2);
}

const REDIRECT = 'http://127.0.0.1:9/callback';

class Provider {
  constructor() {
    this.info = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.authorizationUrl = undefined;
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return {
      client_name: 'ts-oauth-interop',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(authorizationUrl) {
    this.authorizationUrl = authorizationUrl;
  }
  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/// The user at the consent page: the code from the redirect back to the client.
async function consent(authorizationUrl) {
  const page = await fetch(authorizationUrl);
  assert.equal(page.status, 200, 'the consent page');
  const html = await page.text();
  const txn = html.match(/name="txn" value="([^"]*)"/)?.[1];
  assert.ok(txn, 'the consent form');
  const answer = await fetch(new URL(authorizationUrl.pathname, authorizationUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ txn, username: user, password, decision: 'approve' }),
    redirect: 'manual',
  });
  assert.equal(answer.status, 302, 'approval redirects back');
  const back = new URL(answer.headers.get('location'));
  assert.equal(`${back.origin}${back.pathname}`, REDIRECT);
  assert.equal(back.searchParams.get('state'), authorizationUrl.searchParams.get('state'));
  assert.equal(back.searchParams.get('iss'), authorizationUrl.origin);
  return back.searchParams.get('code');
}

const provider = new Provider();
let transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
let client = new Client({ name: 'ts-oauth-interop', version: '1.0.0' });
let refused = false;
try {
  await client.connect(transport);
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
  refused = true;
}
assert.ok(refused, 'the first connection is challenged');
assert.ok(provider.authorizationUrl, 'the SDK asked for authorization');
assert.equal(provider.authorizationUrl.searchParams.get('code_challenge_method'), 'S256');
assert.equal(provider.authorizationUrl.searchParams.get('resource'), url);
await transport.finishAuth(await consent(provider.authorizationUrl));

transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
client = new Client({ name: 'ts-oauth-interop', version: '1.0.0' });
await client.connect(transport);
console.log(`negotiated protocol version: ${transport.protocolVersion ?? 'unknown'}`);
const result = await client.callTool({ name: 'whoami', arguments: {} });
assert.ok(result.content[0].text.startsWith(`${user} `), JSON.stringify(result));
await client.close();
console.log('ts-oauth-client: ok');
