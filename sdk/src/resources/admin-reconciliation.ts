// The admin API of reconciliation (docs/operations.md): runs that prove the books, queued now or read back.
import type {
  AdminGetReconciliationRunResponse,
  AdminListReconciliationRunsData,
  AdminStartReconciliationData,
  AdminStartReconciliationResponse,
  ReconciliationRun,
} from '../generated/index.js';
import { Paginated, type PageAnswer } from '../pagination.js';
import type { RequestOptions, Transport } from '../transport.js';
import { segment, type BodyOf, type FiltersOf, type QueryOf } from './types.js';

export class AdminReconciliationResource {
  constructor(private readonly transport: Transport) {}

  /** Queues runs: one tenant (one mode, or both) or, with no `tenantId`, every tenant and mode with books. */
  async start(
    body: BodyOf<AdminStartReconciliationData> = {},
    options?: RequestOptions,
  ): Promise<AdminStartReconciliationResponse> {
    return (
      await this.transport.request<AdminStartReconciliationResponse>({
        method: 'POST',
        path: '/v1/admin/reconciliation/runs',
        body,
        options,
      })
    ).data;
  }

  async listPage(
    query: QueryOf<AdminListReconciliationRunsData> = {},
    options?: RequestOptions,
  ): Promise<PageAnswer<ReconciliationRun>> {
    return (
      await this.transport.request<PageAnswer<ReconciliationRun>>({
        method: 'GET',
        path: '/v1/admin/reconciliation/runs',
        query,
        options,
      })
    ).data;
  }

  /** The runs, newest first, page after page. */
  list(query: FiltersOf<AdminListReconciliationRunsData> = {}, options?: RequestOptions): Paginated<ReconciliationRun> {
    return new Paginated((cursor) => this.listPage({ ...query, cursor }, options));
  }

  /** A run with its discrepancies. */
  async get(id: string, options?: RequestOptions): Promise<AdminGetReconciliationRunResponse> {
    return (
      await this.transport.request<AdminGetReconciliationRunResponse>({
        method: 'GET',
        path: `/v1/admin/reconciliation/runs/${segment(id)}`,
        options,
      })
    ).data;
  }
}
