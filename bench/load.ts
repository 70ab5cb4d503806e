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
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function run(job: LoadJob): Promise<LoadResult> {
  const pool = new Pool(job.origin, { connections: job.concurrency, pipelining: 1, keepAliveTimeout: 60_000 });
  let next = 0;
  const take = () => {
    if (next >= job.requests.length) {
      if (!job.cycle) return undefined;
      next = 0;
    }
    return job.requests[next++];
  };
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let measuring = false;
  let stop = false;
  let exhausted = false;

  let flowCounter = 0;
  const call = async (method: 'GET' | 'POST', path: string, headers: Record<string, string> | undefined, body?: string) => {
    const response = await pool.request({ method, path, headers, body });
    const status = response.statusCode;
    const text = await response.body.text();
    return { status, text };
  };
  const flowOnce = async (flow: NonNullable<LoadJob['flow']>): Promise<number> => {
    const headers = { 'x-api-key': flow.apiKey, 'content-type': 'application/json' };
    const quote = await call('POST', '/v1/quotes', headers, JSON.stringify({ deliver: { asset: 'BS', amount: flow.deliverAmount } }));
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

  const loop = async () => {
    while (!stop) {
      if (job.flow) {
        const started = performance.now();
        let status = 0;
        try {
          status = await flowOnce(job.flow);
        } catch {
          status = 0;
        }
        if (!measuring) continue;
        latencies.push(performance.now() - started);
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (!job.expectStatus.includes(status)) errors += 1;
        continue;
      }
      const request = take();
      if (!request) {
        exhausted = true;
        return;
      }
      const started = performance.now();
      let status = 0;
      try {
        const response = await pool.request({ method: request.method, path: request.path, headers: request.headers, body: request.body });
        status = response.statusCode;
        await response.body.dump();
      } catch {
        status = 0;
      }
      if (!measuring) continue;
      latencies.push(performance.now() - started);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (!job.expectStatus.includes(status)) errors += 1;
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
  const sorted = Float64Array.from(latencies).sort();
  const total = latencies.reduce((a, b) => a + b, 0);
  return {
    requests: latencies.length,
    errors,
    statuses,
    throughputPerS: latencies.length / elapsedS,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    meanMs: latencies.length ? total / latencies.length : 0,
    exhausted,
  };
}

if (process.argv[1] && process.argv[1].endsWith('load.ts')) {
  let input = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) input += chunk;
  const result = await run(JSON.parse(input) as LoadJob);
  process.stdout.write(JSON.stringify(result) + '\n');
}
