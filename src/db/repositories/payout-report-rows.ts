import type { PaymentStatus } from '../../domain/payment-state.ts';
import type { Mode } from '../../domain/partition.ts';
import type { Instrument } from '../../domain/instrument.ts';
import type { ReportGranularity } from '../../domain/payout-report.ts';

// The shapes the payout report's reads return, whichever way they read (rollups or raw).

/** Who the report covers: one tenant, or every tenant but the platform (`tenantId` null). */
export interface ReportScope {
  tenantId: string | null;
  mode: Mode;
}

export interface ReportWindow {
  start: Date;
  end: Date;
  bucketStarts: readonly Date[];
  granularity: ReportGranularity;
}

/** [bucket (1-based), status, count, payout amount]. */
type BucketStatusRow = [number, PaymentStatus, number, string];
/** [bucket, payments with an outcome, p50 ms, p95 ms]. */
export type BucketTimingRow = [number, number, number, number];
/** [bank code, status, count]. */
type BankStatusRow = [string | null, PaymentStatus, number];
/** [method, status, count]. */
type MethodStatusRow = [Instrument | null, PaymentStatus, number];
/** [status, reason, count, payout amount]. */
type ReasonRow = [PaymentStatus, string | null, number, string];

export interface PaymentAggregates {
  byBucket: BucketStatusRow[];
  timing: BucketTimingRow[];
  banks: BankStatusRow[];
  methods: MethodStatusRow[];
  reasons: ReasonRow[];
}

/** [bucket, delivered, rejected, unreachable, p50 ms, p95 ms]. */
export type WebhookBucketRow = [number, number, number, number, number, number];
