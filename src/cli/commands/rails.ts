// The rails, their settings and routing rules (docs/rails.md).
import { UsageError, type Command, type Flag } from '../command.ts';
import { given, int, listOf, minor, onOff, text } from '../flags.ts';
import { ask, type Admin } from '../service.ts';

export const RAIL: Flag = {
  type: 'string',
  value: 'NAME',
  required: true,
  description: 'the rail name (rails list shows them)',
};

export const RAIL_COMMANDS: Command[] = [
  {
    name: 'rails list',
    summary:
      'List the rails with their settings, breaker, health and counts, and the routing rules (GET /v1/admin/rails)',
    flags: {},
    run: () => ask((admin) => admin.rails.list()),
  },
  {
    name: 'rails set',
    summary: "Change a rail's settings (PATCH /v1/admin/rails/{name})",
    details: 'Only the settings given change. Every process routes by them within a few seconds.',
    flags: {
      rail: RAIL,
      modes: {
        type: 'string',
        value: 'test,live',
        description: 'the modes it serves (comma-separated; empty for none)',
      },
      instruments: {
        type: 'string',
        value: 'pago_movil,transferencia',
        description: 'the instruments it serves (comma-separated)',
      },
      enabled: { type: 'string', value: 'on|off', description: 'off: no new payout is routed to it' },
    },
    run: (v) => {
      const body: Parameters<Admin['rails']['update']>[1] = {
        modes: listOf(v.modes, 'modes'),
        instruments: listOf(v.instruments, 'instruments'),
        enabled: onOff(v.enabled, 'enabled'),
      };
      if (Object.values(body).every((value) => value === undefined))
        throw new UsageError('rails set: give at least one setting to change; see "bolivar rails set --help"');
      return ask((admin) => admin.rails.update(given(v.rail), body));
    },
  },
  {
    name: 'rails routes',
    summary: 'List the routing rules in the order they apply (GET /v1/admin/rails/routes)',
    flags: {},
    run: () => ask((admin) => admin.rails.routes.list()),
  },
  {
    name: 'rails add-route',
    summary: 'Add a routing rule (POST /v1/admin/rails/routes)',
    details:
      'A payout matching every condition given is tried on the rail first; rules apply by priority, lowest first. Amounts are delivered BS, minor units.',
    flags: {
      priority: { type: 'string', value: 'N', required: true, description: 'lower applies first (0 to 1000000)' },
      rail: RAIL,
      tenant: { type: 'string', value: 'ID', description: "only this tenant's payouts" },
      mode: { type: 'string', value: 'test|live', description: 'only this mode' },
      method: { type: 'string', value: 'pago_movil|transferencia', description: 'only this instrument' },
      bank: { type: 'string', value: 'CODE', description: 'only this beneficiary bank code (4 digits)' },
      min: { type: 'string', value: 'MINOR', description: 'only amounts delivered of at least this' },
      max: { type: 'string', value: 'MINOR', description: 'only amounts delivered of at most this' },
    },
    run: (v) => {
      const body: Parameters<Admin['rails']['routes']['create']>[0] = {
        priority: int(v.priority, 'priority')!,
        rail: given(v.rail),
        tenantId: text(v.tenant),
        mode: text<'test' | 'live'>(v.mode),
        instrument: text<'pago_movil' | 'transferencia'>(v.method),
        bankCode: text(v.bank),
        minAmount: minor(v.min, 'min'),
        maxAmount: minor(v.max, 'max'),
      };
      return ask((admin) => admin.rails.routes.create(body));
    },
  },
  {
    name: 'rails delete-route',
    summary: 'Remove a routing rule (DELETE /v1/admin/rails/routes/{id})',
    flags: {
      rule: { type: 'string', value: 'ID', required: true, description: 'the rule id (rails routes shows it)' },
    },
    run: (v) => ask((admin) => admin.rails.routes.delete(given(v.rule))),
  },
];
