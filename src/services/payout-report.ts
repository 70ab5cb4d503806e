import type { PayoutReport, PayoutReportRequest } from '../contract/payout-report.ts';
import type { Database } from '../db/database.ts';
import { findTenant } from '../db/repositories/tenants.ts';
import { balancesAt, reportAggregates, type BalanceAtRow } from '../db/repositories/payout-report.ts';
import type { PaymentAggregates, ReportScope, WebhookBucketRow } from '../db/repositories/payout-report-rows.ts';
import type { Clock } from '../domain/clock.ts';
import { notFound, validationFailed, type FieldError } from '../domain/errors.ts';
import { INSTRUMENTS, type Instrument } from '../domain/instrument.ts';
import type { AuthContext } from '../domain/partition.ts';
import { PAYMENT_STATUSES, type PaymentStatus } from '../domain/payment-state.ts';
import { reportRangeOf, successRate, type ReportRange } from '../domain/payout-report.ts';
import type { BankCatalogue } from '../rails/catalogue.ts';
import { assert } from '../domain/assert.ts';

type ByStatus = PayoutReport['totals']['byStatus'];
type OutcomeTally = Omit<PayoutReport['banks'][number], 'bankCode' | 'bankName'>;

const emptyByStatus = (): ByStatus =>
  Object.fromEntries(PAYMENT_STATUSES.map((s) => [s, { count: 0, amount: '0' }])) as ByStatus;

function addTo(tally: ByStatus, status: PaymentStatus, count: number, amount: bigint): void {
  const entry = tally[status];
  entry.count += count;
  entry.amount = (BigInt(entry.amount) + amount).toString();
}

const IN_FLIGHT: ReadonlySet<PaymentStatus> = new Set(['created', 'pending', 'submitted', 'unknown']);

/** Counts of one grouping (a bank, an instrument) by status, with the success rate, most payments first. */
function outcomeTallies<K extends string | null>(
  rows: readonly [K, PaymentStatus, number][],
): { key: K; tally: OutcomeTally }[] {
  const byKey = new Map<K, OutcomeTally>();
  for (const [key, status, count] of rows) {
    const tally = byKey.get(key) ?? {
      count: 0,
      settled: 0,
      failed: 0,
      returned: 0,
      reversed: 0,
      inFlight: 0,
      successRate: null,
    };
    tally.count += count;
    if (IN_FLIGHT.has(status)) tally.inFlight += count;
    else tally[status as 'settled' | 'failed' | 'returned' | 'reversed'] += count;
    byKey.set(key, tally);
  }
  const out = [...byKey].map(([key, tally]) => ({ key, tally: { ...tally, successRate: successRate(tally) } }));
  return out.sort((a, b) => b.tally.count - a.tally.count || String(a.key).localeCompare(String(b.key)));
}

/** Who a key may report on: its own program, or (the platform key) any tenant or all of them in a mode. */
function scopeOf(auth: AuthContext, request: PayoutReportRequest): ReportScope {
  if (auth.isPlatform) {
    if (request.mode === undefined)
      throw validationFailed([{ field: 'mode', message: 'is required with the platform key: test or live' }]);
    return { tenantId: request.tenantId ?? null, mode: request.mode };
  }
  const errors: FieldError[] = [];
  if (request.tenantId !== undefined && request.tenantId !== auth.tenantId) {
    errors.push({ field: 'tenantId', message: "is for the platform key: a tenant's key reports on its own tenant" });
  }
  if (request.mode !== undefined && request.mode !== auth.mode) {
    errors.push({ field: 'mode', message: `must be ${auth.mode}, the mode of this key, or left out` });
  }
  if (errors.length > 0) throw validationFailed(errors);
  return { tenantId: auth.tenantId, mode: auth.mode };
}

/** The payout report: SQL aggregates over the range (src/db/repositories/payout-report.ts), shaped here. */
export class PayoutReportService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly catalogue: BankCatalogue,
  ) {}

  async report(auth: AuthContext, request: PayoutReportRequest): Promise<PayoutReport> {
    const scope = scopeOf(auth, request);
    const range = reportRangeOf({ from: request.from, to: request.to, granularity: request.granularity ?? 'day' });
    if (Array.isArray(range)) throw validationFailed(range);
    // A tenant the platform key names must exist: a mistyped id would otherwise read as a tenant with no payouts.
    if (scope.tenantId !== null && auth.isPlatform) {
      const tenant = await findTenant(this.db, scope.tenantId);
      if (!tenant || tenant.is_platform) throw notFound('tenant');
    }
    const now = this.clock.now();
    const window = {
      start: range.start,
      end: range.end,
      bucketStarts: range.bucketStarts,
      granularity: range.granularity,
    };
    const instants = balanceInstants(range, now);
    const [{ payments, webhooks }, balances, bankNames] = await Promise.all([
      reportAggregates(this.db, scope, window),
      balancesAt(this.db, scope, instants),
      this.bankNames(),
    ]);
    return {
      tenantId: scope.tenantId,
      mode: scope.mode,
      granularity: range.granularity,
      from: range.from,
      to: range.to,
      timeZone: 'America/Caracas',
      start: range.start.toISOString(),
      end: range.end.toISOString(),
      generatedAt: now.toISOString(),
      totals: totalsOf(payments),
      buckets: bucketsOf(range, payments, webhooks, balances, instants.length),
      banks: outcomeTallies(payments.banks).map(({ key, tally }) => ({
        bankCode: key ?? '',
        bankName: key === null ? null : (bankNames.get(key) ?? null),
        ...tally,
      })),
      instruments: outcomeTallies<Instrument | null>(payments.methods).map(({ key, tally }) => ({
        method: key,
        ...tally,
      })),
      failureReasons: payments.reasons
        .map(([status, reason, count, amount]) => ({
          status: status as 'failed' | 'returned' | 'reversed',
          reason,
          count,
          amount,
        }))
        .sort(
          (a, b) =>
            b.count - a.count || a.status.localeCompare(b.status) || String(a.reason).localeCompare(String(b.reason)),
        ),
    };
  }

  /** Bank names by code, from every instrument's catalogue (the first name a code carries). */
  private async bankNames(): Promise<Map<string, string>> {
    const names = new Map<string, string>();
    for (const method of INSTRUMENTS)
      for (const bank of await this.catalogue.list(method)) if (!names.has(bank.code)) names.set(bank.code, bank.name);
    return names;
  }
}

/** The instants whose balances the buckets show: each bucket's end, or now for the bucket under way; none for buckets not begun. */
function balanceInstants(range: ReportRange, now: Date): Date[] {
  const instants: Date[] = [];
  range.bucketStarts.forEach((start, i) => {
    if (start.getTime() > now.getTime()) return;
    const end = range.bucketStarts[i + 1] ?? range.end;
    instants.push(end.getTime() > now.getTime() ? now : end);
  });
  return instants;
}

function totalsOf(payments: PaymentAggregates): PayoutReport['totals'] {
  const byStatus = emptyByStatus();
  let count = 0;
  for (const [, status, n, amount] of payments.byBucket) {
    addTo(byStatus, status, n, BigInt(amount));
    count += n;
  }
  return { count, deliveredAmount: byStatus.settled.amount, byStatus };
}

function bucketsOf(
  range: ReportRange,
  payments: PaymentAggregates,
  webhooks: readonly WebhookBucketRow[],
  balances: readonly BalanceAtRow[],
  begun: number,
): PayoutReport['buckets'] {
  const buckets: PayoutReport['buckets'] = range.bucketStarts.map((start, i) => ({
    start: start.toISOString(),
    end: (range.bucketStarts[i + 1] ?? range.end).toISOString(),
    count: 0,
    deliveredAmount: '0',
    byStatus: emptyByStatus(),
    timeToOutcome: { count: 0, p50Ms: null, p95Ms: null },
    webhooks: { delivered: 0, rejected: 0, unreachable: 0, p50Ms: null, p95Ms: null },
    balances: [],
  }));
  const at = (b: number) => {
    const bucket = buckets[b - 1];
    assert(bucket, `the report's SQL put a row in bucket ${b} of ${buckets.length}`);
    return bucket;
  };
  for (const [b, status, n, amount] of payments.byBucket) {
    const bucket = at(b);
    addTo(bucket.byStatus, status, n, BigInt(amount));
    bucket.count += n;
    bucket.deliveredAmount = bucket.byStatus.settled.amount;
  }
  for (const [b, n, p50, p95] of payments.timing) at(b).timeToOutcome = { count: n, p50Ms: p50, p95Ms: p95 };
  for (const [b, delivered, rejected, unreachable, p50, p95] of webhooks)
    at(b).webhooks = { delivered, rejected, unreachable, p50Ms: p50, p95Ms: p95 };
  const assets = [...new Set(balances.map((row) => row.asset))].sort();
  const balanceOf = new Map(balances.map((row) => [`${row.instant}\t${row.asset}`, row]));
  for (let i = 0; i < buckets.length; i += 1) {
    buckets[i]!.balances = assets.map((asset) => {
      const row = i < begun ? balanceOf.get(`${i}\t${asset}`) : undefined;
      return {
        asset,
        prefundingBalance: row?.prefunding == null ? null : (-BigInt(row.prefunding)).toString(),
        creditDrawn: row?.creditReceivable ?? null,
      };
    });
  }
  return buckets;
}
