// A program's webhook endpoint and its signing secret.
import type { Command } from '../command.ts';
import { given, MODE, TENANT } from '../flags.ts';
import { ask } from '../service.ts';

export const WEBHOOK_COMMANDS: Command[] = [
  {
    name: 'webhook set',
    summary: "Set a program's webhook endpoint (PUT /v1/admin/tenants/{id}/webhook-endpoint)",
    details: 'The first call creates the signing secret and prints it; later calls change the URL and keep the secret.',
    flags: {
      tenant: TENANT,
      mode: MODE,
      url: {
        type: 'string',
        value: 'URL',
        required: true,
        description: 'http:// or https:// URL (live mode: public hosts only; test mode: public hosts or loopback)',
      },
    },
    run: (v) =>
      ask((admin) => admin.tenants.setWebhookEndpoint(given(v.tenant), { mode: given(v.mode), url: given(v.url) })),
  },
  {
    name: 'webhook rotate',
    summary: "Rotate a program's webhook signing secret (POST /v1/admin/tenants/{id}/webhook-endpoint/rotate-secret)",
    details: 'The old secret keeps signing, as the second signature, until previousSecretExpiresAt.',
    flags: { tenant: TENANT, mode: MODE },
    run: (v) => ask((admin) => admin.tenants.rotateWebhookSecret(given(v.tenant), { mode: given(v.mode) })),
  },
];
