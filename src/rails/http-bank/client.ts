// The transport to a bank gateway: signed JSON over HTTP(S) with undici, every call bounded by the
// connector's timeout (and by the caller's signal). It decides one thing the adapter cannot: whether a
// failed call provably never reached the gateway.
import { Agent, request } from 'undici';
import { signRailMessage, type RailKey } from '../../domain/rail-signature.ts';
import { RailNotReceivedError } from '../rail.ts';

/** Connections kept open to one gateway: the reaper's questions (8 at once) and the payout path's sends share them. */
const GATEWAY_CONNECTIONS_MAX = 32;
/** The largest answer read from a gateway: a bulk status of BULK_STATUS_MAX transfers fits many times over. */
const GATEWAY_ANSWER_BYTES_MAX = 1024 * 1024;

/**
 * Errors raised while OPENING a connection, before any byte of the request was written: the gateway
 * cannot have received it. A reset, a timeout or an abort after that leave the request's fate unknown.
 */
const NOT_CONNECTED_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

export interface GatewayAnswer {
  status: number;
  body: unknown;
}

export class GatewayClient {
  private readonly agent: Agent;

  constructor(
    private readonly baseUrl: string,
    /** The current signing key: the one we sign with (the gateway also accepts the previous one). */
    private readonly key: RailKey,
    private readonly timeoutMs: number,
    private readonly nowMs: () => number,
  ) {
    this.agent = new Agent({ connections: GATEWAY_CONNECTIONS_MAX, connect: { timeout: timeoutMs } });
  }

  /**
   * One signed call. Resolves with any HTTP answer (the adapter reads the status); throws
   * RailNotReceivedError when the connection could not be opened, any other error otherwise.
   */
  async call(method: 'GET' | 'POST', path: string, body: unknown, signal?: AbortSignal): Promise<GatewayAnswer> {
    const raw = body === undefined ? '' : JSON.stringify(body);
    const bounded = signal
      ? AbortSignal.any([signal, AbortSignal.timeout(this.timeoutMs)])
      : AbortSignal.timeout(this.timeoutMs);
    let answer: Awaited<ReturnType<typeof request>>;
    try {
      answer = await request(new URL(path, this.baseUrl), {
        method,
        dispatcher: this.agent,
        signal: bounded,
        headers: {
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...signRailMessage(this.key, raw, this.nowMs()),
        },
        body: body === undefined ? undefined : raw,
      });
    } catch (error) {
      if (notConnected(error))
        throw new RailNotReceivedError(`the gateway at ${this.baseUrl} could not be reached: ${codeOf(error)}`, {
          cause: error,
        });
      throw error;
    }
    const text = await readBounded(answer.body);
    return { status: answer.statusCode, body: parseJson(text) };
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Whether the connection failed before the request was written (undici may wrap the socket error). */
function notConnected(error: unknown): boolean {
  const code = codeOf(error);
  if (code !== undefined && NOT_CONNECTED_CODES.has(code)) return true;
  const cause = (error as { cause?: unknown } | null)?.cause;
  const causeCode = codeOf(cause);
  return causeCode !== undefined && NOT_CONNECTED_CODES.has(causeCode);
}

async function readBounded(body: AsyncIterable<Buffer | Uint8Array> & { destroy?(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > GATEWAY_ANSWER_BYTES_MAX) {
      body.destroy?.();
      throw new Error(`the gateway's answer is over ${GATEWAY_ANSWER_BYTES_MAX} bytes`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The answer's JSON, or undefined when it is empty or not JSON (a proxy's HTML error page). */
function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
