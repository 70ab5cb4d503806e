// The gateway's API as the protocol defines it (docs/http-bank.md), with the switchable faults the
// control API sets: refused connections (the listening socket closed), 5xx answers, slow answers.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { verifyRailMessage, type RailKey } from '../domain/rail-signature.ts';
import { bankDayOf, isBankDay } from './bank-day.ts';
import {
  BULK_STATUS_MAX,
  STATEMENT_PAGE_MAX,
  type GatewayStatementPage,
  type GatewayTransfer,
  type GatewayTransferRequest,
} from '../rails/http-bank/protocol.ts';
import type { GatewayState } from './gateway.ts';
import { answer, parseJson, readBody } from './http.ts';

const CATALOGUE_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'rails', 'data', 've-banks.json');

export interface ApiFaults {
  /** The next this-many API answers are 503 (null: every one). A transfer is still recorded first. */
  error5xx: number | null | 0;
  /** Every API answer is held this long (the work is done first). */
  slowMs: number;
  catalogueDown: boolean;
  /** Every send is answered with this status (400, 404, 422 …) without being recorded; 0: off. */
  refuseSendsWith: number;
  /** GET /statements/{day} answers 404 STATEMENT_NOT_READY for every day. */
  statementNotReady: boolean;
  /** Entries per statement page (at most STATEMENT_PAGE_MAX). */
  statementPageSize: number;
}

/**
 * How the gateway lies about one reference, the way real bank integrations do: every answer about it
 * (send, status, bulk) has these fields replaced (`with`: another reference, an amount as a JSON number
 * or "1542.00", a bank reference with a formula, a settlement time in 2099), and a bulk answer leaves
 * it out or gives it twice (`bulk`).
 */
export interface Tamper {
  with?: Record<string, unknown>;
  bulk?: 'omit' | 'duplicate';
}

export class GatewayApi {
  readonly faults: ApiFaults = {
    error5xx: 0,
    slowMs: 0,
    catalogueDown: false,
    refuseSendsWith: 0,
    statementNotReady: false,
    statementPageSize: STATEMENT_PAGE_MAX,
  };
  /** Sends answered `refuseSendsWith` (none of them recorded). */
  refusedSends = 0;
  /** By reference: how the gateway lies about it (the control API sets it). */
  readonly tampering = new Map<string, Tamper>();
  readonly server: Server;
  /** The lists `GET /banks` serves by instrument: the shipped ones until the control API replaces one. */
  readonly catalogue = JSON.parse(readFileSync(CATALOGUE_FILE, 'utf8')) as Record<string, unknown>;

  constructor(
    private readonly state: GatewayState,
    /** Our keys as the gateway knows them: the current and the previous one are both accepted. */
    private readonly keys: readonly RailKey[],
  ) {
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error: unknown) => {
        if (!response.headersSent)
          answer(response, 500, { error: { code: 'INTERNAL', message: (error as Error).message } });
      });
    });
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const raw = await readBody(request);
    const verified = verifyRailMessage({ keys: this.keys, headers: request.headers, rawBody: raw, nowMs: Date.now() });
    if (!verified.ok) return answer(response, 401, { error: { code: 'SIGNATURE_INVALID', message: verified.reason } });
    const url = new URL(request.url ?? '/', 'http://gateway');
    const result = this.route(request.method ?? 'GET', url, raw);
    if (result === 'hang') return; // Received and recorded; the answer never comes.
    if (this.faults.slowMs > 0) await new Promise((resolve) => setTimeout(resolve, this.faults.slowMs));
    if (this.faults.error5xx === null || this.faults.error5xx > 0) {
      if (this.faults.error5xx !== null) this.faults.error5xx -= 1;
      return answer(response, 503, { error: { code: 'UNAVAILABLE', message: 'simulated outage' } });
    }
    answer(response, result.status, result.body);
  }

  private route(method: string, url: URL, raw: Buffer): { status: number; body: unknown } | 'hang' {
    const path = url.pathname;
    if (method === 'POST' && path === '/transfers') return this.submit(raw);
    if (method === 'POST' && path === '/transfers/status') return this.bulkStatus(raw);
    if (method === 'GET' && path.startsWith('/transfers/')) {
      const found = this.state.find(decodeURIComponent(path.slice('/transfers/'.length)));
      return found
        ? { status: 200, body: this.told(found) }
        : { status: 404, body: { error: { code: 'TRANSFER_NOT_FOUND' } } };
    }
    if (method === 'GET' && path.startsWith('/statements/'))
      return this.statement(decodeURIComponent(path.slice('/statements/'.length)), url.searchParams.get('cursor'));
    if (method === 'GET' && path === '/banks') return this.banks(url.searchParams.get('instrument') ?? '');
    if (method === 'GET' && path === '/health') return { status: 200, body: { status: 'ok' } };
    return { status: 404, body: { error: { code: 'NOT_FOUND' } } };
  }

  private submit(raw: Buffer): { status: number; body: unknown } | 'hang' {
    const request = parseJson(raw) as GatewayTransferRequest | undefined;
    const valid =
      typeof request?.reference === 'string' &&
      request.reference.length > 0 &&
      typeof request.amountMinor === 'string' &&
      /^[1-9][0-9]{0,18}$/.test(request.amountMinor) &&
      typeof request.beneficiary?.nationalId === 'string';
    if (!valid) return { status: 400, body: { error: { code: 'INVALID_REQUEST' } } };
    if (this.faults.refuseSendsWith !== 0) {
      this.refusedSends += 1;
      return { status: this.faults.refuseSendsWith, body: { error: { code: 'SIMULATED_REFUSAL' } } };
    }
    const submission = this.state.submit(request, Date.now());
    if (submission.kind === 'hang') return 'hang';
    if (submission.kind === 'conflict') return { status: 409, body: { error: { code: 'REFERENCE_REUSED' } } };
    return { status: submission.created ? 201 : 200, body: this.told(submission.transfer) };
  }

  private bulkStatus(raw: Buffer): { status: number; body: unknown } {
    const references = (parseJson(raw) as { references?: unknown } | undefined)?.references;
    if (
      !Array.isArray(references) ||
      references.length > BULK_STATUS_MAX ||
      !references.every((r) => typeof r === 'string')
    ) {
      return {
        status: 400,
        body: { error: { code: 'INVALID_REQUEST', message: `references: a list of at most ${BULK_STATUS_MAX}` } },
      };
    }
    const transfers = (references as string[]).flatMap((reference) => {
      const found = this.state.find(reference);
      const entry = found ? { found: true, ...this.told(found) } : { found: false, reference };
      const bulk = this.lieAbout(reference)?.bulk;
      return bulk === 'omit'
        ? []
        : bulk === 'duplicate'
          ? [entry, { ...entry, status: 'REJECTED', errorCode: 'REJECTED_BY_BANK' }]
          : [entry];
    });
    return { status: 200, body: { transfers } };
  }

  /** The lie armed for a reference, or for its beneficiary's national id (`nid:V…`), as scenarios are. */
  private lieAbout(reference: string): Tamper | undefined {
    const nationalId = this.state.nationalIdOf(reference);
    return (
      this.tampering.get(reference) ?? (nationalId === undefined ? undefined : this.tampering.get(`nid:${nationalId}`))
    );
  }

  /** A transfer as the gateway tells it: with its lies, when it is told to lie about it. */
  told(transfer: GatewayTransfer): GatewayTransfer {
    const lie = this.lieAbout(transfer.reference)?.with;
    return lie ? ({ ...transfer, ...lie } as GatewayTransfer) : transfer;
  }

  /** A page of a day's statement; a day to come (Caracas), or every day under the fault, is not ready. */
  private statement(day: string, cursor: string | null): { status: number; body: unknown } {
    if (!isBankDay(day)) return { status: 400, body: { error: { code: 'INVALID_DAY' } } };
    if (this.faults.statementNotReady || day > bankDayOf(new Date()))
      return { status: 404, body: { error: { code: 'STATEMENT_NOT_READY' } } };
    const all = this.state.statementOf(day).filter((entry) => cursor === null || entry.reference > cursor);
    const entries = all.slice(0, this.faults.statementPageSize);
    const page: GatewayStatementPage = {
      day,
      entries,
      nextCursor: all.length > entries.length ? entries[entries.length - 1]!.reference : null,
    };
    return { status: 200, body: page };
  }

  private banks(instrument: string): { status: number; body: unknown } {
    if (this.faults.catalogueDown) return { status: 503, body: { error: { code: 'CATALOGUE_UNAVAILABLE' } } };
    const banks = Object.hasOwn(this.catalogue, instrument) ? this.catalogue[instrument] : undefined;
    return Array.isArray(banks)
      ? { status: 200, body: { banks } }
      : { status: 400, body: { error: { code: 'INSTRUMENT_UNKNOWN' } } };
  }
}
