import { Readable } from 'node:stream';
import type { Database } from '../../db/database.ts';
import type { StatementPayment } from '../../db/repositories/statement.ts';
import { csvCell } from '../../domain/csv-cell.ts';
import type { Metadata } from '../../domain/metadata.ts';
import type { Partition } from '../../domain/partition.ts';
import {
  StatementService,
  statementFilter,
  type StatementQuery as StatementRequest,
} from '../../services/statement.ts';
import { partitionOf } from '../context.ts';
import { errorResponses } from '../schemas/common.ts';
import { IdParam } from '../schemas/tenant.ts';
import {
  AdminStatementQuery,
  STATEMENT_CSV_COLUMNS,
  StatementCsv,
  StatementExportQuery,
  StatementPage,
  StatementQuery,
} from '../schemas/statement.ts';
import type { App } from '../types.ts';
import { customerTenant } from '../../services/customer-tenant.ts';
import { ADMIN } from './admin-tenants.ts';
import { statementRowView } from './payments.ts';

const DEFAULT_PAGE_ROWS = 25;
/** Bytes the export stream buffers ahead of a slow client before it stops reading batches. */
const EXPORT_BUFFER_BYTES = 64 * 1024;

const FILTERS_DESCRIPTION = `Filters combine (AND): \`from\`/\`to\` are whole calendar days in America/Caracas on \`settled_at\`, both inclusive, so a payment created at 23:59 and settled at 00:01 belongs to the second day; with either of them, payments not settled are left out. \`status\`, \`beneficiaryId\`, \`customerId\` and \`batchId\` (the payout batch that created the payment) match exactly; \`createdFrom\` (inclusive) and \`createdBefore\` (exclusive) bound \`created_at\`, as a bucket of the payout report does; \`metadata_key\` with \`metadata_value\` (both or neither) keeps the payments whose \`metadata\` has that key with exactly that value (such as your order id). Any invalid parameter is 400 \`validation_failed\` with \`meta.errors\` naming it.`;

// Every value is ours (ids, enums, amounts, timestamps, the rail's reference and reason codes, a bank
// reference the answer checks kept to letters, digits and hyphens) except `metadata`, which goes as its
// JSON text (JSON escapes line breaks). Each cell is written by csvCell, which also keeps any cell that
// could start a formula inert.
function csvField(value: string | Metadata | null): string {
  return csvCell(value === null || typeof value === 'string' ? value : JSON.stringify(value));
}

function csvLine(values: readonly (string | Metadata | null)[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

/** The export's columns: the statement row's, and `batch_id` last in an export of one payout batch. */
type CsvColumn = (typeof STATEMENT_CSV_COLUMNS)[number] | 'batch_id';

function csvRows(batch: StatementPayment[], columns: readonly CsvColumn[]): string {
  let text = '';
  for (const payment of batch) {
    const row = statementRowView(payment);
    text += csvLine(columns.map((column) => row[column] ?? null));
  }
  return text;
}

/** The header, then each batch as CSV text; the next batch is read only when the stream wants it. */
async function* csvChunks(
  first: IteratorResult<StatementPayment[]>,
  rest: AsyncGenerator<StatementPayment[]>,
  columns: readonly CsvColumn[],
): AsyncGenerator<string> {
  try {
    yield csvLine(columns);
    if (first.done) return;
    yield csvRows(first.value, columns);
    for await (const batch of rest) yield csvRows(batch, columns);
  } finally {
    await rest.return(undefined);
  }
}

export async function statementRoutes(app: App, db: Database): Promise<void> {
  const statement = new StatementService(db);
  listPaymentsRoute(app, statement);
  exportPaymentsRoute(app, statement);
  adminListPaymentsRoute(app, db, statement);
}

/** One page of a partition's statement, as both the tenant's list and the platform's read of it answer. */
async function statementPage(
  statement: StatementService,
  partition: Partition,
  query: StatementRequest & { limit?: number; cursor?: string },
) {
  const page = await statement.page(partition, { ...query, limit: query.limit ?? DEFAULT_PAGE_ROWS });
  return { data: page.rows.map(statementRowView), has_more: page.hasMore, next_cursor: page.nextCursor };
}

function listPaymentsRoute(app: App, statement: StatementService): void {
  app.get(
    '/v1/payments',
    {
      config: { scopes: ['payments:read'] },
      schema: {
        tags: ['Payments'],
        operationId: 'listPayments',
        summary: 'Statement: list payments',
        description: `The statement: payments newest first (\`created_at\`, then \`id\`, descending), one page at a time. Pass \`next_cursor\` as \`cursor\` for the next page (with the same filters); the cursor is opaque and stable while payouts are being created, so no payment is skipped or repeated.

${FILTERS_DESCRIPTION}`,
        querystring: StatementQuery,
        response: { 200: StatementPage, ...errorResponses() },
      },
    },
    async function listPayments(request) {
      return statementPage(statement, partitionOf(request.auth), request.query);
    },
  );
}

function adminListPaymentsRoute(app: App, db: Database, statement: StatementService): void {
  app.get(
    '/v1/admin/tenants/:id/payments',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminListPayments',
        summary: "Statement: list a tenant's payments",
        description: `The tenant's statement in the \`mode\` named (required), exactly as \`GET /v1/payments\` lists it to the tenant's own key: the same rows, order, pages and filters. The overview of the console opens it from a bar of \`GET /v1/reports/payouts\` for one tenant. Each payment, with its creating key and rail, is \`GET /v1/admin/tenants/{id}/payments/{paymentId}\`. An unknown tenant, or the platform's own, is 404 \`resource_not_found\`.

${FILTERS_DESCRIPTION}`,
        params: IdParam,
        querystring: AdminStatementQuery,
        response: { 200: StatementPage, ...errorResponses('resource_not_found') },
      },
    },
    async function adminListPayments(request) {
      const { mode, ...query } = request.query;
      await customerTenant(db, request.params.id);
      return statementPage(statement, { tenantId: request.params.id, mode }, query);
    },
  );
}

function exportPaymentsRoute(app: App, statement: StatementService): void {
  app.get(
    '/v1/payments/export',
    {
      config: { scopes: ['payments:read'] },
      schema: {
        tags: ['Payments'],
        operationId: 'exportPayments',
        summary: 'Statement: export payments as CSV',
        description: `Every payment of the statement with the same filters, as one CSV download (\`content-disposition: attachment\`), for reconciling against your books: a header row, then one payment per line in the statement's order, with the statement row's fields; amounts in minor units. No row limit and no pagination: the file is streamed as it is read.

${FILTERS_DESCRIPTION}`,
        querystring: StatementExportQuery,
        response: { 200: StatementCsv, ...errorResponses() },
      },
    },
    async function exportPayments(request, reply) {
      const filter = statementFilter(request.query);
      const batches = statement.exportBatches(partitionOf(request.auth), filter);
      // Read the first batch before the status line is sent: a database failure is then a 500 with
      // the error envelope rather than a 200 cut short.
      const first = await batches.next();
      const { from, to, batchId } = request.query;
      const columns: readonly CsvColumn[] =
        batchId === undefined ? STATEMENT_CSV_COLUMNS : [...STATEMENT_CSV_COLUMNS, 'batch_id'];
      const name = batchId === undefined ? `payments-${from ?? 'all'}-${to ?? 'all'}` : `payments-batch-${batchId}`;
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="${name}.csv"`)
        .header('cache-control', 'no-store')
        .send(
          Readable.from(csvChunks(first, batches, columns), { objectMode: false, highWaterMark: EXPORT_BUFFER_BYTES }),
        );
    },
  );
}
