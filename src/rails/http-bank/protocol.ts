// The bank gateway protocol (docs/http-bank.md): the JSON the gateway and we exchange. Both our
// adapter and the reference gateway simulator read these shapes from here, so the two cannot drift.
// Amounts travel as decimal strings of minor units (a JSON number loses precision past 2^53).

/** References a bulk status call may carry: the gateway refuses more (400). */
export const BULK_STATUS_MAX = 100;

/**
 * A transfer's status as the gateway writes it. An unknown one is read as "not confirmed" (status-map.ts).
 * @internal Exported for its tests, not used elsewhere.
 */
export const GATEWAY_STATUSES = ['RECEIVED', 'PROCESSING', 'ON_HOLD', 'SETTLED', 'REJECTED', 'RETURNED'] as const;

/** POST /transfers: the body we send. `reference` is ours (the payment id) and the idempotency key. */
export interface GatewayTransferRequest {
  reference: string;
  amountMinor: string;
  currency: 'VES';
  instrument: string;
  beneficiary: {
    fullName: string;
    nationalId: string;
    bankCode: string;
    accountNumber: string | null;
    phone: string | null;
  };
  sender: Record<string, string>;
  /** Echoed back in every answer and callback about the transfer: which program sent it. */
  metadata: { tenantId: string; mode: 'test' | 'live' };
}

/** A transfer as the gateway answers it (POST /transfers, GET /transfers/{reference}, bulk, callbacks). */
export interface GatewayTransfer {
  reference: string;
  status: string;
  amountMinor?: string;
  bankReference?: string;
  settledAt?: string;
  errorCode?: string;
  errorMessage?: string;
  returnReason?: string;
  metadata?: { tenantId?: string; mode?: string };
}

/** POST /transfers/status: `{references}` in, one entry per reference out, `found: false` for one it never received. */
export interface GatewayBulkStatusAnswer {
  transfers: Array<({ found: true } & GatewayTransfer) | { found: false; reference: string }>;
}

/** A callback the gateway POSTs to us: an outcome, a return. `eventId` is unique per event; a redelivery repeats it. */
export interface GatewayCallback {
  eventId: string;
  occurredAt: string;
  transfer: GatewayTransfer;
}

/** An error answer of the gateway (4xx/5xx). */
export interface GatewayErrorAnswer {
  error: { code: string; message?: string };
}

/** GET /banks?instrument=…: the banks the gateway reaches through that instrument. */
export interface GatewayBanksAnswer {
  banks: Array<{ code: string; name: string; shortName: string }>;
}

/** Entries a statement page holds at most (the gateway's page size; we ask for no more). */
export const STATEMENT_PAGE_MAX = 1000;

/**
 * GET /statements/{YYYY-MM-DD}?cursor=…: one page of the day's statement — every transfer that reached
 * a final state that Caracas day — and the cursor of the next page (null: the last). 404
 * `STATEMENT_NOT_READY` while the day is not closed (today, a day to come).
 */
export interface GatewayStatementPage {
  day: string;
  entries: Array<{ reference: string; status: string; amountMinor: string; bankReference?: string; valueDate: string }>;
  nextCursor: string | null;
}
