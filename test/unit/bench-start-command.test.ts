// The bench starts the service with npm start's own node flags, read from package.json: a change to
// the start script must keep it readable there, or `npm run bench` fails before measuring anything.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SERVICE_ENTRY, startFlags } from '../../bench/start-command.ts';
import { readFileSync } from 'node:fs';

describe('the start command the bench reproduces', () => {
  it("reads npm start's node flags from package.json, whose start script execs node on the bundle", () => {
    const start = JSON.parse(readFileSync('package.json', 'utf8')).scripts.start as string;
    assert.match(
      start,
      new RegExp(`^exec node .*${SERVICE_ENTRY}$`),
      "exec: npm's shell gives way to node, so a SIGTERM to npm reaches the service",
    );
    const flags = startFlags('.');
    assert.ok(flags.includes('--enable-source-maps'), String(flags));
    assert.ok(
      flags.every((flag) => flag.startsWith('--')),
      String(flags),
    );
  });
});
