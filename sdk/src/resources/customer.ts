// The customer API: what a tenant's key (`bsk_test_…` / `bsk_live_…`) calls.
import { withApiAmounts } from '../amounts.js';
import type {
  CreatePayoutData,
  CreatePayoutResponse,
  CreateQuoteData,
  EventDetail,
  EventRecord,
  ExportPaymentsData,
  GetLimitUsageData,
  GetTreasuryPositionData,
  LimitUsage,
  ListBeneficiariesData,
  ListEventsData,
  ListPaymentsData,
  ListPayoutBanksData,
  ListSandboxWebhookDeliveriesData,
  Payment,
  BankList,
  Beneficiary,
  Quote,
  RegisterBeneficiaryData,
  RegisteredBeneficiary,
  RetriedDeadEvents,
  RetriedEvent,
  SandboxWebhookDelivery,
  SimulatePaymentOutcomeData,
  SimulatePaymentOutcomeResponse,
  StatementRow,
  TenantContext,
  TreasuryPosition,
} from '../generated/index.js';
import { Paginated, type PageAnswer } from '../pagination.js';
import type { Query, RequestOptions, Transport } from '../transport.js';
import { segment, type BodyOf, type FiltersOf, type QueryOf } from './types.js';

export class TenantResource {
  constructor(private readonly transport: Transport) {}

  /** The key's tenant, mode and scopes: the first call of an integration. */
  async me(options?: RequestOptions): Promise<TenantContext> {
    return (await this.transport.request<TenantContext>({ method: 'GET', path: '/v1/tenant/me', options })).data;
  }
}

export class QuotesResource {
  constructor(private readonly transport: Transport) {}

  /** Fixes the delivered amount (`deliver`) or what you spend in another asset (`spend`); good for 60 s, once. */
  async create(body: BodyOf<CreateQuoteData>, options?: RequestOptions): Promise<Quote> {
    return (
      await this.transport.request<Quote>({
        method: 'POST',
        path: '/v1/quotes',
        body: withApiAmounts(body),
        idempotent: true,
        options,
      })
    ).data;
  }

  async get(id: string, options?: RequestOptions): Promise<Quote> {
    return (await this.transport.request<Quote>({ method: 'GET', path: `/v1/quotes/${segment(id)}`, options })).data;
  }
}

export class BeneficiariesResource {
  constructor(private readonly transport: Transport) {}

  /** Registers a beneficiary, or returns the registered one with the same identity (`created: false`). */
  async create(body: BodyOf<RegisterBeneficiaryData>, options?: RequestOptions): Promise<RegisteredBeneficiary> {
    return (
      await this.transport.request<RegisteredBeneficiary>({
        method: 'POST',
        path: '/v1/beneficiaries',
        body,
        idempotent: true,
        options,
      })
    ).data;
  }

  async get(id: string, options?: RequestOptions): Promise<Beneficiary> {
    return (
      await this.transport.request<Beneficiary>({ method: 'GET', path: `/v1/beneficiaries/${segment(id)}`, options })
    ).data;
  }

  /** One page (`limit`, `cursor`). */
  async listPage(
    query: QueryOf<ListBeneficiariesData> = {},
    options?: RequestOptions,
  ): Promise<PageAnswer<Beneficiary>> {
    return (
      await this.transport.request<PageAnswer<Beneficiary>>({
        method: 'GET',
        path: '/v1/beneficiaries',
        query,
        options,
      })
    ).data;
  }

  /** Every beneficiary, page after page: `for await (const b of client.beneficiaries.list())`. */
  list(query: FiltersOf<ListBeneficiariesData> = {}, options?: RequestOptions): Paginated<Beneficiary> {
    return new Paginated((cursor) => this.listPage({ ...query, cursor }, options));
  }
}

export class PayoutsResource {
  constructor(private readonly transport: Transport) {}

  /**
   * Disburses a quote to a beneficiary. Always under an `Idempotency-Key` (yours, such as the order
   * id, or one generated for this call): a retry returns the first answer, never a second payout.
   */
  async create(body: BodyOf<CreatePayoutData>, options?: RequestOptions): Promise<CreatePayoutResponse> {
    return (
      await this.transport.request<CreatePayoutResponse>({
        method: 'POST',
        path: '/v1/payouts',
        body,
        idempotent: true,
        options,
      })
    ).data;
  }

  /** The banks that take this instrument. */
  async banks(query: QueryOf<ListPayoutBanksData>, options?: RequestOptions): Promise<BankList> {
    return (await this.transport.request<BankList>({ method: 'GET', path: '/v1/payouts/banks', query, options })).data;
  }
}

export class PaymentsResource {
  constructor(private readonly transport: Transport) {}

  /** The payment with its status history (`events`): authoritative for its outcome. */
  async get(id: string, options?: RequestOptions): Promise<Payment> {
    return (await this.transport.request<Payment>({ method: 'GET', path: `/v1/payments/${segment(id)}`, options }))
      .data;
  }

  /** One page of the statement (filters, `limit`, `cursor`). */
  async listPage(query: QueryOf<ListPaymentsData> = {}, options?: RequestOptions): Promise<PageAnswer<StatementRow>> {
    return (
      await this.transport.request<PageAnswer<StatementRow>>({
        method: 'GET',
        path: '/v1/payments',
        query: query as Query,
        options,
      })
    ).data;
  }

  /** The statement, newest first, page after page (`metadata_key` + `metadata_value` find an order's payments). */
  list(query: FiltersOf<ListPaymentsData> = {}, options?: RequestOptions): Paginated<StatementRow> {
    return new Paginated((cursor) => this.listPage({ ...query, cursor }, options));
  }

  /** The statement with the same filters as CSV text (RFC 4180, CRLF, a header row). */
  async exportCsv(query: QueryOf<ExportPaymentsData> = {}, options?: RequestOptions): Promise<string> {
    return (
      await this.transport.request<string>({
        method: 'GET',
        path: '/v1/payments/export',
        query: query as Query,
        accept: 'text',
        options,
      })
    ).data;
  }
}

export class TreasuryResource {
  constructor(private readonly transport: Transport) {}

  /** Prefunding balance, revenue and credit of one asset (BS by default). */
  async position(query: QueryOf<GetTreasuryPositionData> = {}, options?: RequestOptions): Promise<TreasuryPosition> {
    return (
      await this.transport.request<TreasuryPosition>({ method: 'GET', path: '/v1/treasury/position', query, options })
    ).data;
  }
}

export class LimitsResource {
  constructor(private readonly transport: Transport) {}

  /** Today's and this month's usage against the limit that applies. */
  async usage(query: QueryOf<GetLimitUsageData> = {}, options?: RequestOptions): Promise<LimitUsage> {
    return (await this.transport.request<LimitUsage>({ method: 'GET', path: '/v1/limits/usage', query, options })).data;
  }
}

export class EventsResource {
  constructor(private readonly transport: Transport) {}

  async listPage(query: QueryOf<ListEventsData> = {}, options?: RequestOptions): Promise<PageAnswer<EventRecord>> {
    return (
      await this.transport.request<PageAnswer<EventRecord>>({ method: 'GET', path: '/v1/events', query, options })
    ).data;
  }

  /** The outbox events (what the webhooks deliver), newest first, page after page. */
  list(query: FiltersOf<ListEventsData> = {}, options?: RequestOptions): Paginated<EventRecord> {
    return new Paginated((cursor) => this.listPage({ ...query, cursor }, options));
  }

  /** One event with its delivery attempts. */
  async get(id: string, options?: RequestOptions): Promise<EventDetail> {
    return (await this.transport.request<EventDetail>({ method: 'GET', path: `/v1/events/${segment(id)}`, options }))
      .data;
  }

  /** Sends the event again (back to `pending`, due now). */
  async retry(id: string, options?: RequestOptions): Promise<RetriedEvent> {
    return (
      await this.transport.request<RetriedEvent>({ method: 'POST', path: `/v1/events/${segment(id)}/retry`, options })
    ).data;
  }

  /** Requeues every `dead` event (at most 100,000 per call: call again while `requeued` is 100000). */
  async retryDead(options?: RequestOptions): Promise<RetriedDeadEvents> {
    return (await this.transport.request<RetriedDeadEvents>({ method: 'POST', path: '/v1/events/retry-dead', options }))
      .data;
  }
}

export class SandboxResource {
  constructor(private readonly transport: Transport) {}

  /** Test mode: settles, fails or reverses a payment now. */
  async simulate(
    paymentId: string,
    body: BodyOf<SimulatePaymentOutcomeData>,
    options?: RequestOptions,
  ): Promise<SimulatePaymentOutcomeResponse> {
    return (
      await this.transport.request<SimulatePaymentOutcomeResponse>({
        method: 'POST',
        path: `/v1/sandbox/payments/${segment(paymentId)}/simulate`,
        body,
        options,
      })
    ).data;
  }

  async webhookDeliveriesPage(
    query: QueryOf<ListSandboxWebhookDeliveriesData> = {},
    options?: RequestOptions,
  ): Promise<PageAnswer<SandboxWebhookDelivery>> {
    return (
      await this.transport.request<PageAnswer<SandboxWebhookDelivery>>({
        method: 'GET',
        path: '/v1/sandbox/webhooks',
        query,
        options,
      })
    ).data;
  }

  /** What the sandbox sink received for this tenant (signature verified), newest first. */
  webhookDeliveries(
    query: FiltersOf<ListSandboxWebhookDeliveriesData> = {},
    options?: RequestOptions,
  ): Paginated<SandboxWebhookDelivery> {
    return new Paginated((cursor) => this.webhookDeliveriesPage({ ...query, cursor }, options));
  }
}
