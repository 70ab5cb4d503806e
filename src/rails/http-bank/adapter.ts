// The HTTP bank connector: a RailAdapter that speaks the gateway protocol (docs/http-bank.md). It only
// translates: our reference is the gateway's idempotency key, the gateway's words become ours through
// one table (status-map.ts), and its callbacks reach the reaper through our inbox (rail_inbox).
import {
  acknowledgeRailInboxEvent,
  insertRailInboxEvent,
  listPendingRailInbox,
} from '../../db/repositories/rail-inbox.ts';
import type { Database } from '../../db/database.ts';
import type { Clock } from '../../domain/clock.ts';
import type { Instrument } from '../../domain/instrument.ts';
import type { RailSignatureFailure } from '../../domain/rail-signature.ts';
import type { Bank } from '../catalogue.ts';
import {
  RailStatementNotReady,
  type RailAdapter,
  type RailHealth,
  type RailLookup,
  type RailNotification,
  type RailStatementEntry,
  type RailStatus,
  type RailTransfer,
} from '../rail.ts';
import type { HttpBankConnectorConfig } from '../rails-file.ts';
import { notificationOf, readCallback } from './callbacks.ts';
import { GatewayClient, type GatewayAnswer } from './client.ts';
import {
  BULK_STATUS_MAX,
  STATEMENT_PAGE_MAX,
  type GatewayStatementPage,
  type GatewayBanksAnswer,
  type GatewayBulkStatusAnswer,
  type GatewayErrorAnswer,
  type GatewayCallback,
  type GatewayTransfer,
  type GatewayTransferRequest,
} from './protocol.ts';
import { checkedStatusOf } from './status-map.ts';

/** What the callback route learns from receiving one callback. */
/** Why a callback was not stored: its signature (or rail), its body, or its rail's budget. */
type CallbackRefusal = RailSignatureFailure | 'unknown_rail' | 'unreadable' | 'overloaded';
export type CallbackReceipt =
  { stored: true; duplicate: boolean; eventId: string } | { stored: false; refusal: CallbackRefusal };

/** Pages of one day's statement read at most: STATEMENT_PAGE_MAX entries each, the most lines a statement may have. */
const STATEMENT_PAGES_MAX = 500;
const STATEMENT_STATUS: Readonly<Record<string, string>> = {
  SETTLED: 'settled',
  REJECTED: 'failed',
  RETURNED: 'reversed',
};

/** A statement entry as the import reads it: strings only; a field that is not a string is empty (and refused there). */
function statementEntryOf(entry: unknown): RailStatementEntry {
  const given = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === 'string' ? value : '');
  const status = text(given.status);
  return {
    reference: text(given.reference),
    status: Object.hasOwn(STATEMENT_STATUS, status) ? STATEMENT_STATUS[status]! : status,
    amountMinor: text(given.amountMinor),
    bankReference: text(given.bankReference),
    valueDate: text(given.valueDate),
  };
}

/** Inbox rows read per call when most of them say nothing final (acknowledged on the spot and skipped). */
const INBOX_SCAN_MAX = 500;

function isTransfer(value: unknown): value is GatewayTransfer {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as GatewayTransfer).reference === 'string' &&
    typeof (value as GatewayTransfer).status === 'string'
  );
}

/** An answer that says nothing certain: the caller treats the call as failed (unknown), never as a rejection. */
function unexpected(what: string, answer: GatewayAnswer): Error {
  const code: unknown = (answer.body as Partial<GatewayErrorAnswer> | undefined)?.error?.code;
  return new Error(
    `the gateway answered ${what} with ${answer.status}${typeof code === 'string' ? ` ${code.slice(0, 64)}` : ''}`,
  );
}

export class HttpBankRail implements RailAdapter {
  readonly name: string;
  readonly resolvesWithinMs?: number;
  /** The modes the rails file gives it: what it serves until the operator sets its modes. */
  readonly modes: readonly ('test' | 'live')[];
  private readonly client: GatewayClient;

  constructor(
    private readonly config: HttpBankConnectorConfig,
    private readonly db: Database,
    private readonly clock: Clock,
  ) {
    this.name = config.name;
    this.modes = config.modes;
    if (config.resolvesWithinMs !== undefined) this.resolvesWithinMs = config.resolvesWithinMs;
    this.client = new GatewayClient(config.baseUrl, config.keys[0]!, config.timeoutMs, () => clock.now().getTime());
  }

  /** The gateway has no availability query: it answers INSTRUMENT_NOT_SUPPORTED to a send it cannot make. */
  async instrumentAvailable(): Promise<boolean> {
    return true;
  }

  async submit(transfer: RailTransfer, signal: AbortSignal): Promise<RailStatus> {
    signal.throwIfAborted();
    const body: GatewayTransferRequest = {
      reference: transfer.reference,
      amountMinor: transfer.amountMinor.toString(),
      currency: 'VES',
      instrument: transfer.instrument,
      beneficiary: { ...transfer.beneficiary },
      sender: { ...transfer.sender },
      metadata: { tenantId: transfer.tenantId, mode: transfer.mode },
    };
    // A RailNotReceivedError (never connected) passes through; any other failure leaves the fate unknown.
    const answer = await this.client.call('POST', '/transfers', body, signal);
    if ((answer.status === 200 || answer.status === 201) && isTransfer(answer.body))
      return checkedStatusOf(answer.body, this.clock.now());
    throw unexpected('a transfer', answer);
  }

  async lookup(reference: string): Promise<RailLookup> {
    const answer = await this.client.call('GET', `/transfers/${encodeURIComponent(reference)}`, undefined);
    if (answer.status === 404) return { status: 'not_found' };
    if (answer.status === 200 && isTransfer(answer.body)) return checkedStatusOf(answer.body, this.clock.now());
    throw unexpected('a status question', answer);
  }

  /**
   * In calls of at most BULK_STATUS_MAX references, one after the other. A reference the answer leaves
   * out, or gives more than once, is `unconfirmed` (asked again later): which of two entries is true
   * is not ours to guess, and one missing is no answer.
   */
  async lookupMany(references: readonly string[]): Promise<RailLookup[]> {
    // By reference: its one entry, or 'repeated' once a second one came.
    const found = new Map<string, RailLookup | 'repeated'>();
    for (let start = 0; start < references.length; start += BULK_STATUS_MAX) {
      const chunk = references.slice(start, start + BULK_STATUS_MAX);
      const answer = await this.client.call('POST', '/transfers/status', { references: chunk });
      const transfers = (answer.body as GatewayBulkStatusAnswer | undefined)?.transfers;
      if (answer.status !== 200 || !Array.isArray(transfers)) throw unexpected('a bulk status question', answer);
      const now = this.clock.now();
      for (const entry of transfers) {
        const reference: unknown = entry?.reference;
        if (typeof reference !== 'string') continue;
        const lookup: RailLookup | undefined =
          entry.found === false
            ? { status: 'not_found' }
            : entry.found === true && isTransfer(entry)
              ? checkedStatusOf(entry, now)
              : undefined;
        if (lookup !== undefined) found.set(reference, found.has(reference) ? 'repeated' : lookup);
      }
    }
    return references.map((reference) => {
      const entry = found.get(reference);
      return entry === undefined || entry === 'repeated' ? { status: 'unconfirmed' } : entry;
    });
  }

  /**
   * The unacknowledged callbacks of our inbox, oldest first. One that says nothing final (still
   * processing, or words not in the table) is acknowledged here and not handed out: there is nothing
   * for the reaper to apply, and its questions resolve that transfer.
   */
  async pendingNotifications(limit: number): Promise<RailNotification[]> {
    if (!Number.isSafeInteger(limit) || limit < 0)
      throw new RangeError('HttpBankRail: limit must be a non-negative integer');
    if (limit === 0) return [];
    const rows = await listPendingRailInbox(this.db, this.name, Math.min(INBOX_SCAN_MAX, limit * 2));
    const notifications: RailNotification[] = [];
    for (const row of rows) {
      const notification = notificationOf(row.event_id, row.payload as GatewayCallback, row.occurred_at);
      if (notification === undefined)
        await acknowledgeRailInboxEvent(this.db, this.name, row.event_id, this.clock.now());
      else notifications.push(notification);
      if (notifications.length === limit) break;
    }
    return notifications;
  }

  /** Idempotent; throws for an id that was never handed out (a caller bug). */
  async acknowledgeNotification(id: string): Promise<void> {
    if (!(await acknowledgeRailInboxEvent(this.db, this.name, id, this.clock.now())))
      throw new Error(`HttpBankRail ${this.name}: unknown notification ${id}`);
  }

  async banks(instrument: Instrument): Promise<Bank[]> {
    const answer = await this.client.call('GET', `/banks?instrument=${encodeURIComponent(instrument)}`, undefined);
    const banks: unknown = (answer.body as Partial<GatewayBanksAnswer> | undefined)?.banks;
    if (answer.status !== 200 || !Array.isArray(banks)) throw unexpected('the bank catalogue', answer);
    return banks as Bank[];
  }

  async health(signal: AbortSignal): Promise<RailHealth> {
    try {
      const answer = await this.client.call('GET', '/health', undefined, signal);
      return answer.status === 200
        ? { ok: true }
        : { ok: false, message: `the gateway's health answered ${answer.status}` };
    } catch (error) {
      return { ok: false, message: (error as Error).message };
    }
  }

  /**
   * A callback as it arrived on our route: verified with the connector's callback keys, read, and
   * stored in our inbox once per event id. Resolves only once the row is committed; a redelivery of a
   * stored event is `duplicate`. `admit` is asked only once the callback verified (its rail's budget),
   * so a body nobody signed never spends it; refused, nothing is stored (`overloaded`).
   */
  async receiveCallback(
    headers: Record<string, unknown>,
    rawBody: Uint8Array,
    admit: () => boolean,
  ): Promise<CallbackReceipt> {
    const now = this.clock.now();
    const reading = readCallback(this.config.callbackKeys, headers, rawBody, now.getTime());
    if (!reading.ok) return { stored: false, refusal: reading.refusal };
    if (!admit()) return { stored: false, refusal: 'overloaded' };
    const eventId = reading.callback.eventId;
    const inserted = await insertRailInboxEvent(this.db, {
      rail: this.name,
      eventId,
      payload: reading.callback,
      occurredAt: reading.occurredAt,
      receivedAt: now,
    });
    return { stored: true, duplicate: !inserted, eventId };
  }

  /**
   * The day's statement, page by page (GET /statements/{day}), each entry in our status words when it
   * has one of the gateway's final statuses and verbatim otherwise: the statement import checks every
   * value. A 404 STATEMENT_NOT_READY is RailStatementNotReady; any other answer but a page throws.
   */
  async *statement(day: string, signal: AbortSignal): AsyncIterable<RailStatementEntry> {
    let cursor: string | null = null;
    const seen = new Set<string>();
    for (let page = 1; page <= STATEMENT_PAGES_MAX; page += 1) {
      const query: string = cursor === null ? '' : `?cursor=${encodeURIComponent(cursor)}`;
      const answer = await this.client.call('GET', `/statements/${encodeURIComponent(day)}${query}`, undefined, signal);
      const code: unknown = (answer.body as Partial<GatewayErrorAnswer> | undefined)?.error?.code;
      if (answer.status === 404 && code === 'STATEMENT_NOT_READY') throw new RailStatementNotReady(day);
      const body = answer.body as Partial<GatewayStatementPage> | undefined;
      const next: unknown = body?.nextCursor;
      if (
        answer.status !== 200 ||
        !Array.isArray(body?.entries) ||
        body.entries.length > STATEMENT_PAGE_MAX ||
        (next !== null && typeof next !== 'string')
      ) {
        throw unexpected(`the statement of ${day}`, answer);
      }
      for (const entry of body.entries as unknown[]) yield statementEntryOf(entry);
      if (next === null) return;
      if (seen.has(next))
        throw new Error(`the gateway's statement of ${day} gave the cursor ${next.slice(0, 64)} twice`);
      seen.add(next);
      cursor = next;
    }
    throw new Error(`the gateway's statement of ${day} has more than ${STATEMENT_PAGES_MAX} pages`);
  }

  /** Closes the connections to the gateway. */
  async close(): Promise<void> {
    await this.client.close();
  }
}
