// The `echo` tool of the cross-SDK benchmark's TypeScript servers (bench-ts-server.mjs,
// bench-ts2-server.mjs): the same tool every bench server offers. Copied next to them.
export const ECHO_TOOL = {
  name: 'echo',
  description: 'Returns its text argument',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
};

// The result of `tools/call` `params`: its `text` argument as one text block.
export function echo(params) {
  const text = params.arguments?.text;
  if (params.name !== 'echo' || typeof text !== 'string') {
    throw new Error('echo takes a string `text`');
  }
  return { content: [{ type: 'text', text }] };
}

// Ends the process when its stdin closes: how the load generator stops an HTTP server.
export function exitWhenStdinCloses() {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
}
