// The TypeScript SDK v2 client (@modelcontextprotocol/client, pinned in package-lock.json)
// driving modelctx's `conformance-server` example. `cargo xtask interop` copies this file
// next to the installed node_modules and runs it over each transport:
//
//   node ts2-client.mjs [--era ERA] http <url>            streamable HTTP
//   node ts2-client.mjs sse <url>             the legacy HTTP+SSE transport (2024-11-05,
//     `SSEClientTransport`; the URL of the event stream), the handshake era only
//   node ts2-client.mjs [--era ERA] stdio <server binary> [args...]  stdio (the binary is
//     run with the given args, --stdio when there are none)
//
// `--era` picks the client's `versionNegotiation` mode:
//
//   (absent)     the SDK's default, which is `'legacy'`: the `initialize` handshake, no probe
//   2025-11-25   `{ mode: 'legacy' }` explicitly
//   2026-07-28   `{ mode: { pin: '2026-07-28' } }`: `server/discover` must offer 2026-07-28,
//                then every request carries the per-request `_meta` envelope; no fallback
//
// Once connected it prints `negotiated protocol version: <version>` to stdout. Every step
// asserts on the result; the exit status is non-zero on the first mismatch.
import {
  Client,
  LOG_LEVEL_META_KEY,
  SSEClientTransport,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  answerServerRequests,
  assertConformanceServer,
  clientTransport,
  conformanceSteps,
  connectAndReport,
} from './conformance-steps.mjs';

const USAGE =
  'usage: ts2-client.mjs [--era 2025-11-25|2026-07-28] (http <url> | sse <url> | stdio <server binary>)';
const NEGOTIATION = {
  default: undefined,
  '2025-11-25': { mode: 'legacy' },
  '2026-07-28': { mode: { pin: '2026-07-28' } },
};

let args = process.argv.slice(2);
let era = 'default';
if (args[0] === '--era') {
  era = args[1];
  if (!(era in NEGOTIATION) || era === 'default') {
    console.error(`ts2-client.mjs: unknown era ${JSON.stringify(era)}; ${USAGE}`);
    process.exit(2);
  }
  args = args.slice(2);
}
const [mode, target, ...extra] = args;
if (args.length < 2 || !['http', 'sse', 'stdio'].includes(mode) || (mode !== 'stdio' && extra.length)) {
  console.error(USAGE);
  process.exit(2);
}
const label = era === 'default' ? mode : `${mode}, era ${era}`;
const fail = (e) => {
  console.error(e);
  const detail = e?.code !== undefined ? ` (code ${e.code}${e.data !== undefined ? `, data ${JSON.stringify(e.data)}` : ''})` : '';
  console.error(`ts2-client (${label}): FAILED: ${e?.message ?? e}${detail}`);
  process.exit(1);
};
process.on('unhandledRejection', fail);

const client = new Client(
  { name: 'ts2-interop-client', version: '1.0.0' },
  {
    capabilities: { sampling: {}, elicitation: { form: {} } },
    ...(NEGOTIATION[era] && { versionNegotiation: NEGOTIATION[era] }),
  },
);

// Answers to the server's own requests (pushed on the handshake era, embedded in an
// `input_required` result on 2026-07-28), recorded so the test can check they arrived.
const { asked, logs } = answerServerRequests(
  client,
  { sampling: 'sampling/createMessage', elicitation: 'elicitation/create', logging: 'notifications/message' },
  'ts2-test-model',
);

const transport = clientTransport(mode, target, extra, {
  StreamableHTTPClientTransport,
  SSEClientTransport,
  StdioClientTransport,
});

const version = await connectAndReport(client, transport, fail);
const modern = client.getProtocolEra() === 'modern';
if (era !== 'default' && version !== era) {
  fail(new Error(`asked for ${era}, negotiated ${version}`));
}
const steps = [];
const step = async (name, f) => {
  try {
    await f();
  } catch (e) {
    fail(e);
  }
  steps.push(name);
};

await step(modern ? 'server/discover' : 'initialize', async () => assertConformanceServer(client));

await conformanceSteps(client, step, {
  asked,
  logs,
  callToolWithProgress: (params, onprogress) => client.callTool(params, { onprogress }),
  // Handshake era: `logging/setLevel`. 2026-07-28: the per-request log-level opt-in.
  callToolLoggingInfo: async (params) => {
    if (modern) {
      return client.callTool({ ...params, _meta: { [LOG_LEVEL_META_KEY]: 'info' } });
    }
    await client.setLoggingLevel('info');
    return client.callTool(params);
  },
});

await client.close();
console.log(`ts2-client (${label}): ${steps.length} steps passed: ${steps.join(', ')}`);
