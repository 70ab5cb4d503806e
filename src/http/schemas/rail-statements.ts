import { Type } from '@sinclair/typebox';
import { STATEMENT_COLUMNS, STATEMENT_MISMATCH_KINDS, STATUS_ALIASES } from '../../domain/rail-statement.ts';
import { STATEMENT_BYTES_MAX, STATEMENT_LINES_MAX } from '../../services/rail-statement-file.ts';
import { Component, DateTime, ModeSchema, Nullable, PageQuery, StringEnum, Uuid } from './common.ts';

/** A rail's name as the path gives it: what rails are named with (letters, digits, `.`, `_`, `-`). */
const RailName = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$',
  description: 'The rail, by name (`sandbox` in test mode)',
});

export const RailParam = Type.Object({ rail: RailName });
export const RailStatementParams = Type.Object({ rail: RailName, id: Uuid() });

const MAPPING_EXAMPLE =
  'reference:Referencia,bank_reference:Ref. banco,amount:Monto,status:Estado,value_date:Fecha valor';

export const ImportStatementQuery = Type.Object({
  day: Type.String({
    format: 'date',
    maxLength: 10,
    description:
      "The statement's value date (YYYY-MM-DD, an America/Caracas business day): every line's `value_date` must be this day",
  }),
  columns: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1000,
      description: `The header names of a bank that names the columns otherwise: comma-separated \`column:Header name\` pairs for any of ${STATEMENT_COLUMNS.map((c) => `\`${c}\``).join(', ')} (the others keep their standard names; names are compared without case). Example: \`${MAPPING_EXAMPLE}\``,
    }),
  ),
});

export const StatementCsv = Type.String({
  maxLength: STATEMENT_BYTES_MAX,
  description: `The statement as CSV (UTF-8, comma-separated, quotes as RFC 4180): a header line, then one line per transfer with the columns ${STATEMENT_COLUMNS.map((c) => `\`${c}\``).join(', ')} (in any order; other columns are ignored), at most ${STATEMENT_LINES_MAX} lines. \`status\` is one of (without case) ${Object.entries(
    STATUS_ALIASES,
  )
    .map(([status, words]) => `${status}: ${words.join(', ')}`)
    .join('; ')}. See docs/rail-statements.md.`,
  example:
    'reference,bank_reference,amount,status,value_date\n3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f,000123456789,1000000,settled,2026-12-01\n',
});

const counts = Type.Object(
  {
    matched: Type.Integer({
      minimum: 0,
      description: 'Lines that agree with our payment in status, amount and bank reference',
    }),
    unknown_reference: Type.Integer({
      minimum: 0,
      description: 'Lines naming a reference that is no payment of this rail',
    }),
    missing_at_rail: Type.Integer({
      minimum: 0,
      description: 'Our payments of this rail settled on the day that no line names',
    }),
    amount_mismatch: Type.Integer({ minimum: 0 }),
    status_mismatch: Type.Integer({ minimum: 0 }),
    bank_reference_mismatch: Type.Integer({ minimum: 0 }),
  },
  {
    description:
      'Counts by result. A line may disagree in more than one way (each counted); `matched` counts lines with no disagreement',
  },
);

const statementFields = {
  id: Uuid(),
  rail: Type.String(),
  day: Type.String({ format: 'date', description: "The statement's value date" }),
  fileSha256: Type.String({
    pattern: '^[0-9a-f]{64}$',
    description:
      'SHA-256 of the file as it came: with the rail and day, what makes a post of the same file the same statement',
  }),
  fileBytes: Type.Integer({ minimum: 0 }),
  lines: Type.Integer({ minimum: 0, description: 'Data lines (the header not counted)' }),
  columns: Type.Object(
    Object.fromEntries(STATEMENT_COLUMNS.map((c) => [c, Type.String()])) as Record<
      (typeof STATEMENT_COLUMNS)[number],
      ReturnType<typeof Type.String>
    >,
    {
      description: 'The header name each standard column was read from',
    },
  ),
  counts,
  anomaliesOpened: Type.Integer({
    minimum: 0,
    description:
      'Anomalies this statement opened; a mismatch already seen (an earlier file of the same rail and day) keeps its open anomaly',
  }),
  createdAt: DateTime(),
  createdBy: Uuid('The API key that posted it'),
};

export const RailStatement = Component(
  'RailStatement',
  Type.Object(statementFields, {
    description: "A rail's statement for a day, as matched against our payments of that rail",
  }),
);

export const RailStatementList = Component(
  'RailStatementList',
  Type.Object(
    {
      data: Type.Array(RailStatement),
      has_more: Type.Boolean(),
      next_cursor: Nullable(
        Type.String({ description: 'Pass as `cursor` to read the next page; null on the last page' }),
      ),
    },
    { description: "One page of a rail's statements, newest first" },
  ),
);

const Evidence = (description: string) => Type.Object({}, { additionalProperties: true, description });

const RailStatementMismatch = Component(
  'RailStatementMismatch',
  Type.Object({
    seq: Type.Integer({
      minimum: 1,
      description: 'Its place in the statement: file order, then the payments missing at the rail',
    }),
    result: StringEnum(STATEMENT_MISMATCH_KINDS, { description: 'What disagrees (docs/rail-statements.md)' }),
    line: Nullable(
      Type.Integer({
        minimum: 2,
        description: "The file's line (the header is line 1); null for a payment the file does not name",
      }),
    ),
    reference: Type.String({
      description: 'Our reference (the payment id) as the line gives it, or the missing payment id',
    }),
    tenantId: Nullable(Uuid()),
    mode: Nullable(ModeSchema),
    paymentId: Nullable(Uuid('null for a reference that is no payment of this rail')),
    ours: Evidence('What our payment says: status, amount (minor units), bank reference, settledAt'),
    theirs: Evidence('What the line says: line, reference, status, amount (minor units), bank reference'),
    anomalyId: Uuid('The anomaly it opened, or the one already open for it'),
  }),
);

export const RailStatementDetail = Component(
  'RailStatementDetail',
  Type.Object({
    ...statementFields,
    mismatches: Type.Object({
      data: Type.Array(RailStatementMismatch),
      has_more: Type.Boolean(),
      next_cursor: Nullable(
        Type.String({ description: 'Pass as `cursor` to read the next page of mismatches; null on the last page' }),
      ),
    }),
  }),
);

export const StatementPageQuery = Type.Object({ ...PageQuery });

export const StatementPullBody = Type.Object(
  {
    day: Type.String({
      format: 'date',
      maxLength: 10,
      description: 'The America/Caracas business day whose statement to pull from the bank (YYYY-MM-DD)',
    }),
  },
  { additionalProperties: false },
);

const PULL_STATES = ['done', 'in_progress', 'retrying', 'gave_up'] as const;

const pullFields = {
  rail: Type.String(),
  day: Type.String({ format: 'date', description: 'The statement day pulled' }),
  state: StringEnum(PULL_STATES, {
    description:
      'done: the statement was pulled and matched (`statementId`); in_progress: an attempt is under way; retrying: the last attempt failed (`lastError`) and the next is due at `nextAttemptAt`; gave_up: no more attempts (a `statement_pull_failed` anomaly is open)',
  }),
  attempts: Type.Integer({ minimum: 0 }),
  lastAttemptAt: Nullable(DateTime()),
  lastError: Nullable(
    Type.String({
      description:
        'What the last failed attempt met: `not_ready`, `unreachable`, `timeout`, `statement_malformed` and its detail',
    }),
  ),
  nextAttemptAt: Nullable(DateTime('When the scheduled pull tries again (null once done or given up)')),
  statementId: Nullable(Uuid('The statement matched (GET /v1/admin/rails/{rail}/statements/{id})')),
  doneAt: Nullable(DateTime()),
  gaveUpAt: Nullable(DateTime()),
};

/** Inline, not a component: a nullable `$ref` cannot be written in OpenAPI 3.0. */
export const RailStatementPull = Type.Object(pullFields, {
  description: "The pull of one rail's statement of one day from the bank",
});

export const StatementPullAnswer = Component(
  'RailStatementPullAnswer',
  Type.Object(
    {
      ...pullFields,
      started: Type.Boolean({
        description:
          "false: another process's attempt at this day was under way, and its state is answered; nothing was started",
      }),
    },
    { description: "The pull of one rail's statement of one day, as the operator's request left it" },
  ),
);
