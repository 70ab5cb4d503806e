// The load generator: a separate process so that its CPU is not the service's. It reads a job from
// argv (JSON), drives `concurrency` closed loops over HTTP/1.1 keep-alive (undici Pool) for a warm-up
// then a fixed duration, and prints one JSON line of results.
import { Pool } from 'undici';

export interface LoadJob {
  origin: string;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** Each request is built from the next item; items are consumed once (warm-up included). */
  requests: Array<{ method: 'GET' | 'POST'; path: string; headers?: Record<string, string>; body?: string }>;
  /** When set, the request list is reused round-robin (read-only scenarios). */
  cycle?: boolean;
  /** Send every request of the list once and measure them all (no warm-up, no time window). */
  drain?: boolean;
  expectStatus: number[];
  /**
   * The answers are payout batches: each expected answer's items are tallied by status, and an item
   * in any other status than this one counts in `itemErrors`.
   */
  expectItemStatus?: string;
  /** The two-call flow instead of `requests`: POST /v1/quotes then POST /v1/payouts with its id. */
  flow?: { apiKey: string; beneficiaryIds: string[]; sender: Record<string, string>; deliverAmount: number };
}

/** The figures every measured scenario reports (results.json), each against its ceiling. */
export interface ScenarioFigures {
  throughput_per_s: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  ceiling_throughput_per_s: number;
  ratio: number;
}

export interface LoadResult {
  requests: number;
  errors: number;
  statuses: Record<string, number>;
  throughputPerS: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  exhausted: boolean;
  /** With `expectItemStatus`: the items of the expected answers by status, and those in another one. */
  itemStatuses: Record<string, number>;
  itemErrors: number;
  /** With `expectItemStatus`: the first few unexpected answers and items, to say what went wrong. */
  errorSamples: string[];
  /**
   * CPU seconds (user + system) the load generator used over its whole life, start-up included: the
   * kernel's count (getrusage, the figures of /proc/PID/stat), read by the process itself just before
   * it exits, since its parent can no longer read its /proc entry afterwards.
   */
  cpuSeconds: number;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Unexpected answers and items kept to say what went wrong, at most, each cut to 500 characters. */
const ERROR_SAMPLES_MAX = 5;

/** With `expectItemStatus`: the items of the expected answers by status, and samples of what was not expected. */
class BatchAnswers {
  readonly itemStatuses: Record<string, number> = {};
  itemErrors = 0;
  readonly errorSamples: string[] = [];

  constructor(private readonly expectItemStatus: string | undefined) {}

  unexpected(status: number, answer: string): void {
    this.sample(`${status} ${answer}`);
  }

  expected(answer: string): void {
    for (const item of (JSON.parse(answer) as { items?: Array<{ status: string }> }).items ?? []) {
      this.itemStatuses[item.status] = (this.itemStatuses[item.status] ?? 0) + 1;
      if (item.status === this.expectItemStatus) continue;
      this.itemErrors += 1;
      this.sample(JSON.stringify(item));
    }
  }

  private sample(text: string): void {
    if (this.errorSamples.length < ERROR_SAMPLES_MAX) this.errorSamples.push(text.slice(0, 500));
  }
}

/** One request of the list: its status (0 when it got no answer) and, when `keepAnswer`, the answer's text. */
async function send(
  pool: Pool,
  request: LoadJob['requests'][number],
  keepAnswer: boolean,
): Promise<{ status: number; answer?: string }> {
  let status = 0;
  try {
    const response = await pool.request({
      method: request.method,
      path: request.path,
      headers: request.headers,
      body: request.body,
    });
    status = response.statusCode;
    if (keepAnswer) return { status, answer: await response.body.text() };
    await response.body.dump();
  } catch {
    // no answer, or not all of it: status stays what was received
  }
  return { status };
}

/** The two-call flow: POST /v1/quotes then POST /v1/payouts with its id; answers the last status. */
function flowCaller(pool: Pool, flow: NonNullable<LoadJob['flow']>): () => Promise<number> {
  let flowCounter = 0;
  const call = async (
    method: 'GET' | 'POST',
    path: string,
    headers: Record<string, string> | undefined,
    body?: string,
  ) => {
    const response = await pool.request({ method, path, headers, body });
    const status = response.statusCode;
    const text = await response.body.text();
    return { status, text };
  };
  return async (): Promise<number> => {
    const headers = { 'x-api-key': flow.apiKey, 'content-type': 'application/json' };
    const quote = await call(
      'POST',
      '/v1/quotes',
      headers,
      JSON.stringify({ deliver: { asset: 'BS', amount: flow.deliverAmount } }),
    );
    if (quote.status !== 201) return quote.status;
    const n = flowCounter++;
    const payout = await call(
      'POST',
      '/v1/payouts',
      { ...headers, 'idempotency-key': `bench-flow-${process.pid}-${n}` },
      JSON.stringify({
        quoteId: (JSON.parse(quote.text) as { id: string }).id,
        method: 'pago_movil',
        beneficiaryId: flow.beneficiaryIds[n % flow.beneficiaryIds.length],
        sender: flow.sender,
      }),
    );
    return payout.status;
  };
}

function latencyFigures(
  latencies: number[],
  elapsedS: number,
): Pick<LoadResult, 'requests' | 'throughputPerS' | 'p50Ms' | 'p99Ms' | 'meanMs'> {
  const sorted = Float64Array.from(latencies).sort();
  const total = latencies.reduce((a, b) => a + b, 0);
  return {
    requests: latencies.length,
    throughputPerS: latencies.length / elapsedS,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    meanMs: latencies.length ? total / latencies.length : 0,
  };
}

/** The next request of the list (round-robin with `cycle`); undefined once a list sent once is used up. */
function requestSource(job: LoadJob): () => LoadJob['requests'][number] | undefined {
  let next = 0;
  return () => {
    if (next >= job.requests.length) {
      if (!job.cycle) return undefined;
      next = 0;
    }
    return job.requests[next++];
  };
}

async function run(job: LoadJob): Promise<Omit<LoadResult, 'cpuSeconds'>> {
  const pool = new Pool(job.origin, { connections: job.concurrency, pipelining: 1, keepAliveTimeout: 60_000 });
  const take = requestSource(job);
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let measuring = false;
  let stop = false;
  let exhausted = false;
  const answers = new BatchAnswers(job.expectItemStatus);
  const record = (started: number, status: number, answer: string | undefined) => {
    if (!measuring) return;
    latencies.push(performance.now() - started);
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (!job.expectStatus.includes(status)) {
      errors += 1;
      if (answer !== undefined) answers.unexpected(status, answer);
    } else if (answer !== undefined) answers.expected(answer);
  };
  const flowOnce = job.flow && flowCaller(pool, job.flow);

  const loop = async () => {
    while (!stop) {
      if (flowOnce) {
        const started = performance.now();
        record(started, await flowOnce().catch(() => 0), undefined);
        continue;
      }
      const request = take();
      if (!request) {
        exhausted = true;
        return;
      }
      const started = performance.now();
      const { status, answer } = await send(pool, request, job.expectItemStatus !== undefined);
      record(started, status, answer);
    }
  };

  let elapsedS: number;
  if (job.drain) {
    measuring = true;
    const startedAt = performance.now();
    await Promise.all(Array.from({ length: job.concurrency }, loop));
    elapsedS = (performance.now() - startedAt) / 1000;
    exhausted = false;
  } else {
    const loops = Array.from({ length: job.concurrency }, loop);
    await new Promise((r) => setTimeout(r, job.warmupMs));
    measuring = true;
    const startedAt = performance.now();
    await new Promise((r) => setTimeout(r, job.durationMs));
    measuring = false;
    elapsedS = (performance.now() - startedAt) / 1000;
    stop = true;
    await Promise.all(loops);
  }
  await pool.close();
  return {
    ...latencyFigures(latencies, elapsedS),
    errors,
    statuses,
    exhausted,
    itemStatuses: answers.itemStatuses,
    itemErrors: answers.itemErrors,
    errorSamples: answers.errorSamples,
  };
}

if (process.argv[1] && process.argv[1].endsWith('load.ts')) {
  let input = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) input += chunk;
  const result = await run(JSON.parse(input) as LoadJob);
  const used = process.cpuUsage();
  const cpuSeconds = Number(((used.user + used.system) / 1e6).toFixed(3));
  process.stdout.write(JSON.stringify({ ...result, cpuSeconds } satisfies LoadResult) + '\n');
}
