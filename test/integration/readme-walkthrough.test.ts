// The walk-throughs, pasted as a newcomer pastes them: the README's five-minute payout (the setup
// block, a quote, a beneficiary, the payout, the payment read back), and the full walk-through of
// docs/quickstart.md (the setup block, the eight steps, the SDK snippet and the simulate example),
// each in one bash, in order, against a service of its own started as `npm start` starts it on a new
// data directory. Each block's answer must be the one the document prints, apart from what differs
// per run (ids, times, keys, signatures, bank references, the port); a `…` in the document stands
// for any text. The only edits to the pasted text are the port, the data directory, and the new
// tenant's id where the document writes `<tenantId>`. An indented line of a printed answer continues
// the line above it (wrapped for reading). Both documents show the first-start banner, checked too.
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
/** A document whose blocks are pasted: its path (for messages) and its text. */
interface Document {
  file: string;
  text: string;
}
const read = (file: string): Document => ({ file, text: readFileSync(path.join(ROOT, file), 'utf8') });
const README = read('README.md');
const QUICKSTART = read('docs/quickstart.md');
/** Bound of one pasted block (the CLI's `npx` start is the slowest). */
const BLOCK_TIMEOUT_MS = 60_000;
/** Bound of the wait for the payment to settle and its webhook to reach the sink (3 s settle delay). */
const OUTCOME_WAIT_MS = 30_000;
const POLL_MS = 100;

interface Block {
  lang: string;
  body: string;
  /** The answer the document prints for it: the fenced block right after it, or its `# ` lines. */
  expected: string | undefined;
}

/** The fenced blocks of one section of a document (to `until`, or to its end), each with the answer printed after it. */
function blocksOf(document: Document, heading: string, until?: string): Block[] {
  const text = document.text;
  const start = text.indexOf(heading);
  const end = until === undefined ? text.length : text.indexOf(until, start + heading.length);
  assert.ok(
    start >= 0 && end > start,
    `${document.file} has ${heading}${until === undefined ? '' : ` before ${until}`}`,
  );
  const fences = [...text.slice(start, end).matchAll(/```(\w*)\n([\s\S]*?)```\n?/g)];
  const blocks: Block[] = [];
  for (let i = 0; i < fences.length; i += 1) {
    const [whole, lang, body] = fences[i]!;
    if (lang !== 'sh' && lang !== 'js') continue;
    const next = fences[i + 1];
    const adjacent = next && next.index === fences[i]!.index! + whole.length && next[1] !== 'sh' && next[1] !== 'js';
    const commented = body!
      .split('\n')
      .filter((line) => /^#\s+[{[]/.test(line))
      .map((line) => line.replace(/^#\s+/, ''));
    blocks.push({
      lang: lang!,
      body: body!,
      expected: adjacent ? next[2] : commented.length > 0 ? commented.join('\n') : undefined,
    });
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

/** The document's answer as a pattern over the real one: `…` is any text; an indented line continues the one above. */
function assertAnswer(what: string, actual: string, expected: string): void {
  const pattern = normalize(expected)
    .replace(/\n[ \t]+/g, '')
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[\\s\\S]*?');
  const got = normalize(actual);
  assert.match(
    got,
    new RegExp(`^${pattern}$`),
    `${what}: the document prints\n${normalize(expected)}\nthe service answered\n${got}`,
  );
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
    const at = await until(
      `block ${this.count} done`,
      () => {
        const found = this.stdout.indexOf(marker, from);
        return found >= 0 ? found : this.child.exitCode !== null ? -1 : undefined;
      },
      { timeoutMs: BLOCK_TIMEOUT_MS, intervalMs: POLL_MS },
    ).catch(() => -1);
    if (at >= 0) return this.stdout.slice(from, at);
    throw new Error(
      `block ${this.count} did not finish (bash ${this.child.exitCode === null ? 'still running' : `exited ${this.child.exitCode}`}):\n${text}\nstdout:\n${this.stdout.slice(from)}\nstderr:\n${this.stderr}`,
    );
  }

  close(): void {
    this.child.kill('SIGKILL');
  }
}

const OUTCOME_WAITS = { timeoutMs: OUTCOME_WAIT_MS, intervalMs: POLL_MS };

/** A service started as `npm start` starts it on a new data directory, and one bash pointed at it. */
class Session {
  private database: TestDatabase | undefined;
  service!: ServiceProcess;
  shell!: Shell;
  dataDir!: string;
  port!: number;

  async start(): Promise<void> {
    this.database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    this.dataDir = mkdtempSync(path.join(tmpdir(), 'bds-walkthrough-'));
    this.port = await freePort();
    // The defaults a newcomer runs with: the 3 s settle delay, the reaper's own schedule.
    this.service = await startService({ DATA_DIR: this.dataDir, DATABASE_URL: this.database?.url ?? '' }, this.port);
    this.shell = new Shell({ ...process.env, DATA_DIR: this.dataDir, PORT: String(this.port) });
  }

  async stop(): Promise<void> {
    this.shell?.close();
    await this.service?.stop();
    await this.database?.drop();
  }

  /** The block as pasted, pointed at this session's service and data directory. */
  localize(text: string): string {
    return text
      .replaceAll('localhost:3000', `127.0.0.1:${this.port}`)
      .replaceAll('./data/bootstrap.json', path.join(this.dataDir, 'bootstrap.json'));
  }

  saved(): { apiKey: string; platformApiKey: string } {
    return JSON.parse(readFileSync(path.join(this.dataDir, 'bootstrap.json'), 'utf8'));
  }

  async get(url: string, key = this.saved().apiKey): Promise<Record<string, unknown>> {
    return (await fetch(`${this.service.baseUrl}${url}`, { headers: { 'x-api-key': key } })).json() as Promise<
      Record<string, unknown>
    >;
  }

  /** The first-start banner the service printed is the one `document` shows, and the platform key is not in it. */
  checkBanner(document: Document): void {
    const from = document.text.indexOf('This is what `npm start`');
    const fence = /```\n([\s\S]*?)```/.exec(document.text.slice(from));
    assert.ok(from >= 0 && fence, `${document.file} shows the banner`);
    const lines = (text: string) =>
      text
        .split('\n')
        .map((line) => normalize(line).replace(/^(saved to: +)\S+/, '$1<file>'))
        .filter((line) => line !== '');
    const output = this.service.output();
    const banner = output.slice(output.indexOf('  First start:'), output.indexOf('\n', output.indexOf('  curl -s ')));
    assert.deepEqual(lines(banner), lines(fence[1]!));
    assert.ok(!output.includes(this.saved().platformApiKey), 'the platform key is never printed');
  }

  /**
   * Pastes the setup block (it must print nothing), then each block in turn, checking each answer.
   * Before the block that reads the payment it waits for the settlement, before the one that reads
   * the sink for the webhook; a block naming `<tenantId>` creates a tenant, then runs the CLI on it.
   */
  async walk(document: Document, blocks: Block[]): Promise<void> {
    const [setup, ...steps] = blocks;
    assert.equal(
      await this.shell.paste(this.localize(setup!.body)),
      '',
      `${document.file}: the setup block prints nothing`,
    );
    let paymentId: string | undefined;
    for (const [index, step] of steps.entries()) {
      const what = `${document.file}, block ${index + 2}`;
      if (step.body.includes('/v1/payments/$PAYMENT')) {
        await until(
          'the payment settled',
          async () => (await this.get(`/v1/payments/${paymentId}`)).status === 'settled',
          OUTCOME_WAITS,
        );
      }
      if (step.body.includes('/v1/sandbox/webhooks')) {
        await until(
          "the payment's webhook reached the sink",
          async () => ((await this.get('/v1/sandbox/webhooks?limit=1')).data as unknown[]).length === 1,
          OUTCOME_WAITS,
        );
      }
      if (step.body.includes('<tenantId>')) {
        const [create, cli] = step.body.split(/\n(?=npx )/);
        const answer = await this.shell.paste(this.localize(create!));
        assertAnswer(`${what} (create a tenant)`, answer, step.expected!);
        const tenantId = JSON.parse(answer).id as string;
        await this.shell.paste(this.localize(cli!.replaceAll('<tenantId>', tenantId)));
        const keys = (await this.get(`/v1/admin/tenants/${tenantId}/api-keys`, this.saved().platformApiKey))
          .data as unknown[];
        assert.equal(keys.length, 1, 'the CLI issued the new tenant a key');
        continue;
      }
      assert.ok(step.expected, `${what} shows its answer`);
      const answer = await this.shell.paste(this.localize(step.body));
      assertAnswer(what, answer, step.expected);
      if (step.body.includes('/v1/payouts')) paymentId = JSON.parse(answer).id as string;
    }
  }
}

describe(`the README's five-minute payout pasted into bash, on ${ENGINE}`, () => {
  const session = new Session();
  before(() => session.start());
  after(() => session.stop());

  it('the first-start banner is the one the README shows (the platform key is not in it)', () => {
    session.checkBanner(README);
  });

  it('every block answers what the README prints: a quote, a beneficiary, the payout, the settled payment', async () => {
    const blocks = blocksOf(README, '## A five-minute payout', '## Guides');
    assert.equal(blocks.length, 5, 'the setup block and four steps');
    await session.walk(README, blocks);
  });
});

describe(`the full walk-through (docs/quickstart.md) pasted into bash, on ${ENGINE}`, () => {
  const session = new Session();
  before(() => session.start());
  after(() => session.stop());

  it('the first-start banner is the one the quickstart shows (the platform key is not in it)', () => {
    session.checkBanner(QUICKSTART);
  });

  it('every block answers what the quickstart prints', async () => {
    const walk = blocksOf(QUICKSTART, '## Five-minute walk-through', '## SDK');
    assert.equal(walk.length, 9, 'the setup block and eight steps');
    await session.walk(QUICKSTART, walk);

    // The SDK snippet, run as a module from the project folder (where `@bolivar/sdk` resolves).
    const [sdk] = blocksOf(QUICKSTART, '## SDK', '## Operator console');
    assert.equal(sdk?.lang, 'js');
    const listed = await session.shell.paste(
      `BOLIVAR_API_KEY=$KEY node --input-type=module <<'SNIPPET'\n${session.localize(sdk!.body)}SNIPPET`,
    );
    assert.match(
      listed.trim(),
      /^[0-9a-f-]{36} (submitted|settled)$/,
      'the snippet pays out and finds its payment by order id',
    );

    // The simulate example, in the same shell after all of the above.
    const [simulate] = blocksOf(QUICKSTART, '### Simulate an outcome now', '## Where next');
    assert.ok(simulate?.expected);
    assertAnswer('the simulate example', await session.shell.paste(session.localize(simulate.body)), simulate.expected);
  });
});
