// The senders a payout without a sender block carries: a program's default, or one customer's own.
import type { Command, Flag, Values } from '../command.ts';
import { given, MODE, TENANT, text } from '../flags.ts';
import { ask } from '../service.ts';

const SENDER_FLAGS: Record<string, Flag> = {
  'national-id': {
    type: 'string',
    value: 'ID',
    required: true,
    description: 'V, E or J and 4 to 9 digits (Venezuelan); 5 to 20 letters and digits (foreign)',
  },
  nationality: { type: 'string', value: 'ISO3', description: 'ISO 3166-1 alpha-3 code (default VEN)' },
  'first-name': { type: 'string', value: 'NAME', required: true, description: 'first name' },
  'last-name': { type: 'string', value: 'NAME', required: true, description: 'last name' },
  phone: { type: 'string', value: 'PHONE', required: true, description: 'Venezuelan mobile, e.g. 04141234567' },
  email: { type: 'string', value: 'EMAIL', required: true, description: 'email address' },
};

function senderOf(v: Values) {
  return {
    nationalId: given(v['national-id']),
    ...(v.nationality === undefined ? {} : { nationality: text(v.nationality) }),
    firstName: given(v['first-name']),
    lastName: given(v['last-name']),
    phone: given(v.phone),
    email: given(v.email),
  };
}

export const SENDER_COMMANDS: Command[] = [
  {
    name: 'senders default',
    summary: "Set a program's default sender (PUT /v1/admin/tenants/{id}/default-sender)",
    details: 'The sender of payouts that carry no sender block and no customer with a stored one.',
    flags: { tenant: TENANT, mode: MODE, ...SENDER_FLAGS },
    run: (v) =>
      ask((admin) => admin.tenants.setDefaultSender(given(v.tenant), { mode: given(v.mode), sender: senderOf(v) })),
  },
  {
    name: 'senders customer',
    summary: "Set one customer's stored sender (PUT /v1/admin/tenants/{id}/customers/{customerId})",
    details:
      "The sender of that customer's payouts that carry no sender block (the customerId the tenant sends with its payouts).",
    flags: {
      tenant: TENANT,
      customer: { type: 'string', value: 'UUID', required: true, description: 'the customerId' },
      mode: MODE,
      ...SENDER_FLAGS,
    },
    run: (v) =>
      ask((admin) =>
        admin.tenants.setCustomerSender(given(v.tenant), given(v.customer), {
          mode: given(v.mode),
          sender: senderOf(v),
        }),
      ),
  },
];
