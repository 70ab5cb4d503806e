// `new Bolivar({ apiKey, baseUrl })`: one object per key, its resources named as the API's.
import { AdminResource } from './resources/admin.js';
import {
  BeneficiariesResource,
  EventsResource,
  LimitsResource,
  PaymentsResource,
  PayoutsResource,
  QuotesResource,
  SandboxResource,
  TenantResource,
  TreasuryResource,
} from './resources/customer.js';
import { PayoutBatchesResource } from './resources/payout-batches.js';
import { ReportsResource } from './resources/reports.js';
import { Transport, type FetchLike } from './transport.js';

export interface BolivarOptions {
  /** A tenant key (`bsk_test_…`, `bsk_live_…`) for the customer API, or the platform key for `admin`. */
  apiKey: string;
  /** The service, such as `http://localhost:3000`. */
  baseUrl: string;
  /** A fetch of your own (a proxy agent, instrumentation); the global fetch of Node 20 by default. */
  fetch?: FetchLike;
  /** Retries after the first attempt, at most (default 3); 0 turns retries off. */
  maxRetries?: number;
  /** Bound of one attempt in ms (default 60000). */
  timeoutMs?: number;
}

export class Bolivar {
  readonly tenant: TenantResource;
  readonly quotes: QuotesResource;
  readonly beneficiaries: BeneficiariesResource;
  readonly payouts: PayoutsResource;
  readonly payoutBatches: PayoutBatchesResource;
  readonly payments: PaymentsResource;
  readonly treasury: TreasuryResource;
  readonly limits: LimitsResource;
  readonly events: EventsResource;
  /** The payout report; the platform key reports on any tenant, or all of them, in a mode it names. */
  readonly reports: ReportsResource;
  readonly sandbox: SandboxResource;
  /** The admin API: needs the platform key. */
  readonly admin: AdminResource;

  constructor(options: BolivarOptions) {
    const transport = new Transport(options);
    this.tenant = new TenantResource(transport);
    this.quotes = new QuotesResource(transport);
    this.beneficiaries = new BeneficiariesResource(transport);
    this.payouts = new PayoutsResource(transport);
    this.payoutBatches = new PayoutBatchesResource(transport);
    this.payments = new PaymentsResource(transport);
    this.treasury = new TreasuryResource(transport);
    this.limits = new LimitsResource(transport);
    this.events = new EventsResource(transport);
    this.reports = new ReportsResource(transport);
    this.sandbox = new SandboxResource(transport);
    this.admin = new AdminResource(transport);
  }
}
