// The audit trail: who did what, newest first.
import type { Command } from '../command.ts';
import { int, text } from '../flags.ts';
import { ask, type Admin } from '../service.ts';

export const AUDIT_COMMANDS: Command[] = [
  {
    name: 'audit',
    summary: 'Read the audit trail: who did what, newest first (GET /v1/admin/audit)',
    details: `Prints one page with has_more and next_cursor; pass next_cursor as --cursor for the next one.
What a key did: --actor-key with its id (keys list shows it); what was done to a tenant: --tenant.`,
    flags: {
      'actor-key': { type: 'string', value: 'ID', description: 'only what this API key did' },
      tenant: { type: 'string', value: 'ID', description: "only actions on this tenant's objects" },
      'target-type': {
        type: 'string',
        value: 'TYPE',
        description: 'only actions on this kind of target (tenant, api_key, funding, payment…)',
      },
      'target-id': { type: 'string', value: 'ID', description: 'only actions on this target' },
      action: { type: 'string', value: 'ACTION', description: 'only this action (tenant.update, api_key.revoke…)' },
      from: { type: 'string', value: 'TIME', description: 'only actions at or after this ISO-8601 instant' },
      to: { type: 'string', value: 'TIME', description: 'only actions before this ISO-8601 instant' },
      limit: { type: 'string', value: 'N', description: 'page size, 1 to 100 (default 25)' },
      cursor: { type: 'string', value: 'CURSOR', description: 'the next_cursor of the previous page' },
    },
    run: (v) => {
      const query: Parameters<Admin['audit']['listPage']>[0] = {
        actorKeyId: text(v['actor-key']),
        tenantId: text(v.tenant),
        targetType: text(v['target-type']),
        targetId: text(v['target-id']),
        action: text(v.action),
        from: text(v.from),
        to: text(v.to),
        limit: int(v.limit, 'limit'),
        cursor: text(v.cursor),
      };
      return ask((admin) => admin.audit.listPage(query));
    },
  },
];
