// The published error table and the code's closed set of error codes are one list: a code added,
// removed or moved to another status without its documentation fails here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ERROR_CODES } from '../../src/domain/errors.ts';

const ROW = /^\| (\d{3}) \| `([a-z_]+)` \| ([a-z_]+) \| .+ \|$/;

describe('docs/errors.md', () => {
  it('lists every error code with its HTTP status and type, and nothing else', () => {
    const text = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    const documented = new Map<string, { status: number; type: string }>();
    for (const line of text.split('\n')) {
      const match = ROW.exec(line);
      if (match) documented.set(match[2]!, { status: Number(match[1]), type: match[3]! });
    }
    const inCode = new Map(Object.entries(ERROR_CODES).map(([code, { status, type }]) => [code, { status, type }]));
    assert.deepEqual(Object.fromEntries([...documented].sort()), Object.fromEntries([...inCode].sort()));
  });
});
