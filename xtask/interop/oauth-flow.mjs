// The OAuth flow the TypeScript SDK clients (ts-oauth-client.mjs for v1,
// ts2-oauth-client.mjs for v2) run against modelctx's `oauth-server` example: the SDK
// discovers the protected-resource and authorization-server metadata, registers
// dynamically and sends the user to the authorization URL; the script plays the user at
// the consent page (GET the form, POST the login and approval, read the redirect), checks
// `state`, hands the redirect to the SDK and connects again. The `whoami` tool must see
// the user. Each script passes its SDK's classes and what its version does differently.
// Copied next to them.
import assert from 'node:assert/strict';

const REDIRECT = 'http://127.0.0.1:9/callback';

// `<URL> <user> <password>` from the command line of `script`, where `urlName` says what
// the URL is; usage and exit 2 without them.
export function urlUserPassword(script, urlName) {
  const [url, user, password] = process.argv.slice(2);
  if (!url || !user || password === undefined) {
    console.error(`usage: ${script} <${urlName}> <user> <password>`);
    process.exit(2);
  }
  return { url, user, password };
}

// The SDK's OAuth client provider, keeping everything in memory: a public client
// (`token_endpoint_auth_method: none`) named `clientName`, redirected to REDIRECT.
export class InMemoryProvider {
  constructor(clientName) {
    this.clientName = clientName;
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
      client_name: this.clientName,
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

// The user at the bundled authorization server's consent page for `authorizationUrl`
// (a URL): logs in as `user` and approves; the URL the server redirects back to.
export async function approve(authorizationUrl, user, password) {
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
  return new URL(answer.headers.get('location'));
}

// The user approves at the consent page; the redirect back, checked to be REDIRECT with
// the request's `state`.
async function consent(authorizationUrl, user, password) {
  const back = await approve(authorizationUrl, user, password);
  assert.equal(`${back.origin}${back.pathname}`, REDIRECT);
  assert.equal(back.searchParams.get('state'), authorizationUrl.searchParams.get('state'));
  return back;
}

// The whole flow of `script` (its name in messages) as the client `clientName`, with a
// `Provider` (InMemoryProvider or a subclass): connects and must be challenged, the SDK
// must ask for authorization with PKCE (S256) and the MCP URL as `resource`; the user
// consents, `callback(back, authorizationUrl)` turns the redirect into what the SDK's
// `finishAuth` takes; connects again and calls `whoami`.
export async function authorizeAndCallWhoami({
  script,
  clientName,
  Provider = InMemoryProvider,
  callback,
  sdk: { Client, StreamableHTTPClientTransport, UnauthorizedError },
}) {
  const { url, user, password } = urlUserPassword(`${script}.mjs`, 'MCP URL');
  const clientInfo = { name: clientName, version: '1.0.0' };
  const provider = new Provider(clientName);
  let transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  let client = new Client(clientInfo);
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
  const back = await consent(provider.authorizationUrl, user, password);
  await transport.finishAuth(callback(back, provider.authorizationUrl));

  transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  client = new Client(clientInfo);
  await client.connect(transport);
  console.log(`negotiated protocol version: ${transport.protocolVersion ?? 'unknown'}`);
  const result = await client.callTool({ name: 'whoami', arguments: {} });
  assert.ok(result.content[0].text.startsWith(`${user} `), JSON.stringify(result));
  await client.close();
  console.log(`${script}: ok`);
}
