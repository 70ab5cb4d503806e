import { Type } from '@sinclair/typebox';
import { ANOMALY_KIND_MEANINGS, ANOMALY_KINDS, ANOMALY_STATUSES } from '../../domain/anomalies.ts';
import { Component, DateTime, ModeSchema, Nullable, PageQuery, StringEnum, Uuid } from './common.ts';

/** The longest resolution note. */
const RESOLUTION_NOTE_LENGTH_MAX = 2000;

const AnomalyKind = StringEnum(ANOMALY_KINDS, {
  description: `What contradicts what:\n${ANOMALY_KINDS.map((kind) => `- \`${kind}\`: ${ANOMALY_KIND_MEANINGS[kind]}`).join('\n')}`,
});
const AnomalyStatus = StringEnum(ANOMALY_STATUSES, { description: '`open` until an operator resolves it' });

const Evidence = (description: string) => Type.Object({}, { additionalProperties: true, description });

export const Anomaly = Component(
  'Anomaly',
  Type.Object(
    {
      id: Uuid(),
      kind: AnomalyKind,
      status: AnomalyStatus,
      tenantId: Nullable(Uuid('null when nobody knows whose it is (a reference we have no payment for)')),
      mode: Nullable(ModeSchema),
      paymentId: Nullable(Uuid()),
      ours: Evidence('What our records said (status, amount in minor units, bank reference…)'),
      theirs: Evidence('What the rail said, or the figure a reconciliation check found'),
      raw: Type.Unknown({
        description: 'The report exactly as it came: the rail notification, or the answer and who heard it',
      }),
      reportedAt: DateTime('When the rail said it (a notification carries its own time), else when we heard it'),
      createdAt: DateTime('When it was stored'),
      resolvedBy: Nullable(Uuid('The API key that resolved it')),
      resolutionNote: Nullable(Type.String()),
      resolvedAt: Nullable(DateTime()),
    },
    {
      description:
        'A rail report that contradicts our records, or a reconciliation discrepancy: stored once, our records unchanged',
    },
  ),
);

export const AnomalyList = Component(
  'AnomalyList',
  Type.Object(
    {
      data: Type.Array(Anomaly),
      has_more: Type.Boolean(),
      next_cursor: Nullable(
        Type.String({ description: 'Pass as `cursor` to read the next page; null on the last page' }),
      ),
    },
    { description: 'One page of anomalies, newest first' },
  ),
);

/** The modes an anomaly list shows; live (with those of no mode) unless asked. */
const ANOMALY_LIST_MODES = ['live', 'test', 'all'] as const;

export const AnomalyListQuery = Type.Object({
  status: Type.Optional(AnomalyStatus),
  kind: Type.Optional(AnomalyKind),
  mode: Type.Optional(
    StringEnum(ANOMALY_LIST_MODES, {
      description:
        "Default `live`: the live ones and those of no mode (a platform-wide reconciliation discrepancy). `test`: the test programs' ones only (what test keys made the sandbox say). `all`: both",
    }),
  ),
  tenantId: Type.Optional(Uuid("Only this tenant's anomalies")),
  ...PageQuery,
});

export const ResolveAnomalyBody = Type.Object({
  note: Type.String({
    minLength: 1,
    maxLength: RESOLUTION_NOTE_LENGTH_MAX,
    pattern: '\\S',
    description: 'What was found and done (for the next person to read); not blank',
    'x-error-message': `must be a note of 1 to ${RESOLUTION_NOTE_LENGTH_MAX} characters, not blank`,
  }),
});
