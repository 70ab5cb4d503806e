import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BackgroundShare } from '../../src/services/background-share.ts';

/** A unit held open until released, recording when it started. */
function heldUnit(started: string[], name: string) {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  return {
    release,
    run: () => {
      started.push(name);
      return done.then(() => name);
    },
  };
}

const turns = async (n = 5) => {
  for (let i = 0; i < n; i += 1) await new Promise((resolve) => setImmediate(resolve));
};

describe('the background share: requests first', () => {
  it('with no request in flight, units run side by side up to the maximum', async () => {
    const share = new BackgroundShare(1, 3);
    const started: string[] = [];
    const units = ['a', 'b', 'c', 'd'].map((name) => heldUnit(started, name));
    const results = units.map((unit) => share.run(unit.run));
    await turns();
    assert.deepEqual(started, ['a', 'b', 'c']);
    assert.deepEqual(share.state, { requests: 0, running: 3, waiting: 1 });
    units[0]!.release();
    await turns();
    assert.deepEqual(started, ['a', 'b', 'c', 'd']);
    for (const unit of units) unit.release();
    assert.deepEqual(await Promise.all(results), ['a', 'b', 'c', 'd']);
    assert.deepEqual(share.state, { requests: 0, running: 0, waiting: 0 });
  });

  it('while a request is in flight, one unit runs at a time; when the last request ends, the waiting ones run', async () => {
    const share = new BackgroundShare(1, 8);
    const started: string[] = [];
    share.requestStarted();
    share.requestStarted();
    const units = ['a', 'b', 'c'].map((name) => heldUnit(started, name));
    const results = units.map((unit) => share.run(unit.run));
    await turns();
    assert.deepEqual(started, ['a'], 'beside requests, one unit');
    units[0]!.release();
    await turns();
    assert.deepEqual(started, ['a', 'b'], 'the next waits for the one before it, in arrival order');
    share.requestEnded();
    await turns();
    assert.deepEqual(started, ['a', 'b'], 'one request is still in flight');
    share.requestEnded();
    await turns();
    assert.deepEqual(started, ['a', 'b', 'c'], 'no request left: the share opens');
    for (const unit of units) unit.release();
    await Promise.all(results);
  });

  it('a unit that fails frees its place and its error reaches its caller', async () => {
    const share = new BackgroundShare(1, 1);
    await assert.rejects(
      share.run(async () => {
        throw new Error('pass failed');
      }),
      /pass failed/,
    );
    assert.equal(await share.run(async () => 'next'), 'next');
    assert.deepEqual(share.state, { requests: 0, running: 0, waiting: 0 });
  });

  it('refuses bounds that would let nothing run, and a request ended twice', () => {
    assert.throws(() => new BackgroundShare(0, 4), /invariant/);
    assert.throws(() => new BackgroundShare(2, 1), /invariant/);
    assert.throws(() => new BackgroundShare().requestEnded(), /invariant/);
  });
});
