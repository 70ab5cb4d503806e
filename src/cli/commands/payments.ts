// One payment: ask the rail about it again when the reaper has stopped asking.
import type { Command } from '../command.ts';
import { given } from '../flags.ts';
import { ask } from '../service.ts';

export const PAYMENT_COMMANDS: Command[] = [
  {
    name: 'recheck',
    summary: 'Ask the rail about an unresolved payment again, now (POST /v1/admin/payments/{id}/recheck)',
    details:
      'For a payment the reaper stopped asking about after REAPER_CHECK_ATTEMPTS_MAX questions: back on the schedule with a fresh backoff.',
    flags: { payment: { type: 'string', value: 'ID', required: true, description: 'the payment id' } },
    run: (v) => ask((admin) => admin.payments.recheck(given(v.payment))),
  },
];
