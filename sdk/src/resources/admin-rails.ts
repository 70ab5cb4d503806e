// The admin API of the rails (docs/rails.md): their settings, the routing rules that pick one for a
// payout, and the banks' statements matched against our payments (docs/rail-statements.md).
import { withApiAmounts } from '../amounts.js';
import type {
  AdminCreateRailRouteData,
  AdminCreateRailRouteResponse,
  AdminDeleteRailRouteResponse,
  AdminGetRailStatementData,
  AdminGetRailStatementResponse,
  AdminImportRailStatementData,
  AdminImportRailStatementResponse,
  AdminListRailRoutesResponse,
  AdminListRailsResponse,
  AdminListRailStatementsData,
  AdminPullRailStatementData,
  AdminPullRailStatementResponse,
  AdminUpdateRailData,
  AdminUpdateRailResponse,
  RailStatement,
} from '../generated/index.js';
import { Paginated, type PageAnswer } from '../pagination.js';
import type { RawBody, RequestOptions, Transport } from '../transport.js';
import { segment, type BodyOf, type FiltersOf, type QueryOf } from './types.js';

export class AdminRailRoutesResource {
  constructor(private readonly transport: Transport) {}

  /** The routing rules in the order they apply (priority, lowest first). */
  async list(options?: RequestOptions): Promise<AdminListRailRoutesResponse> {
    return (
      await this.transport.request<AdminListRailRoutesResponse>({
        method: 'GET',
        path: '/v1/admin/rails/routes',
        options,
      })
    ).data;
  }

  /** A payout matching every condition given is tried on `rail` first; amounts are delivered BS, minor units. */
  async create(
    body: BodyOf<AdminCreateRailRouteData>,
    options?: RequestOptions,
  ): Promise<AdminCreateRailRouteResponse> {
    return (
      await this.transport.request<AdminCreateRailRouteResponse>({
        method: 'POST',
        path: '/v1/admin/rails/routes',
        body: withApiAmounts(body),
        options,
      })
    ).data;
  }

  /** Answers the rule removed. */
  async delete(id: string, options?: RequestOptions): Promise<AdminDeleteRailRouteResponse> {
    return (
      await this.transport.request<AdminDeleteRailRouteResponse>({
        method: 'DELETE',
        path: `/v1/admin/rails/routes/${segment(id)}`,
        options,
      })
    ).data;
  }
}

export class AdminRailStatementsResource {
  constructor(private readonly transport: Transport) {}

  /**
   * Matches a rail's statement of a day (CSV) against our payments. A stream is sent as it is read
   * (a statement is never read whole) and, read once, never sent again: no retry. The same file for
   * the same rail and day again answers the statement stored the first time.
   */
  async import(
    rail: string,
    csv: RawBody,
    query: QueryOf<AdminImportRailStatementData>,
    options?: RequestOptions,
  ): Promise<AdminImportRailStatementResponse> {
    return (
      await this.transport.request<AdminImportRailStatementResponse>({
        method: 'POST',
        path: `/v1/admin/rails/${segment(rail)}/statements`,
        query,
        content: { type: 'text/csv', data: csv },
        options,
      })
    ).data;
  }

  async listPage(
    rail: string,
    query: QueryOf<AdminListRailStatementsData> = {},
    options?: RequestOptions,
  ): Promise<PageAnswer<RailStatement>> {
    return (
      await this.transport.request<PageAnswer<RailStatement>>({
        method: 'GET',
        path: `/v1/admin/rails/${segment(rail)}/statements`,
        query,
        options,
      })
    ).data;
  }

  /** A rail's statements, newest first, page after page. */
  list(
    rail: string,
    query: FiltersOf<AdminListRailStatementsData> = {},
    options?: RequestOptions,
  ): Paginated<RailStatement> {
    return new Paginated((cursor) => this.listPage(rail, { ...query, cursor }, options));
  }

  /** A statement with one page of its mismatches (`limit`, `cursor` page the mismatches). */
  async get(
    rail: string,
    id: string,
    query: QueryOf<AdminGetRailStatementData> = {},
    options?: RequestOptions,
  ): Promise<AdminGetRailStatementResponse> {
    return (
      await this.transport.request<AdminGetRailStatementResponse>({
        method: 'GET',
        path: `/v1/admin/rails/${segment(rail)}/statements/${segment(id)}`,
        query,
        options,
      })
    ).data;
  }

  /** Pulls a bank connector's statement of a day now and matches it, as the worker does each morning. */
  async pull(
    rail: string,
    body: BodyOf<AdminPullRailStatementData>,
    options?: RequestOptions,
  ): Promise<AdminPullRailStatementResponse> {
    return (
      await this.transport.request<AdminPullRailStatementResponse>({
        method: 'POST',
        path: `/v1/admin/rails/${segment(rail)}/statement-pulls`,
        body,
        options,
      })
    ).data;
  }
}

export class AdminRailsResource {
  readonly routes: AdminRailRoutesResource;
  readonly statements: AdminRailStatementsResource;

  constructor(private readonly transport: Transport) {
    this.routes = new AdminRailRoutesResource(transport);
    this.statements = new AdminRailStatementsResource(transport);
  }

  /** The rails with their settings, breaker, health and counts, and the routing rules. */
  async list(options?: RequestOptions): Promise<AdminListRailsResponse> {
    return (await this.transport.request<AdminListRailsResponse>({ method: 'GET', path: '/v1/admin/rails', options }))
      .data;
  }

  /** Changes only the settings sent; every process routes by them within a few seconds. */
  async update(
    name: string,
    body: BodyOf<AdminUpdateRailData>,
    options?: RequestOptions,
  ): Promise<AdminUpdateRailResponse> {
    return (
      await this.transport.request<AdminUpdateRailResponse>({
        method: 'PATCH',
        path: `/v1/admin/rails/${segment(name)}`,
        body,
        options,
      })
    ).data;
  }
}
