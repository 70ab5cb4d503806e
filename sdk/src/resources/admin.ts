// The admin API: what the platform key (`bsk_platform_…`) calls to run tenants. Outside the public
// contract of a tenant's integration, but typed the same way.
import { withApiAmounts } from '../amounts.js';
import type {
  AdminCloseTenantData,
  AdminCloseTenantResponse,
  AdminCreateLimitRuleData,
  AdminCreateLimitRuleResponse,
  AdminCreateTenantData,
  AdminCreateTenantResponse,
  AdminDeleteLimitRuleResponse,
  AdminFundTenantData,
  AdminFundTenantResponse,
  AdminIssueApiKeyData,
  AdminIssueApiKeyResponse,
  AdminListApiKeysResponse,
  AdminListLimitRulesData,
  AdminListPaymentsData,
  AdminListRatesResponse,
  AdminListTenantsData,
  AdminRecheckPaymentResponse,
  AdminRevokeApiKeyResponse,
  AdminRotateWebhookSecretData,
  AdminRotateWebhookSecretResponse,
  AdminSetCustomerSenderData,
  AdminSetCustomerSenderResponse,
  AdminSetDefaultSenderData,
  AdminSetDefaultSenderResponse,
  AdminSetRateData,
  AdminSetRateResponse,
  AdminSetWebhookEndpointData,
  AdminSetWebhookEndpointResponse,
  AdminUpdateTenantData,
  LimitRuleList,
  StatementRow,
  Tenant,
} from '../generated/index.js';
import { Paginated, type PageAnswer } from '../pagination.js';
import type { Query, RequestOptions, Transport } from '../transport.js';
import { AdminAnomaliesResource } from './admin-anomalies.js';
import { AdminAuditResource } from './admin-audit.js';
import { AdminRailsResource } from './admin-rails.js';
import { AdminReconciliationResource } from './admin-reconciliation.js';
import { segment, type BodyOf, type FiltersOf, type QueryOf } from './types.js';

export class AdminTenantsResource {
  constructor(private readonly transport: Transport) {}

  async create(body: BodyOf<AdminCreateTenantData>, options?: RequestOptions): Promise<AdminCreateTenantResponse> {
    return (
      await this.transport.request<AdminCreateTenantResponse>({
        method: 'POST',
        path: '/v1/admin/tenants',
        body: withApiAmounts(body),
        options,
      })
    ).data;
  }

  async get(id: string, options?: RequestOptions): Promise<Tenant> {
    return (await this.transport.request<Tenant>({ method: 'GET', path: `/v1/admin/tenants/${segment(id)}`, options }))
      .data;
  }

  /** Changes only the fields sent. */
  async update(id: string, body: BodyOf<AdminUpdateTenantData>, options?: RequestOptions): Promise<Tenant> {
    return (
      await this.transport.request<Tenant>({
        method: 'PATCH',
        path: `/v1/admin/tenants/${segment(id)}`,
        body: withApiAmounts(body),
        options,
      })
    ).data;
  }

  async listPage(query: QueryOf<AdminListTenantsData> = {}, options?: RequestOptions): Promise<PageAnswer<Tenant>> {
    return (
      await this.transport.request<PageAnswer<Tenant>>({ method: 'GET', path: '/v1/admin/tenants', query, options })
    ).data;
  }

  list(query: FiltersOf<AdminListTenantsData> = {}, options?: RequestOptions): Paginated<Tenant> {
    return new Paginated((cursor) => this.listPage({ ...query, cursor }, options));
  }

  /** Credits a tenant's prefunding balance; under an `Idempotency-Key` (yours or a generated one). */
  async fund(
    tenantId: string,
    body: BodyOf<AdminFundTenantData>,
    options?: RequestOptions,
  ): Promise<AdminFundTenantResponse> {
    return (
      await this.transport.request<AdminFundTenantResponse>({
        method: 'POST',
        path: `/v1/admin/tenants/${segment(tenantId)}/fundings`,
        body: withApiAmounts(body),
        idempotent: true,
        options,
      })
    ).data;
  }

  /** The daily close of a credit tenant: settles what it drew. */
  async close(
    tenantId: string,
    body: BodyOf<AdminCloseTenantData>,
    options?: RequestOptions,
  ): Promise<AdminCloseTenantResponse> {
    return (
      await this.transport.request<AdminCloseTenantResponse>({
        method: 'POST',
        path: `/v1/admin/tenants/${segment(tenantId)}/close`,
        body,
        options,
      })
    ).data;
  }

  async setDefaultSender(
    tenantId: string,
    body: BodyOf<AdminSetDefaultSenderData>,
    options?: RequestOptions,
  ): Promise<AdminSetDefaultSenderResponse> {
    return (
      await this.transport.request<AdminSetDefaultSenderResponse>({
        method: 'PUT',
        path: `/v1/admin/tenants/${segment(tenantId)}/default-sender`,
        body,
        options,
      })
    ).data;
  }

  async setCustomerSender(
    tenantId: string,
    customerId: string,
    body: BodyOf<AdminSetCustomerSenderData>,
    options?: RequestOptions,
  ): Promise<AdminSetCustomerSenderResponse> {
    return (
      await this.transport.request<AdminSetCustomerSenderResponse>({
        method: 'PUT',
        path: `/v1/admin/tenants/${segment(tenantId)}/customers/${segment(customerId)}`,
        body,
        options,
      })
    ).data;
  }

  /** Sets the tenant's webhook endpoint for a mode; the first call creates and returns the secret. */
  async setWebhookEndpoint(
    tenantId: string,
    body: BodyOf<AdminSetWebhookEndpointData>,
    options?: RequestOptions,
  ): Promise<AdminSetWebhookEndpointResponse> {
    return (
      await this.transport.request<AdminSetWebhookEndpointResponse>({
        method: 'PUT',
        path: `/v1/admin/tenants/${segment(tenantId)}/webhook-endpoint`,
        body,
        options,
      })
    ).data;
  }

  /** A new signing secret; the previous one keeps signing, second, until `previousSecretExpiresAt`. */
  async rotateWebhookSecret(
    tenantId: string,
    body: BodyOf<AdminRotateWebhookSecretData>,
    options?: RequestOptions,
  ): Promise<AdminRotateWebhookSecretResponse> {
    return (
      await this.transport.request<AdminRotateWebhookSecretResponse>({
        method: 'POST',
        path: `/v1/admin/tenants/${segment(tenantId)}/webhook-endpoint/rotate-secret`,
        body,
        options,
      })
    ).data;
  }
}

export class AdminKeysResource {
  constructor(private readonly transport: Transport) {}

  /** A new key for the tenant; its secret is in this answer only. */
  async issue(
    tenantId: string,
    body: BodyOf<AdminIssueApiKeyData>,
    options?: RequestOptions,
  ): Promise<AdminIssueApiKeyResponse> {
    return (
      await this.transport.request<AdminIssueApiKeyResponse>({
        method: 'POST',
        path: `/v1/admin/tenants/${segment(tenantId)}/api-keys`,
        body,
        options,
      })
    ).data;
  }

  async list(tenantId: string, options?: RequestOptions): Promise<AdminListApiKeysResponse> {
    return (
      await this.transport.request<AdminListApiKeysResponse>({
        method: 'GET',
        path: `/v1/admin/tenants/${segment(tenantId)}/api-keys`,
        options,
      })
    ).data;
  }

  async revoke(keyId: string, options?: RequestOptions): Promise<AdminRevokeApiKeyResponse> {
    return (
      await this.transport.request<AdminRevokeApiKeyResponse>({
        method: 'DELETE',
        path: `/v1/admin/api-keys/${segment(keyId)}`,
        options,
      })
    ).data;
  }
}

export class AdminRatesResource {
  constructor(private readonly transport: Transport) {}

  /** The market rate of an asset in BS (a decimal string such as "930.50"). */
  async set(
    asset: AdminSetRateData['path']['asset'],
    body: BodyOf<AdminSetRateData>,
    options?: RequestOptions,
  ): Promise<AdminSetRateResponse> {
    return (
      await this.transport.request<AdminSetRateResponse>({
        method: 'PUT',
        path: `/v1/admin/rates/${segment(asset)}`,
        body,
        options,
      })
    ).data;
  }

  async list(options?: RequestOptions): Promise<AdminListRatesResponse> {
    return (await this.transport.request<AdminListRatesResponse>({ method: 'GET', path: '/v1/admin/rates', options }))
      .data;
  }
}

export class AdminLimitRulesResource {
  constructor(private readonly transport: Transport) {}

  async create(
    body: BodyOf<AdminCreateLimitRuleData>,
    options?: RequestOptions,
  ): Promise<AdminCreateLimitRuleResponse> {
    return (
      await this.transport.request<AdminCreateLimitRuleResponse>({
        method: 'POST',
        path: '/v1/admin/limit-rules',
        body: withApiAmounts(body),
        options,
      })
    ).data;
  }

  async list(query: QueryOf<AdminListLimitRulesData> = {}, options?: RequestOptions): Promise<LimitRuleList> {
    return (
      await this.transport.request<LimitRuleList>({ method: 'GET', path: '/v1/admin/limit-rules', query, options })
    ).data;
  }

  async delete(id: string, options?: RequestOptions): Promise<AdminDeleteLimitRuleResponse> {
    return (
      await this.transport.request<AdminDeleteLimitRuleResponse>({
        method: 'DELETE',
        path: `/v1/admin/limit-rules/${segment(id)}`,
        options,
      })
    ).data;
  }
}

export class AdminPaymentsResource {
  constructor(private readonly transport: Transport) {}

  /** One page of a tenant's statement in a mode, as `payments.listPage` reads it with the tenant's key. */
  async listPage(
    tenantId: string,
    query: QueryOf<AdminListPaymentsData>,
    options?: RequestOptions,
  ): Promise<PageAnswer<StatementRow>> {
    return (
      await this.transport.request<PageAnswer<StatementRow>>({
        method: 'GET',
        path: `/v1/admin/tenants/${segment(tenantId)}/payments`,
        query: query as Query,
        options,
      })
    ).data;
  }

  /** A tenant's statement in a mode, newest first, page after page. */
  list(tenantId: string, query: FiltersOf<AdminListPaymentsData>, options?: RequestOptions): Paginated<StatementRow> {
    return new Paginated((cursor) => this.listPage(tenantId, { ...query, cursor }, options));
  }

  /** Puts an unresolved payment back in the reaper's queue, due now. */
  async recheck(id: string, options?: RequestOptions): Promise<AdminRecheckPaymentResponse> {
    return (
      await this.transport.request<AdminRecheckPaymentResponse>({
        method: 'POST',
        path: `/v1/admin/payments/${segment(id)}/recheck`,
        options,
      })
    ).data;
  }
}

export class AdminResource {
  readonly tenants: AdminTenantsResource;
  readonly keys: AdminKeysResource;
  readonly rates: AdminRatesResource;
  readonly limitRules: AdminLimitRulesResource;
  readonly payments: AdminPaymentsResource;
  readonly rails: AdminRailsResource;
  readonly reconciliation: AdminReconciliationResource;
  readonly anomalies: AdminAnomaliesResource;
  readonly audit: AdminAuditResource;

  constructor(transport: Transport) {
    this.tenants = new AdminTenantsResource(transport);
    this.keys = new AdminKeysResource(transport);
    this.rates = new AdminRatesResource(transport);
    this.limitRules = new AdminLimitRulesResource(transport);
    this.payments = new AdminPaymentsResource(transport);
    this.rails = new AdminRailsResource(transport);
    this.reconciliation = new AdminReconciliationResource(transport);
    this.anomalies = new AdminAnomaliesResource(transport);
    this.audit = new AdminAuditResource(transport);
  }
}
