// A retrying payout client, as a careful integrator writes one: quote, then POST /v1/payouts with one
// Idempotency-Key, retried with the SAME key and the SAME body until it gets a final answer:
//
//   retried  connection errors and resets, request timeouts, 503 (service_unavailable, overloaded:
//            honouring Retry-After), 409 idempotency_request_in_progress, and 500 (recorded as a bug)
//   final    201 (submitted, settled, failed, …) and every other 4xx
//
// Requests are spread over the HTTP processes; a connection error moves the key to the next one.
// For every key it records every answer, every distinct payment id seen in a 201, and every 500.
import { SENDER } from './payouts.ts';

export interface PayoutSpec {
  key: string;
  /** Picks the sandbox outcome (V99990001…V99990009, or any other id). */
  nationalId: string;
  /** BS minor units delivered (below the rail floor the payout fails before the rail). */
  deliver: number;
  customerId?: string;
  accountNumber?: string;
  fullName?: string;
}

export interface Answer {
  /** ms since the client was created */
  at: number;
  endpoint: string;
  /** HTTP status, or the network error's code/message */
  status: number | string;
  code?: string;
  paymentId?: string;
  paymentStatus?: string;
  replayed?: boolean;
  requestId?: string;
  ms: number;
}

interface FinalAnswer {
  status: number;
  code?: string;
  paymentId?: string;
  paymentStatus?: string;
  body: any;
}

export interface KeyRecord {
  spec: PayoutSpec;
  quoteId?: string;
  /** The exact body sent on every attempt. */
  body?: Record<string, unknown>;
  quoteAnswers: Answer[];
  answers: Answer[];
  /** Every distinct payment id named by a 201 for this key. */
  paymentIds: Set<string>;
  final?: FinalAnswer;
  /** Every 500 (quote or payout), with its body: a bug. */
  serverErrors: Array<Answer & { body: string; what: 'quote' | 'payout' }>;
  /** Set when the client ran out of time without a final answer. */
  gaveUp?: string;
  startedAt: number;
  finishedAt?: number;
}

export interface ChaosClientOptions {
  /** The HTTP processes' base URLs (called before each attempt: the set may change). */
  endpoints: () => string[];
  apiKey: string;
  /** The longest one payout (quote included) is retried. */
  deadlinePerPayoutMs?: number;
  /** One HTTP request's own bound. */
  requestTimeoutMs?: number;
  /** Upper bound of the exponential backoff between attempts. */
  maxBackoffMs?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

function networkErrorCode(error: unknown): string {
  const e = error as {
    name?: string;
    code?: string;
    message?: string;
    cause?: { code?: string; message?: string; name?: string };
  };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'TIMEOUT';
  return e?.cause?.code ?? e?.code ?? e?.cause?.name ?? e?.cause?.message ?? e?.message ?? String(error);
}

export class ChaosClient {
  readonly records = new Map<string, KeyRecord>();
  private readonly t0 = Date.now();
  private spread = 0;
  private readonly deadlineMs: number;
  private readonly requestTimeoutMs: number;
  private readonly maxBackoffMs: number;

  constructor(private readonly options: ChaosClientOptions) {
    this.deadlineMs = options.deadlinePerPayoutMs ?? 60_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 20_000;
    this.maxBackoffMs = options.maxBackoffMs ?? 1_000;
  }

  /** The payout body this client sends for a spec and quote (the same bytes on every retry). */
  static bodyOf(spec: PayoutSpec, quoteId: string): Record<string, unknown> {
    return {
      quoteId,
      method: 'pago_movil',
      beneficiary: {
        fullName: spec.fullName ?? 'María Pérez',
        nationalId: spec.nationalId,
        bankCode: '0102',
        phone: '04241234567',
        ...(spec.accountNumber ? { accountNumber: spec.accountNumber } : {}),
      },
      sender: SENDER,
      ...(spec.customerId ? { customerId: spec.customerId } : {}),
    };
  }

  /** Runs every spec, `concurrency` at a time. */
  async runAll(specs: readonly PayoutSpec[], concurrency: number): Promise<KeyRecord[]> {
    let next = 0;
    const runners = Array.from({ length: Math.min(concurrency, specs.length) }, async () => {
      while (next < specs.length) {
        const spec = specs[next]!;
        next += 1;
        await this.payout(spec);
      }
    });
    await Promise.all(runners);
    return specs.map((s) => this.records.get(s.key)!);
  }

  /** Quote, then the payout with retries; never throws. */
  async payout(spec: PayoutSpec): Promise<KeyRecord> {
    if (this.records.has(spec.key)) throw new Error(`key ${spec.key} used twice by the test`);
    const record: KeyRecord = {
      spec,
      quoteAnswers: [],
      answers: [],
      paymentIds: new Set(),
      serverErrors: [],
      startedAt: Date.now() - this.t0,
    };
    this.records.set(spec.key, record);
    const deadline = Date.now() + this.deadlineMs;
    let endpoint = this.spread++;

    // The quote: not idempotent, so a retry may leave an unused quote behind (harmless).
    let attempt = 0;
    while (record.quoteId === undefined) {
      if (Date.now() > deadline) {
        record.gaveUp = `no quote within ${this.deadlineMs} ms`;
        record.finishedAt = Date.now() - this.t0;
        return record;
      }
      const base = this.pick(endpoint);
      const outcome = await this.send(base, 'POST', '/v1/quotes', { deliver: { asset: 'BS', amount: spec.deliver } });
      record.quoteAnswers.push(outcome.answer);
      if (outcome.result?.status === 201) {
        record.quoteId = outcome.result.json.id;
        break;
      }
      if (outcome.result?.status === 500)
        record.serverErrors.push({ ...outcome.answer, body: outcome.result.text, what: 'quote' });
      if (outcome.result && outcome.result.status < 500 && outcome.result.status !== 429) {
        record.final = {
          status: outcome.result.status,
          code: outcome.answer.code,
          body: outcome.result.json ?? outcome.result.text,
        };
        record.finishedAt = Date.now() - this.t0;
        return record;
      }
      endpoint += 1;
      attempt += 1;
      await sleep(this.backoff(attempt, outcome.result));
    }

    record.body = ChaosClient.bodyOf(spec, record.quoteId as string);
    attempt = 0;
    for (;;) {
      if (Date.now() > deadline) {
        record.gaveUp = `no final answer within ${this.deadlineMs} ms (last: ${JSON.stringify(record.answers.at(-1))})`;
        break;
      }
      const base = this.pick(endpoint);
      const outcome = await this.send(base, 'POST', '/v1/payouts', record.body, { 'idempotency-key': spec.key });
      record.answers.push(outcome.answer);
      const result = outcome.result;
      if (result?.status === 201) {
        if (outcome.answer.paymentId) record.paymentIds.add(outcome.answer.paymentId);
        record.final = {
          status: 201,
          paymentId: outcome.answer.paymentId,
          paymentStatus: outcome.answer.paymentStatus,
          body: result.json,
        };
        break;
      }
      if (result?.status === 500) record.serverErrors.push({ ...outcome.answer, body: result.text, what: 'payout' });
      const retryable =
        result === undefined ||
        result.status >= 500 ||
        result.status === 429 ||
        (result.status === 409 && outcome.answer.code === 'idempotency_request_in_progress');
      if (!retryable) {
        record.final = { status: result.status, code: outcome.answer.code, body: result.json ?? result.text };
        break;
      }
      // A dead or overloaded process: the next attempt goes to another one.
      if (result === undefined || result.status >= 500) endpoint += 1;
      attempt += 1;
      await sleep(this.backoff(attempt, result));
    }
    record.finishedAt = Date.now() - this.t0;
    return record;
  }

  /** Keys whose 201s named more than one payment. */
  keysWithSeveralPayments(): KeyRecord[] {
    return [...this.records.values()].filter((r) => r.paymentIds.size > 1);
  }

  /** Every 500 answered, with its key. */
  serverErrors(): Array<{ key: string } & KeyRecord['serverErrors'][number]> {
    return [...this.records.values()].flatMap((r) => r.serverErrors.map((e) => ({ key: r.spec.key, ...e })));
  }

  /** How often each answer was seen, e.g. {"201": 290, "503:service_unavailable": 4, "ECONNREFUSED": 12}. */
  answerCounts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const r of this.records.values()) {
      for (const a of [...r.quoteAnswers.map((q) => ({ ...q, status: `quote ${q.status}` })), ...r.answers]) {
        const label = a.code ? `${a.status}:${a.code}` : a.replayed ? `${a.status} replayed` : String(a.status);
        counts[label] = (counts[label] ?? 0) + 1;
      }
    }
    return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
  }

  /** A short, readable account of one key for failure messages. */
  static describe(record: KeyRecord): string {
    return JSON.stringify(
      {
        key: record.spec.key,
        spec: record.spec,
        quoteId: record.quoteId,
        paymentIds: [...record.paymentIds],
        final: record.final && { ...record.final, body: undefined },
        gaveUp: record.gaveUp,
        answers: record.answers.map(
          (a) =>
            `${a.at}ms ${a.endpoint} ${a.status}${a.code ? `:${a.code}` : ''}${a.paymentId ? ` ${a.paymentId}/${a.paymentStatus}` : ''}${a.replayed ? ' replayed' : ''} ${a.requestId ?? ''}`,
        ),
        serverErrors: record.serverErrors,
      },
      null,
      1,
    );
  }

  private pick(index: number): string {
    const endpoints = this.options.endpoints();
    if (endpoints.length === 0) throw new Error('the chaos client has no endpoint');
    return endpoints[index % endpoints.length]!;
  }

  private backoff(attempt: number, result: HttpResult | undefined): number {
    const exponential = Math.min(this.maxBackoffMs, 50 * 2 ** Math.min(attempt, 10));
    const jittered = exponential * (0.5 + Math.random() / 2);
    const retryAfter = Number(result?.headers.get('retry-after'));
    return Number.isFinite(retryAfter) && retryAfter > 0
      ? Math.max(jittered, Math.min(retryAfter * 1000, this.maxBackoffMs))
      : jittered;
  }

  private async send(
    base: string,
    method: 'GET' | 'POST',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ answer: Answer; result?: HttpResult }> {
    const started = Date.now();
    const answer: Answer = {
      at: started - this.t0,
      endpoint: base.replace('http://127.0.0.1:', ':'),
      status: 0,
      ms: 0,
    };
    try {
      const response = await fetch(`${base}${url}`, {
        method,
        headers: {
          'x-api-key': this.options.apiKey,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.requestTimeoutMs),
      });
      const text = await response.text();
      let json: any;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      answer.status = response.status;
      answer.ms = Date.now() - started;
      answer.requestId = response.headers.get('x-request-id') ?? undefined;
      if (json?.error?.code) answer.code = json.error.code;
      if (response.status === 201 && typeof json?.id === 'string' && url === '/v1/payouts') {
        answer.paymentId = json.id;
        answer.paymentStatus = json.status;
        answer.replayed = response.headers.get('idempotent-replayed') === 'true';
      }
      return { answer, result: { status: response.status, headers: response.headers, text, json } };
    } catch (error) {
      answer.status = networkErrorCode(error);
      answer.ms = Date.now() - started;
      return { answer };
    }
  }
}
