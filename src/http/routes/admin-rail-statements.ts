import type { Readable } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { MismatchRow, RailStatementRow } from '../../db/repositories/rail-statements.ts';
import { ApiError, validationFailed } from '../../domain/errors.ts';
import { mismatchCursor, mismatchesAfter, parseColumnMapping } from '../../domain/rail-statement.ts';
import { STATEMENT_BYTES_MAX } from '../../services/rail-statement-file.ts';
import type { RailStatementService } from '../../services/rail-statements.ts';
import {
  STATEMENT_PULL_ATTEMPTS_MAX,
  type PullState,
  type RailStatementPullService,
} from '../../services/rail-statement-pull.ts';
import type { RailStatementPullRow } from '../../db/repositories/rail-statement-pulls.ts';
import { auditActorOf } from '../context.ts';
import { Answer, errorResponses } from '../schemas/common.ts';
import {
  ImportStatementQuery,
  RailParam,
  RailStatement,
  RailStatementDetail,
  RailStatementList,
  RailStatementParams,
  StatementCsv,
  StatementPageQuery,
  StatementPullAnswer,
  StatementPullBody,
} from '../schemas/rail-statements.ts';
import type { App } from '../types.ts';
import { ADMIN } from './admin-tenants.ts';
import { assert } from '../../domain/assert.ts';

/** The request stream of a statement, handed from its content-type parser to the handler unread. */
const statementBodies = new WeakMap<FastifyRequest, Readable>();

function statementView(row: RailStatementRow) {
  return {
    id: row.id,
    rail: row.rail,
    day: row.value_date,
    fileSha256: row.file_sha256,
    fileBytes: Number(row.file_bytes),
    lines: row.line_count,
    columns: { ...row.columns },
    counts: {
      matched: row.matched,
      unknown_reference: row.unknown_reference,
      missing_at_rail: row.missing_at_rail,
      amount_mismatch: row.amount_mismatch,
      status_mismatch: row.status_mismatch,
      bank_reference_mismatch: row.bank_reference_mismatch,
    },
    anomaliesOpened: row.anomalies_opened,
    createdAt: row.created_at.toISOString(),
    createdBy: row.created_by,
  };
}

/** A pull as the admin API shows it. */
export function statementPullView(row: RailStatementPullRow, state: PullState) {
  return {
    rail: row.rail,
    day: row.value_date,
    state,
    attempts: row.attempts,
    lastAttemptAt: row.last_attempt_at?.toISOString() ?? null,
    lastError: row.last_error,
    nextAttemptAt: state === 'retrying' ? row.next_attempt_at.toISOString() : null,
    statementId: row.statement_id,
    doneAt: row.done_at?.toISOString() ?? null,
    gaveUpAt: row.gave_up_at?.toISOString() ?? null,
  };
}

function mismatchView(row: MismatchRow) {
  return {
    seq: row.seq,
    result: row.result,
    line: row.line,
    reference: row.reference,
    tenantId: row.tenant_id,
    mode: row.mode,
    paymentId: row.payment_id,
    ours: row.ours,
    theirs: row.theirs,
    anomalyId: row.anomaly_id,
  };
}

/** Rail statements (platform key): post one, list a rail's, read one with its mismatches. */
export async function adminRailStatementRoutes(
  app: App,
  statements: RailStatementService,
  pulls: RailStatementPullService,
): Promise<void> {
  await app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>() as unknown as App;
    // The statement is read by the handler as it arrives (services/rail-statement-file.ts), never
    // buffered: the parser only hands the stream over.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('text/csv', (request, payload, done) => {
      statementBodies.set(request, payload);
      done(null, '');
    });
    scope.addContentTypeParser('*', (_request, _payload, done) => {
      done(
        new ApiError('unsupported_media_type', 'Send the statement as CSV, with `content-type: text/csv`.'),
        undefined,
      );
    });
    adminImportStatementRoute(scope, statements);
  });
  adminListStatementsRoute(app, statements);
  adminGetStatementRoute(app, statements);
  adminPullStatementRoute(app, pulls);
}

function adminPullStatementRoute(app: App, pulls: RailStatementPullService): void {
  app.post(
    '/v1/admin/rails/:rail/statement-pulls',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminPullRailStatement',
        summary: "Pull a rail's statement of a day from the bank now",
        description: `Asks the bank connector for its statement of \`day\` (\`GET /statements/{day}\` of the HTTP bank protocol) and matches it
as a posted statement is (the same counts, mismatches and anomalies), now, whatever the day's state (today: the day so far, as the bank has it now; 400 for a day to come): done (matched again — the bank may
have corrected its record; the same content is the statement stored before), retrying or given up (one more attempt). The worker does
this by itself each morning for the day before (RAIL_STATEMENT_PULL_AT); this is the operator's way to check another day or to retry
at once. The request waits for the attempt (at most 5 minutes). **200** with the pull: \`done\` with its \`statementId\`, or
\`retrying\` with \`lastError\` when the bank had no statement yet (\`not_ready\`), could not be reached or sent one that does not
read; after ${STATEMENT_PULL_ATTEMPTS_MAX} failed attempts, or a statement that does not read, it is \`gave_up\` and a \`statement_pull_failed\`
anomaly is open. \`started: false\` when another process's attempt was under way: its state is answered. 400 for a rail that gives no
statement (the sandbox: post its file instead); 404 for a rail the deployment does not have.`,
        params: RailParam,
        body: StatementPullBody,
        response: {
          200: Answer('The pull, as the attempt left it', StatementPullAnswer),
          ...errorResponses(400, 'resource_not_found'),
        },
      },
    },
    async function adminPullRailStatement(request) {
      const { pull, started, state } = await pulls.forcePull(
        request.params.rail,
        request.body.day,
        auditActorOf(request),
      );
      return { ...statementPullView(pull, state), started };
    },
  );
}

function adminImportStatementRoute(scope: App, statements: RailStatementService): void {
  scope.post(
    '/v1/admin/rails/:rail/statements',
    {
      config: ADMIN,
      bodyLimit: STATEMENT_BYTES_MAX,
      schema: {
        tags: ['Admin'],
        operationId: 'adminImportRailStatement',
        summary: "Match a rail's statement for a day",
        description: `Reads the rail's settlement statement for \`day\` (the body, \`content-type: text/csv\`, at most ${STATEMENT_BYTES_MAX / 1024 / 1024} MiB), checks every line,
and matches it against our payments of that rail: each line against the payment it names, and every payment of ours that settled through the rail
on that America/Caracas day against the lines. Stored: the statement with its counts by result, and each mismatch with both sides; every mismatch
opens an anomaly (one per rail, day, reference and kind, however many files say it). Nothing else changes. **201** with the statement;
**200** with the statement stored before when this rail, day and file (its SHA-256) was posted already — nothing new is stored.
400 \`statement_malformed\` (\`meta.line\`, \`meta.problem\`) when a line or the header is not what a statement holds: nothing is stored.
404 for a rail that is neither configured nor has carried a payment. Format, mapping and rules: docs/rail-statements.md.`,
        consumes: ['text/csv'],
        params: RailParam,
        querystring: ImportStatementQuery,
        body: StatementCsv,
        response: {
          200: Answer('This rail, day and file was posted before: that statement', RailStatement),
          201: Answer('The statement, matched and stored', RailStatement),
          ...errorResponses('statement_malformed', 'resource_not_found'),
        },
      },
    },
    async function adminImportRailStatement(request, reply) {
      const body = statementBodies.get(request);
      assert(body, 'a statement route reached without its body stream');
      const mapping = parseColumnMapping(request.query.columns);
      if (typeof mapping === 'string') throw validationFailed([{ field: 'columns', message: mapping }]);
      const { statement, created } = await statements.import({
        rail: request.params.rail,
        day: request.query.day,
        mapping,
        body,
        actor: auditActorOf(request),
      });
      return reply.code(created ? 201 : 200).send(statementView(statement));
    },
  );
}

function adminListStatementsRoute(app: App, statements: RailStatementService): void {
  app.get(
    '/v1/admin/rails/:rail/statements',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminListRailStatements',
        summary: "List a rail's statements",
        description:
          'The statements posted for this rail, newest first (`createdAt`, then `id`, descending), each with its counts. Pass `next_cursor` as `cursor` for the next page.',
        params: RailParam,
        querystring: StatementPageQuery,
        response: { 200: Answer('One page of statements, newest first', RailStatementList), ...errorResponses() },
      },
    },
    async function adminListRailStatements(request) {
      const page = await statements.list(request.params.rail, {
        limit: request.query.limit ?? 25,
        cursor: request.query.cursor,
      });
      return { data: page.rows.map(statementView), has_more: page.hasMore, next_cursor: page.nextCursor };
    },
  );
}

function adminGetStatementRoute(app: App, statements: RailStatementService): void {
  app.get(
    '/v1/admin/rails/:rail/statements/:id',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminGetRailStatement',
        summary: 'Read a rail statement and its mismatches',
        description:
          'The statement with its counts, and one page of its mismatches (file order, then the payments missing at the rail), each with both sides and the anomaly it opened. Pass `mismatches.next_cursor` as `cursor` for the next page.',
        params: RailStatementParams,
        querystring: StatementPageQuery,
        response: {
          200: Answer('The statement and a page of its mismatches', RailStatementDetail),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function adminGetRailStatement(request) {
      const limit = request.query.limit ?? 25;
      const { statement, mismatches, hasMore } = await statements.get(request.params.rail, request.params.id, {
        limit,
        afterSeq: mismatchesAfter(request.query.cursor),
      });
      const last = mismatches[mismatches.length - 1];
      return {
        ...statementView(statement),
        mismatches: {
          data: mismatches.map(mismatchView),
          has_more: hasMore,
          next_cursor: hasMore && last ? mismatchCursor(last.seq) : null,
        },
      };
    },
  );
}
