// A tenant's API keys: list, issue, revoke.
import type { Command } from '../command.ts';
import { given, listOf, MODE, TENANT } from '../flags.ts';
import { ask, type Admin } from '../service.ts';

export const KEY_COMMANDS: Command[] = [
  {
    name: 'keys list',
    summary: "List a tenant's API keys, revoked ones included (GET /v1/admin/tenants/{id}/api-keys)",
    details: "Shows each key's id, mode, scopes, prefix and last 4 characters, never the key itself.",
    flags: { tenant: TENANT },
    run: (v) => ask((admin) => admin.keys.list(given(v.tenant))),
  },
  {
    name: 'keys issue',
    summary: 'Issue an API key for a tenant (POST /v1/admin/tenants/{id}/api-keys)',
    details: 'The key is printed once; only its prefix and last 4 characters are kept readable.',
    flags: {
      tenant: TENANT,
      mode: { ...MODE, description: 'test (sandbox rail) or live' },
      scopes: {
        type: 'string',
        value: 'a,b',
        description: 'comma-separated scopes (default: all eight customer scopes)',
      },
    },
    run: (v) => {
      const body: Parameters<Admin['keys']['issue']>[1] = {
        mode: given(v.mode),
        ...(v.scopes ? { scopes: listOf(v.scopes, 'scopes') } : {}),
      };
      return ask((admin) => admin.keys.issue(given(v.tenant), body));
    },
  },
  {
    name: 'keys revoke',
    summary: 'Revoke an API key (DELETE /v1/admin/api-keys/{id})',
    details: 'The key fails with api_key_invalid from the next request, on every process.',
    flags: {
      'key-id': { type: 'string', value: 'ID', required: true, description: 'the id of the key (not the key itself)' },
    },
    run: (v) => ask((admin) => admin.keys.revoke(given(v['key-id']))),
  },
];
