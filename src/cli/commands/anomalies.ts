// Anomalies: what a rail said that contradicts our records, and what reconciliation found.
import type { Command, Flag } from '../command.ts';
import { given, text } from '../flags.ts';
import { listPages, pageFlags } from '../paging.ts';
import { ask, type Admin } from '../service.ts';

const ANOMALY: Flag = {
  type: 'string',
  value: 'ID',
  required: true,
  description: 'the anomaly id (anomalies list shows it)',
};

export const ANOMALY_COMMANDS: Command[] = [
  {
    name: 'anomalies list',
    summary: 'List anomalies, newest first (GET /v1/admin/anomalies)',
    details:
      'What the rail said that contradicts our records, and what reconciliation found; our records were left as they were.\n' +
      '--status open lists those waiting for an operator. Prints one page with has_more and next_cursor, or every page with --all.',
    flags: {
      status: { type: 'string', value: 'open|resolved', description: 'only open or only resolved anomalies' },
      kind: {
        type: 'string',
        value: 'KIND',
        description: 'only this kind, e.g. settled_after_failed (docs/operations.md lists them)',
      },
      mode: {
        type: 'string',
        value: 'live|test|all',
        description: 'default live (with those of no mode); test: what test programs made the sandbox say',
      },
      tenant: { type: 'string', value: 'TENANT_ID', description: "only this tenant's anomalies" },
      ...pageFlags('anomalies'),
    },
    run: (v) => {
      const filters: Parameters<Admin['anomalies']['listPage']>[0] = {
        status: text(v.status),
        kind: text(v.kind),
        mode: text(v.mode),
        tenantId: text(v.tenant),
      };
      return listPages((page) => ask((admin) => admin.anomalies.listPage({ ...filters, ...page })), v);
    },
  },
  {
    name: 'anomalies get',
    summary: 'Read one anomaly with its evidence (GET /v1/admin/anomalies/{id})',
    flags: { anomaly: ANOMALY },
    run: (v) => ask((admin) => admin.anomalies.get(given(v.anomaly))),
  },
  {
    name: 'anomalies resolve',
    summary: 'Resolve an open anomaly with a note (POST /v1/admin/anomalies/{id}/resolve)',
    details:
      "The note says what was found and done; the platform key's id is stored as resolvedBy. Nothing else changes.",
    flags: {
      anomaly: ANOMALY,
      note: {
        type: 'string',
        value: 'TEXT',
        required: true,
        description: 'what was found and done, 1 to 2000 characters',
      },
    },
    run: (v) => ask((admin) => admin.anomalies.resolve(given(v.anomaly), { note: given(v.note) })),
  },
];
