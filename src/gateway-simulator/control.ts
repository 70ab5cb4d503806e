// The control API: on its own port, unauthenticated, for tests only (docs/http-bank.md lists it). It
// arms per-reference scenarios, switches faults on and off, makes the gateway change a transfer's
// status or push callbacks, and reads its counters. It stays up while the API port refuses connections.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { STATEMENT_PAGE_MAX, type GatewayTransfer } from '../rails/http-bank/protocol.ts';
import type { GatewayApi, Tamper } from './api.ts';
import type { CallbackSender } from './callbacks.ts';
import type { GatewayState, Scenario } from './gateway.ts';
import { answer, parseJson, readBody } from './http.ts';

/** Times one notify may repeat each callback: duplicates, not a flood. */
const NOTIFY_TIMES_MAX = 10;

type Outcome = {
  status: 'SETTLED' | 'REJECTED' | 'RETURNED' | 'PROCESSING';
  errorCode?: string;
  returnReason?: string;
};

export interface Listening {
  /** Closes the API's listening socket (connections are refused) or opens it again on the same port. */
  refuse(refusing: boolean): Promise<void>;
  refusing(): boolean;
}

function isOutcome(value: unknown): value is Outcome {
  const o = value as Outcome | undefined;
  return (
    typeof o === 'object' &&
    o !== null &&
    ['SETTLED', 'REJECTED', 'RETURNED', 'PROCESSING'].includes(o.status) &&
    (o.status !== 'REJECTED' || typeof o.errorCode === 'string')
  );
}

function isScenario(value: unknown): value is Scenario {
  const s = value as Scenario | undefined;
  return (
    typeof s === 'object' &&
    s !== null &&
    ['settle', 'hang', 'processing', 'fail'].includes(s.kind) &&
    (s.kind !== 'fail' || typeof s.errorCode === 'string')
  );
}

interface Parts {
  state: GatewayState;
  api: GatewayApi;
  callbacks: CallbackSender;
  listening: Listening;
}

export function controlServer(
  state: GatewayState,
  api: GatewayApi,
  callbacks: CallbackSender,
  listening: Listening,
): Server {
  const parts: Parts = { state, api, callbacks, listening };
  return createServer((request, response) => {
    handle(parts, request, response).catch((error: unknown) =>
      answer(response, 500, { error: (error as Error).message }),
    );
  });
}

async function handle(parts: Parts, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const body = parseJson(await readBody(request)) as Record<string, unknown> | undefined;
  const path = new URL(request.url ?? '/', 'http://control').pathname;
  const transfer = /^\/_control\/transfers\/([^/]+)(\/outcome|\/notify)?$/.exec(path);
  const scenario = /^\/_control\/scenarios\/([^/]+)$/.exec(path);
  const tamper = /^\/_control\/tamper\/([^/]+)$/.exec(path);
  if (request.method === 'GET' && path === '/_control/state') return answer(response, 200, stateView(parts));
  if (request.method === 'GET' && path === '/_control/transfers')
    return answer(response, 200, { data: parts.state.received() });
  if (request.method === 'POST' && path === '/_control/faults')
    return answer(response, 200, await setFaults(parts, body ?? {}));
  if (request.method === 'PUT' && path === '/_control/catalogue') {
    // Anything the gateway is told to serve, served as given: a connector must survive a bad list too.
    for (const [instrument, banks] of Object.entries(body ?? {})) parts.api.catalogue[instrument] = banks;
    return answer(response, 200, { catalogue: parts.api.catalogue });
  }
  if (request.method === 'POST' && path === '/_control/callbacks')
    return answer(response, 200, setCallbacks(parts, body ?? {}));
  if (request.method === 'POST' && path === '/_control/callbacks/release') {
    return answer(response, 200, { released: parts.callbacks.release(body?.order === 'reverse' ? 'reverse' : 'fifo') });
  }
  if (request.method === 'POST' && scenario) {
    if (!isScenario(body))
      return answer(response, 400, { error: 'a scenario: {kind: settle | hang | processing | fail, errorCode}' });
    parts.state.arm(decodeURIComponent(scenario[1]!), body);
    return answer(response, 200, { armed: body });
  }
  if (request.method === 'POST' && tamper) {
    const lie = body as Tamper | undefined;
    const valid =
      typeof lie === 'object' &&
      lie !== null &&
      (lie.with === undefined || (typeof lie.with === 'object' && lie.with !== null)) &&
      (lie.bulk === undefined || lie.bulk === 'omit' || lie.bulk === 'duplicate');
    if (!valid) return answer(response, 400, { error: 'a tamper: {with?: {field: value}, bulk?: omit | duplicate}' });
    parts.api.tampering.set(decodeURIComponent(tamper[1]!), lie);
    return answer(response, 200, { tampering: lie });
  }
  if (request.method === 'DELETE' && tamper) {
    parts.api.tampering.delete(decodeURIComponent(tamper[1]!));
    return answer(response, 200, { tampering: null });
  }
  if (transfer)
    return transferRoute(parts, request.method ?? 'GET', decodeURIComponent(transfer[1]!), transfer[2], body, response);
  answer(response, 404, { error: 'no such control route' });
}

function transferRoute(
  parts: Parts,
  method: string,
  reference: string,
  action: string | undefined,
  body: Record<string, unknown> | undefined,
  response: ServerResponse,
): void {
  const { state } = parts;
  if (method === 'GET' && action === undefined) {
    return answer(response, 200, {
      reference,
      submissions: state.submissionsOf(reference),
      transfer: state.find(reference) ?? null,
    });
  }
  if (method === 'POST' && action === '/outcome') {
    if (!isOutcome(body)) return answer(response, 400, { error: 'an outcome: {status, errorCode?, returnReason?}' });
    const known = state.record(reference, body, Date.now());
    return answer(response, known ? 200 : 404, { recorded: known });
  }
  if (method === 'POST' && action === '/notify') {
    const notices = body?.notices;
    const times = typeof body?.times === 'number' ? Math.min(NOTIFY_TIMES_MAX, Math.max(1, Math.trunc(body.times))) : 1;
    if (!Array.isArray(notices) || !notices.every(isOutcome))
      return answer(response, 400, { error: 'notices: a list of outcomes' });
    notify(parts, reference, notices, times);
    return answer(response, 200, { queued: notices.length * times });
  }
  answer(response, 404, { error: 'no such control route' });
}

/** Callbacks about `reference` saying each notice in turn, each `times` times; the transfer's record is not changed. */
function notify(parts: Parts, reference: string, notices: Outcome[], times: number): void {
  const base: GatewayTransfer = parts.state.find(reference) ?? { reference, status: 'PROCESSING' };
  for (const notice of notices) {
    const said: GatewayTransfer = { ...base, status: notice.status };
    if (notice.errorCode !== undefined) said.errorCode = notice.errorCode;
    if (notice.returnReason !== undefined) said.returnReason = notice.returnReason;
    if ((notice.status === 'SETTLED' || notice.status === 'RETURNED') && said.bankReference === undefined)
      said.bankReference = '000000000000';
    parts.callbacks.send(parts.api.told(said), new Date(), times);
  }
}

async function setFaults(parts: Parts, body: Record<string, unknown>): Promise<unknown> {
  const { api, listening } = parts;
  if (typeof body.refuse === 'boolean') await listening.refuse(body.refuse);
  if (body.error5xx === null || typeof body.error5xx === 'number') api.faults.error5xx = body.error5xx as number | null;
  if (typeof body.slowMs === 'number') api.faults.slowMs = body.slowMs;
  if (typeof body.catalogueDown === 'boolean') api.faults.catalogueDown = body.catalogueDown;
  if (typeof body.statementNotReady === 'boolean') api.faults.statementNotReady = body.statementNotReady;
  if (
    typeof body.statementPageSize === 'number' &&
    Number.isInteger(body.statementPageSize) &&
    body.statementPageSize >= 1 &&
    body.statementPageSize <= STATEMENT_PAGE_MAX
  ) {
    api.faults.statementPageSize = body.statementPageSize;
  }
  if (
    typeof body.refuseSendsWith === 'number' &&
    (body.refuseSendsWith === 0 || (body.refuseSendsWith >= 400 && body.refuseSendsWith <= 499))
  )
    api.faults.refuseSendsWith = body.refuseSendsWith;
  return stateView(parts);
}

function setCallbacks(parts: Parts, body: Record<string, unknown>): unknown {
  const { callbacks } = parts;
  if (typeof body.url === 'string') callbacks.url = body.url;
  if (typeof body.duplicate === 'number')
    callbacks.faults.duplicate = Math.min(NOTIFY_TIMES_MAX, Math.max(1, Math.trunc(body.duplicate)));
  if (typeof body.hold === 'boolean') callbacks.faults.hold = body.hold;
  if (typeof body.badSignature === 'boolean') callbacks.faults.badSignature = body.badSignature;
  return stateView(parts);
}

function stateView({ state, api, callbacks, listening }: Parts) {
  return {
    refusing: listening.refusing(),
    faults: api.faults,
    refusedSends: api.refusedSends,
    transfers: state.size,
    callbacks: {
      url: callbacks.url ?? null,
      faults: callbacks.faults,
      counters: callbacks.counters,
      pending: callbacks.pending,
    },
  };
}
