// The Authenticator against a scripted database: each lookup statement answers from the key set as
// it was when the statement started (what READ COMMITTED gives a real one), and the test decides
// when each statement finishes. No real database: the order of events is what is under test.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Database } from '../../src/db/database.ts';
import { generateApiKey, hashApiKey } from '../../src/domain/api-keys.ts';
import {
  ACTIVE_KEY_INDEX_MAX,
  ACTIVE_KEY_INDEX_MAX_AGE_MS,
  ActiveKeyIndex,
} from '../../src/services/active-key-index.ts';
import { Authenticator } from '../../src/services/authenticator.ts';

interface Statement {
  hashes: string[];
  release(): void;
}

function scriptedDatabase() {
  const active = new Map<string, string>();
  const statements: Statement[] = [];
  let gated = false;
  const db = {
    async query(_sql: string, params: readonly unknown[] = []) {
      const hashes = params[0] as string[];
      // The snapshot is taken when the statement starts, not when it answers.
      const rows = hashes
        .filter((h) => active.has(h))
        .map((h) => ({
          key_hash: h,
          id: active.get(h),
          tenant_id: 't',
          tenant_name: 'T',
          mode: 'test',
          scopes: [],
          is_platform: false,
        }));
      let release!: () => void;
      const done = new Promise<void>((resolve) => (release = resolve));
      statements.push({ hashes, release });
      if (gated) await done;
      return { rows, rowCount: rows.length };
    },
  } as unknown as Database;
  return {
    db,
    active,
    statements,
    gate(on: boolean) {
      gated = on;
    },
  };
}

describe('Authenticator', () => {
  it('never answers from a lookup that started before the request: a revocation in between is seen', async () => {
    const s = scriptedDatabase();
    const key = generateApiKey('test');
    s.active.set(hashApiKey(key), 'key-1');
    const auth = new Authenticator(s.db);
    s.gate(true);
    // Two lookups start at once (the coalescer's in-flight bound) and stay in flight.
    const before = [auth.authenticate(key), auth.authenticate(key)];
    assert.equal(s.statements.length, 2);
    s.active.delete(hashApiKey(key)); // revoked, committed
    // Arrives while both run: must wait for a statement of its own instead of sharing theirs.
    const after = auth.authenticate(key);
    assert.equal(s.statements.length, 2, 'no third statement while two are in flight');
    s.gate(false);
    for (const statement of s.statements.slice()) statement.release();
    const [a, b] = await Promise.all(before);
    assert.equal(a?.apiKeyId, 'key-1');
    assert.equal(b?.apiKeyId, 'key-1');
    assert.equal(await after, null, 'the request that arrived after the revocation is refused');
    assert.equal(s.statements.length, 3);
  });

  it('looks up the keys of concurrent requests in one statement, each key once, and answers each request its own', async () => {
    const s = scriptedDatabase();
    const keys = [generateApiKey('test'), generateApiKey('live'), generateApiKey('test')];
    keys.forEach((k, i) => s.active.set(hashApiKey(k), `key-${i}`));
    const unknown = generateApiKey('test');
    const auth = new Authenticator(s.db);
    s.gate(true);
    const first = [auth.authenticate(keys[0]!), auth.authenticate(keys[1]!)];
    const asked = [keys[2]!, unknown, keys[0]!, keys[2]!, keys[1]!, keys[2]!];
    const queued = asked.map((k) => auth.authenticate(k));
    s.gate(false);
    for (const statement of s.statements.slice()) statement.release();
    await Promise.all(first);
    const answers = await Promise.all(queued);
    assert.deepEqual(
      answers.map((a) => a?.apiKeyId ?? null),
      ['key-2', null, 'key-0', 'key-2', 'key-1', 'key-2'],
    );
    assert.equal(s.statements.length, 3, 'the six queued requests shared one statement');
    assert.deepEqual(
      new Set(s.statements[2]!.hashes),
      new Set([keys[2]!, unknown, keys[0]!, keys[1]!].map(hashApiKey)),
    );
    assert.equal(s.statements[2]!.hashes.length, 4, 'each key asked for once');
  });

  it('refuses malformed input without asking the database', async () => {
    const s = scriptedDatabase();
    const auth = new Authenticator(s.db);
    for (const key of ['nope', '', 'bsk_test_short', `bsk_test_${'a'.repeat(300)}`, 'bsk_other_' + 'a'.repeat(40)]) {
      assert.equal(await auth.authenticate(key), null, key);
    }
    assert.equal(s.statements.length, 0);
  });
});

describe('ActiveKeyIndex', () => {
  function indexOver(hashes: string[]) {
    let now = 0;
    let loads = 0;
    const partial: number[] = [];
    const db = {
      async query(_sql: string, params: readonly unknown[] = []) {
        loads += 1;
        await new Promise((resolve) => setImmediate(resolve));
        const rows = hashes.slice(0, params[0] as number).map((key_hash) => ({ key_hash }));
        return { rows, rowCount: rows.length };
      },
    } as unknown as Database;
    const index = new ActiveKeyIndex(
      db,
      () => now,
      (max) => partial.push(max),
    );
    return { index, partial, loads: () => loads, advance: (ms: number) => (now += ms) };
  }

  it('loads once for concurrent questions, and again only when older than its max age', async () => {
    const s = indexOver(['a', 'b']);
    assert.deepEqual(await Promise.all([s.index.has('a'), s.index.has('b'), s.index.has('c')]), [true, true, false]);
    assert.equal(s.loads(), 1);
    s.index.remember('c');
    assert.equal(await s.index.has('c'), true, 'a key this process authenticated is known at once');
    s.advance(ACTIVE_KEY_INDEX_MAX_AGE_MS - 1);
    await s.index.has('a');
    assert.equal(s.loads(), 1);
    s.advance(1);
    assert.equal(await s.index.has('c'), false, 'the reload holds what the database holds');
    assert.equal(s.loads(), 2);
  });

  it(`holds at most ${ACTIVE_KEY_INDEX_MAX} hashes and reports once that it is partial`, async () => {
    const s = indexOver(Array.from({ length: ACTIVE_KEY_INDEX_MAX + 5 }, (_, i) => `h${i}`));
    assert.equal(await s.index.has(`h${ACTIVE_KEY_INDEX_MAX - 1}`), true);
    assert.equal(await s.index.has(`h${ACTIVE_KEY_INDEX_MAX}`), false);
    s.advance(ACTIVE_KEY_INDEX_MAX_AGE_MS);
    await s.index.has('h0');
    assert.deepEqual(s.partial, [ACTIVE_KEY_INDEX_MAX]);
  });
});
