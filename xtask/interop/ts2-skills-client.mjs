// The TypeScript SDK v2 skills client (`SkillsClient` of @modelcontextprotocol/client's
// `ext/skills`, pinned in package-lock.json) checking modelctx's `skills-server` example
// (SEP-2640). `cargo xtask interop` copies this file next to the installed node_modules
// and runs:
//
//   node ts2-skills-client.mjs [--era ERA] --expect DIR... (http <url> | stdio <program> [args...])
//
// It expects exactly the skills below the `--expect` directories (every directory holding
// a `SKILL.md`; its path below the root is the skill path) and asserts: the listing names
// them, with no invalid entry; `skills/get` returns each listed entry; each entry lists
// every local file with the size and `sha256:` digest of its bytes; `SkillsClient.read`
// (which checks size, digest and, for `SKILL.md`, the frontmatter against the entry)
// returns every file byte for byte; a skill root lists its direct children
// (`readDirectory`, when the server offers it); a file the entry does not list is refused
// before any request; and `skills/get` of an unknown skill is `-32602`. `--era` as in
// ts2-client.mjs. It prints `negotiated protocol version: <version>` once connected.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillsClient, SkillVerificationError } from '@modelcontextprotocol/client/ext/skills';
import { connectAndReport } from './conformance-steps.mjs';

const USAGE =
  'usage: ts2-skills-client.mjs [--era 2025-11-25|2026-07-28] --expect DIR... (http <url> | stdio <program> [args...])';
const NEGOTIATION = {
  '2025-11-25': { mode: 'legacy' },
  '2026-07-28': { mode: { pin: '2026-07-28' } },
};

let args = process.argv.slice(2);
let era;
if (args[0] === '--era') {
  era = args[1];
  if (!(era in NEGOTIATION)) {
    console.error(`ts2-skills-client.mjs: unknown era ${JSON.stringify(era)}; ${USAGE}`);
    process.exit(2);
  }
  args = args.slice(2);
}
const roots = [];
while (args[0] === '--expect' && args[1]) {
  roots.push(args[1]);
  args = args.slice(2);
}
const [mode, target, ...extra] = args;
if (!roots.length || !['http', 'stdio'].includes(mode) || !target || (mode === 'http' && extra.length)) {
  console.error(USAGE);
  process.exit(2);
}
const fail = (e) => {
  console.error(e);
  console.error(`ts2-skills-client (${mode}${era ? `, era ${era}` : ''}): FAILED: ${e?.message ?? e}`);
  process.exit(1);
};
process.on('unhandledRejection', fail);

// The expected skills: `skill://<path>/SKILL.md` -> { dir, files: relative path -> bytes }.
const filesBelow = (dir) => {
  const out = new Map();
  const visit = (d) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) visit(path);
      else out.set(relative(dir, path).split(sep).join('/'), readFileSync(path));
    }
  };
  visit(dir);
  return out;
};
const expected = new Map();
for (const root of roots) {
  const visit = (d) => {
    if (d !== root && statSync(join(d, 'SKILL.md'), { throwIfNoEntry: false })?.isFile()) {
      const path = relative(root, d).split(sep).join('/');
      expected.set(`skill://${path}/SKILL.md`, { path, files: filesBelow(d) });
    }
    for (const name of readdirSync(d)) {
      if (statSync(join(d, name)).isDirectory()) visit(join(d, name));
    }
  };
  visit(root);
}
const sha256 = (bytes) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

const client = new Client(
  { name: 'ts2-skills-client', version: '1.0.0' },
  { capabilities: {}, ...(era && { versionNegotiation: NEGOTIATION[era] }) },
);
const transport =
  mode === 'http'
    ? new StreamableHTTPClientTransport(new URL(target))
    : new StdioClientTransport({ command: target, args: extra, stderr: 'inherit' });
const version = await connectAndReport(client, transport, fail);
if (era && version !== era) fail(new Error(`asked for ${era}, negotiated ${version}`));

try {
  const skills = new SkillsClient(client);
  assert.ok(skills.supported, 'the server declares io.modelcontextprotocol/skills');
  const listing = await skills.list();
  assert.deepEqual(listing.invalid, [], 'no invalid entry');
  assert.deepEqual(listing.skills.map((s) => s.uri).toSorted(), [...expected.keys()].toSorted(), 'skills/list');
  if (version === '2026-07-28') {
    assert.equal(typeof listing.ttlMs, 'number', 'ttlMs on 2026-07-28');
    assert.equal(typeof listing.cacheScope, 'string', 'cacheScope on 2026-07-28');
  }
  let verified = 0;
  for (const skill of listing.skills) {
    const { path, files } = expected.get(skill.uri);
    assert.equal(skill.frontmatter.name, path.split('/').at(-1), `${skill.uri}: frontmatter name`);
    const got = await skills.get(skill.uri);
    assert.deepEqual(got.skill, skill, `${skill.uri}: skills/get equals the listing`);
    assert.ok(Array.isArray(skill.resources), `${skill.uri}: resources listed, not dynamic`);
    const root = skill.uri.slice(0, -'SKILL.md'.length);
    assert.deepEqual(
      skill.resources.map((r) => r.uri.slice(root.length)).toSorted(),
      [...files.keys()].toSorted(),
      `${skill.uri}: every file listed`,
    );
    for (const entry of skill.resources) {
      const local = files.get(entry.uri.slice(root.length));
      assert.equal(entry.size, local.byteLength, `${entry.uri}: size`);
      assert.equal(entry.digest, sha256(local), `${entry.uri}: digest`);
      const file = await skills.read(skill, entry.uri);
      assert.ok(file.verified, `${entry.uri}: verified by the SDK`);
      assert.ok(Buffer.from(file.bytes).equals(local), `${entry.uri}: content`);
      verified += 1;
    }
    const skillMd = await skills.read(skill);
    assert.equal(skillMd.frontmatter?.name, skill.frontmatter.name, `${skill.uri}: parsed frontmatter`);
    await assert.rejects(
      skills.read(skill, 'not-listed.md'),
      (e) => e instanceof SkillVerificationError && e.reason === 'unlisted',
      `${skill.uri}: an unlisted file is refused`,
    );
    if (skills.directoryRead) {
      const { resources } = await skills.readDirectory(root.slice(0, -1));
      const want = new Set([...files.keys()].map((p) => p.split('/')[0]));
      assert.deepEqual(new Set(resources.map((r) => r.name)), want, `${root}: directory children`);
    }
  }
  await assert.rejects(
    skills.get('skill://no-such-skill/SKILL.md'),
    (e) => e?.code === -32602,
    'skills/get of an unknown skill is -32602',
  );
  console.log(
    `ts2-skills-client: ${listing.skills.length} skills listed and got; ${verified} files read and verified${skills.directoryRead ? '; directories read' : ''}`,
  );
} catch (e) {
  fail(e);
}
await client.close();
