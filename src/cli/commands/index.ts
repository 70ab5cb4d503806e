// Every command of `bolivar`, in the order the help lists them.
import type { Command } from '../command.ts';
import { ANOMALY_COMMANDS } from './anomalies.ts';
import { AUDIT_COMMANDS } from './audit.ts';
import { FUNDING_COMMANDS } from './funding.ts';
import { KEY_COMMANDS } from './keys.ts';
import { LIMITS_ADD, LIMITS_DELETE, LIMITS_LIST } from './limits.ts';
import { LOCAL_COMMANDS } from './local.ts';
import { PAYMENT_COMMANDS } from './payments.ts';
import { RAIL_STATEMENT_COMMANDS } from './rail-statements.ts';
import { RAIL_COMMANDS } from './rails.ts';
import { RATE_COMMANDS } from './rates.ts';
import { RECONCILIATION_COMMANDS } from './reconciliation.ts';
import { SENDER_COMMANDS } from './senders.ts';
import { TENANT_COMMANDS } from './tenants.ts';
import { WEBHOOK_COMMANDS } from './webhooks.ts';

export const COMMANDS: readonly Command[] = [
  ...TENANT_COMMANDS,
  ...KEY_COMMANDS,
  ...FUNDING_COMMANDS,
  ...SENDER_COMMANDS,
  ...RATE_COMMANDS,
  ...WEBHOOK_COMMANDS,
  LIMITS_ADD,
  LIMITS_LIST,
  ...RECONCILIATION_COMMANDS,
  LIMITS_DELETE,
  ...PAYMENT_COMMANDS,
  ...AUDIT_COMMANDS,
  ...ANOMALY_COMMANDS,
  ...RAIL_STATEMENT_COMMANDS,
  ...RAIL_COMMANDS,
  ...LOCAL_COMMANDS,
];

/**
 * The commands' names, as typed after `bolivar` (docs/admin.md lists each; a test checks it).
 * @internal Exported for its tests, not used elsewhere.
 */
export const COMMAND_NAMES: readonly string[] = COMMANDS.map((c) => c.name);
