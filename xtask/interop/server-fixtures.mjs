// The fixtures of the TypeScript SDK servers (ts-server.mjs for v1, ts2-server.mjs for v2)
// that modelctx's `conformance-client --interop` drives: tools `add` (progress and a log
// message), `ask_llm` (sampling) and `ask_user` (form elicitation); resource
// `info://about`; prompt `greet` whose `name` completes. The handlers take the request
// and return the result, whichever SDK registers them. Copied next to them.

const NAMES = ['Alan', 'Alice', 'Bob'];

// An object JSON Schema.
export const object = (properties, required) => ({ type: 'object', properties, required });

// A tool result of one text block.
export const text = (t) => ({ content: [{ type: 'text', text: t }] });

// The definitions of `add`, `ask_llm` and `ask_user`.
export const TOOLS = [
  {
    name: 'add',
    description: 'Adds two numbers, reporting progress',
    inputSchema: object({ a: { type: 'number' }, b: { type: 'number' } }, ['a', 'b']),
  },
  {
    name: 'ask_llm',
    description: "Asks the client's LLM",
    inputSchema: object({ question: { type: 'string' } }, ['question']),
  },
  {
    name: 'ask_user',
    description: 'Asks the user for a name and an age',
    inputSchema: object({ message: { type: 'string' } }, ['message']),
  },
];

// The sampling request of `ask_llm`, and its result from the client's answer.
export const askLlmParams = (args) => ({
  messages: [{ role: 'user', content: { type: 'text', text: args.question } }],
  maxTokens: 50,
});
export const askLlmResult = (answer) => text(`LLM said: ${answer.content.text} (model ${answer.model})`);

// The elicitation request of `ask_user`, and its result (also that of an elicitation
// inside a task) from the client's answer.
export const askUserParams = (args) => ({
  message: args.message,
  requestedSchema: object({ name: { type: 'string' }, age: { type: 'integer', minimum: 0 } }, ['name']),
});
export const elicitationResult = (answer) => text(`${answer.action}: ${JSON.stringify(answer.content ?? null)}`);

// The answer to a call of a tool the server does not have.
export const unknownTool = (request) => ({ isError: true, ...text(`unknown tool ${request.params.name}`) });

// resources/list and resources/read.
export const listResources = async () => ({
  resources: [{ uri: 'info://about', name: 'about', mimeType: 'text/plain' }],
});
export const readResource = async (request) => {
  if (request.params.uri !== 'info://about') {
    throw new Error(`no resource ${request.params.uri}`);
  }
  return {
    contents: [{ uri: 'info://about', mimeType: 'text/plain', text: 'A TypeScript SDK server.' }],
  };
};

// prompts/list, prompts/get and completion/complete.
export const listPrompts = async () => ({
  prompts: [{ name: 'greet', description: 'Greets someone', arguments: [{ name: 'name', required: true }] }],
});
export const getPrompt = async (request) => ({
  messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${request.params.arguments?.name}!` } }],
});
export const complete = async (request) => {
  const prefix = request.params.argument.value;
  const values = NAMES.filter((n) => n.startsWith(prefix));
  return { completion: { values, total: values.length, hasMore: false } };
};
