// The admin API of the audit trail: who did what, newest first.
import type { AdminListAuditData, AuditEntry } from '../generated/index.js';
import { Paginated, type PageAnswer } from '../pagination.js';
import type { RequestOptions, Transport } from '../transport.js';
import type { FiltersOf, QueryOf } from './types.js';

export class AdminAuditResource {
  constructor(private readonly transport: Transport) {}

  async listPage(query: QueryOf<AdminListAuditData> = {}, options?: RequestOptions): Promise<PageAnswer<AuditEntry>> {
    return (
      await this.transport.request<PageAnswer<AuditEntry>>({ method: 'GET', path: '/v1/admin/audit', query, options })
    ).data;
  }

  /** Who did what, newest first, page after page. */
  list(query: FiltersOf<AdminListAuditData> = {}, options?: RequestOptions): Paginated<AuditEntry> {
    return new Paginated((cursor) => this.listPage({ ...query, cursor }, options));
  }
}
