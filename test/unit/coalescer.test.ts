import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Coalescer } from '../../src/db/coalescer.ts';

function deferred() {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}

describe('Coalescer (natural batching)', () => {
  it('runs a lone call at once, alone', async () => {
    const batches: number[][] = [];
    const c = new Coalescer<number, number>(
      async (items) => {
        batches.push(items);
        return items.map((n) => n * 2);
      },
      { batchMax: 10, inFlightMax: 1, queueMax: 1000 },
    );
    assert.equal(await c.submit(21), 42);
    assert.deepEqual(batches, [[21]]);
  });

  it('groups the calls that arrive while a batch runs, and keeps each caller its own result', async () => {
    const gate = deferred();
    const batches: number[][] = [];
    const c = new Coalescer<number, string>(
      async (items) => {
        batches.push(items);
        if (batches.length === 1) await gate.promise;
        return items.map((n) => `r${n}`);
      },
      { batchMax: 3, inFlightMax: 1, queueMax: 1000 },
    );
    const first = c.submit(1);
    const rest = [2, 3, 4, 5, 6].map((n) => c.submit(n));
    gate.release();
    assert.deepEqual(await Promise.all([first, ...rest]), ['r1', 'r2', 'r3', 'r4', 'r5', 'r6']);
    assert.deepEqual(batches, [[1], [2, 3, 4], [5, 6]], 'bounded by batchMax, in arrival order');
  });

  it('never runs more than inFlightMax batches at once', async () => {
    let running = 0;
    let most = 0;
    const c = new Coalescer<number, number>(
      async (items) => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 5));
        running -= 1;
        return items;
      },
      { batchMax: 1, inFlightMax: 2, queueMax: 1000 },
    );
    await Promise.all(Array.from({ length: 10 }, (_, i) => c.submit(i)));
    assert.equal(most, 2);
  });

  it('a failed batch rejects its callers only; the next batch runs', async () => {
    const gate = deferred();
    let calls = 0;
    const c = new Coalescer<number, number>(
      async (items) => {
        calls += 1;
        if (calls === 1) {
          await gate.promise;
          throw new Error('boom');
        }
        return items;
      },
      { batchMax: 10, inFlightMax: 1, queueMax: 1000 },
    );
    const failing = c.submit(1);
    const next = c.submit(2);
    gate.release();
    await assert.rejects(failing, /boom/);
    assert.equal(await next, 2);
  });

  it('a batch that returns the wrong number of results rejects, never misassigns', async () => {
    const c = new Coalescer<number, number>(async () => [], { batchMax: 10, inFlightMax: 1, queueMax: 1000 });
    await assert.rejects(c.submit(1), /invariant: a batch of 1 produced 0 results/);
  });
});
