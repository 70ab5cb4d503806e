// The README's front door, pasted as a newcomer pastes it: the setup block, the eight walk-through
// steps, the SDK snippet and the simulate example run in one bash, in order, against the service
// started as `npm start` starts it on a new data directory. Each block's answer must be the one the
// README prints, apart from what differs per run (ids, times, keys, signatures, bank references,
// the port); a `…` in the README stands for any text. The only edits to the pasted text are the
// port, the data directory, and the new tenant's id where the README writes `<tenantId>`. An indented
// line of a printed answer continues the line above it (wrapped for reading).
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, ENGINE, type TestDatabase } from '../support/harness.ts';
import { freePort, startService, type ServiceProcess } from '../support/process.ts';
import { until } from '../support/until.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
/** Bound of one pasted block (the CLI's `npx` start is the slowest). */
const BLOCK_TIMEOUT_MS = 60_000;
/** Bound of the wait for the payment to settle and its webhook to reach the sink (3 s settle delay). */
const OUTCOME_WAIT_MS = 30_000;
const POLL_MS = 100;

interface Block {
  lang: string;
  body: string;
  /** The answer the README prints for it: the fenced block right after it, or its `# ` lines. */
  expected: string | undefined;
}

/** The fenced blocks of one README section, each with the answer printed after it. */
function blocksOf(heading: string, until: string): Block[] {
  const start = README.indexOf(heading);
  const end = README.indexOf(until, start + heading.length);
  assert.ok(start >= 0 && end > start, `README has ${heading} before ${until}`);
  const fences = [...README.slice(start, end).matchAll(/```(\w*)\n([\s\S]*?)```\n?/g)];
  const blocks: Block[] = [];
  for (let i = 0; i < fences.length; i += 1) {
    const [whole, lang, body] = fences[i]!;
    if (lang !== 'sh' && lang !== 'js') continue;
    const next = fences[i + 1];
    const adjacent = next && next.index === fences[i]!.index! + whole.length && next[1] !== 'sh' && next[1] !== 'js';
    const commented = body!.split('\n').filter((line) => /^#\s+[{[]/.test(line)).map((line) => line.replace(/^#\s+/, ''));
    blocks.push({ lang: lang!, body: body!, expected: adjacent ? next[2] : commented.length > 0 ? commented.join('\n') : undefined });
  }
  return blocks;
}

/** What differs between two runs of the same block. */
function normalize(text: string): string {
  return text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, '<time>')
    .replace(/bsk_[a-z]+_[A-Za-z0-9]+/g, '<key>')
    .replace(/sha256=[0-9a-f]{64}/g, 'sha256=<hmac>')
    .replace(/v1,[A-Za-z0-9+/]+=*/g, 'v1,<hmac>')
    .replace(/(?:localhost|127\.0\.0\.1):\d+/g, '<host>')
    .replace(/(\\?"(?:bank_reference|bankReference|x-timestamp|webhook-timestamp)\\?":\\?")\d+/g, '$1<digits>')
    .trim();
}

/** The README's answer as a pattern over the real one: `…` is any text; an indented line continues the one above. */
function assertAnswer(what: string, actual: string, expected: string): void {
  const pattern = normalize(expected)
    .replace(/\n[ \t]+/g, '')
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[\\s\\S]*?');
  const got = normalize(actual);
  assert.match(got, new RegExp(`^${pattern}$`), `${what}: the README prints\n${normalize(expected)}\nthe service answered\n${got}`);
}

/** One bash, fed block after block as a paste would, with its output cut at a marker per block. */
class Shell {
  private readonly child: ChildProcessWithoutNullStreams;
  private stdout = '';
  private stderr = '';
  private count = 0;

  constructor(env: NodeJS.ProcessEnv) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd: ROOT, env });
    this.child.stdout.on('data', (chunk) => (this.stdout += chunk));
    this.child.stderr.on('data', (chunk) => (this.stderr += chunk));
    // A command that fails stops the paste: the test sees bash exit, with its stderr.
    this.child.stdin.write('set -eo pipefail\n');
  }

  async paste(text: string): Promise<string> {
    this.count += 1;
    const marker = `@@@ block ${this.count} done`;
    const from = this.stdout.length;
    this.child.stdin.write(`${text}\necho '${marker}'\n`);
    // -1: bash exited (or the bound passed) before the block finished.
    const at = await until(`block ${this.count} done`, () => {
      const found = this.stdout.indexOf(marker, from);
      return found >= 0 ? found : this.child.exitCode !== null ? -1 : undefined;
    }, { timeoutMs: BLOCK_TIMEOUT_MS, intervalMs: POLL_MS }).catch(() => -1);
    if (at >= 0) return this.stdout.slice(from, at);
    throw new Error(`block ${this.count} did not finish (bash ${this.child.exitCode === null ? 'still running' : `exited ${this.child.exitCode}`}):\n${text}\nstdout:\n${this.stdout.slice(from)}\nstderr:\n${this.stderr}`);
  }

  close(): void {
    this.child.kill('SIGKILL');
  }
}

const OUTCOME_WAITS = { timeoutMs: OUTCOME_WAIT_MS, intervalMs: POLL_MS };

describe(`the README walk-through pasted into bash, on ${ENGINE}`, () => {
  let database: TestDatabase | undefined;
  let service: ServiceProcess;
  let shell: Shell;
  let dataDir: string;
  let port: number;

  before(async () => {
    database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    dataDir = mkdtempSync(path.join(tmpdir(), 'bds-readme-'));
    port = await freePort();
    // The defaults a newcomer runs with: the 3 s settle delay, the reaper's own schedule.
    service = await startService({ DATA_DIR: dataDir, DATABASE_URL: database?.url ?? '' }, port);
    shell = new Shell({ ...process.env, DATA_DIR: dataDir, PORT: String(port) });
  });

  after(async () => {
    shell?.close();
    await service?.stop();
    await database?.drop();
  });

  /** The block as pasted, pointed at this test's service and data directory. */
  const localize = (text: string) => text.replaceAll('localhost:3000', `127.0.0.1:${port}`).replaceAll('./data/bootstrap.json', path.join(dataDir, 'bootstrap.json'));

  it("the first-start banner is the one the README shows (the platform key is not in it)", () => {
    const from = README.indexOf('This is what `npm start`');
    const fence = /```\n([\s\S]*?)```/.exec(README.slice(from));
    assert.ok(from >= 0 && fence, 'the README shows the banner');
    const lines = (text: string) =>
      text
        .split('\n')
        .map((line) => normalize(line).replace(/^(saved to: +)\S+/, '$1<file>'))
        .filter((line) => line !== '');
    const output = service.output();
    const banner = output.slice(output.indexOf('  First start:'), output.indexOf('\n', output.indexOf('  curl -s ')));
    assert.deepEqual(lines(banner), lines(fence[1]!));
    const saved = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8')) as { platformApiKey: string };
    assert.ok(!output.includes(saved.platformApiKey), 'the platform key is never printed');
  });

  it('every block answers what the README prints', async () => {
    const walk = blocksOf('## Five-minute walk-through', '## SDK');
    assert.equal(walk.length, 9, 'the setup block and eight steps');
    const [setup, ...steps] = walk;
    assert.equal(await shell.paste(localize(setup!.body)), '', 'the setup block prints nothing');

    const saved = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8')) as { apiKey: string; platformApiKey: string };
    const get = async (url: string, key = saved.apiKey) => (await fetch(`${service.baseUrl}${url}`, { headers: { 'x-api-key': key } })).json() as Promise<Record<string, unknown>>;
    let paymentId: string | undefined;

    for (const [index, step] of steps.entries()) {
      const number = index + 1;
      if (number === 5) await until('the payment settled', async () => (await get(`/v1/payments/${paymentId}`)).status === 'settled', OUTCOME_WAITS);
      if (number === 6) await until("the payment's webhook reached the sink", async () => ((await get('/v1/sandbox/webhooks?limit=1')).data as unknown[]).length === 1, OUTCOME_WAITS);

      if (number === 8) {
        // Step 8 creates a tenant, then runs the CLI on it: the README's `<tenantId>` is that tenant.
        const [create, cli] = step.body.split(/\n(?=npx )/);
        const answer = await shell.paste(localize(create!));
        assertAnswer('step 8 (create a tenant)', answer, step.expected!);
        const tenantId = JSON.parse(answer).id as string;
        await shell.paste(localize(cli!.replaceAll('<tenantId>', tenantId)));
        const keys = (await get(`/v1/admin/tenants/${tenantId}/api-keys`, saved.platformApiKey)).data as unknown[];
        assert.equal(keys.length, 1, 'the CLI issued the new tenant a key');
        continue;
      }

      assert.ok(step.expected, `step ${number} shows its answer`);
      const answer = await shell.paste(localize(step.body));
      assertAnswer(`step ${number}`, answer, step.expected);
      if (number === 4) paymentId = JSON.parse(answer).id as string;
    }

    // The SDK snippet, run as a module from the project folder (where `@bolivar/sdk` resolves).
    const [sdk] = blocksOf('## SDK', '## Operator console');
    assert.equal(sdk?.lang, 'js');
    const listed = await shell.paste(`BOLIVAR_API_KEY=$KEY node --input-type=module <<'SNIPPET'\n${localize(sdk!.body)}SNIPPET`);
    assert.match(listed.trim(), /^[0-9a-f-]{36} (submitted|settled)$/, 'the snippet pays out and finds its payment by order id');

    // The simulate example, in the same shell after all of the above.
    const [simulate] = blocksOf('### Simulate an outcome now', '## What a payout promises');
    assert.ok(simulate?.expected);
    assertAnswer('the simulate example', await shell.paste(localize(simulate.body)), simulate.expected);
  });
});
