// The admin API of anomalies: what a rail said that contradicts our records, and what reconciliation
// found; our records are left as they were until an operator resolves each.
import type {
  AdminGetAnomalyResponse,
  AdminListAnomaliesData,
  AdminResolveAnomalyData,
  AdminResolveAnomalyResponse,
  Anomaly,
} from '../generated/index.js';
import { Paginated, type PageAnswer } from '../pagination.js';
import type { RequestOptions, Transport } from '../transport.js';
import { segment, type BodyOf, type FiltersOf, type QueryOf } from './types.js';

export class AdminAnomaliesResource {
  constructor(private readonly transport: Transport) {}

  async listPage(query: QueryOf<AdminListAnomaliesData> = {}, options?: RequestOptions): Promise<PageAnswer<Anomaly>> {
    return (
      await this.transport.request<PageAnswer<Anomaly>>({ method: 'GET', path: '/v1/admin/anomalies', query, options })
    ).data;
  }

  /** The anomalies, newest first, page after page (`mode` defaults to `live`, with those of no mode). */
  list(query: FiltersOf<AdminListAnomaliesData> = {}, options?: RequestOptions): Paginated<Anomaly> {
    return new Paginated((cursor) => this.listPage({ ...query, cursor }, options));
  }

  /** One anomaly with its evidence: our record and what the rail or the run said. */
  async get(id: string, options?: RequestOptions): Promise<AdminGetAnomalyResponse> {
    return (
      await this.transport.request<AdminGetAnomalyResponse>({
        method: 'GET',
        path: `/v1/admin/anomalies/${segment(id)}`,
        options,
      })
    ).data;
  }

  /** Resolves an open anomaly with what was found and done; nothing else changes. */
  async resolve(
    id: string,
    body: BodyOf<AdminResolveAnomalyData>,
    options?: RequestOptions,
  ): Promise<AdminResolveAnomalyResponse> {
    return (
      await this.transport.request<AdminResolveAnomalyResponse>({
        method: 'POST',
        path: `/v1/admin/anomalies/${segment(id)}/resolve`,
        body,
        options,
      })
    ).data;
  }
}
