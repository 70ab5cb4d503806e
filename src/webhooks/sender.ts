// The HTTP side of webhook delivery: one POST, bounded in time, never following a redirect, the
// response body discarded. Connections are kept alive and reused per origin (undici Agent).
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { mayReachAddress } from '../domain/webhooks.ts';
import { ForbiddenDestinationError, guardedLookup } from './destination.ts';

export interface WebhookRequest {
  url: string;
  /** Live-mode requests may only reach public addresses, test-mode ones public or loopback (checked at connect time). */
  mode: 'test' | 'live';
  headers: Record<string, string>;
  body: string;
}

export interface WebhookResponse {
  /** The receiver's HTTP status; null when none arrived (timeout, connection refused, forbidden). */
  statusCode: number | null;
  ok: boolean;
  error: string | null;
  durationMs: number;
  /** WEBHOOK_TIMEOUT_MS passed before the exchange ended (a status may have arrived, its body not). */
  timedOut?: boolean;
}

export interface WebhookTransport {
  send(request: WebhookRequest): Promise<WebhookResponse>;
  close(): Promise<void>;
}

export interface HttpTransportSettings {
  /** Hard limit for the whole exchange: connect, headers and body (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** Connections kept per origin. */
  connectionsPerOrigin: number;
  /**
   * This service's own origin (PUBLIC_BASE_URL, where the sandbox sink is): test-mode deliveries may
   * reach it wherever it is, a private address included. The operator set it, not an API caller.
   */
  ownOrigin?: string | undefined;
}

/** Response bytes read (then thrown away) so the connection can be reused; beyond, it is closed. */
const RESPONSE_DRAIN_BYTES_MAX = 64 * 1024;
const KEEP_ALIVE_MS = 10_000;

class DeliveryTimeout extends Error {}

function errorText(error: unknown): string {
  if (error instanceof ForbiddenDestinationError) return error.message;
  const cause = (error as { cause?: unknown })?.cause;
  if (cause instanceof ForbiddenDestinationError) return cause.message;
  const code = (error as { code?: unknown })?.code ?? (cause as { code?: unknown } | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return `connection failed: ${typeof code === 'string' ? `${code} ` : ''}${message}`.slice(0, 500);
}

export class HttpWebhookTransport implements WebhookTransport {
  private readonly testAgent: Agent;
  private readonly liveAgent: Agent;
  private readonly ownAgent: Agent;

  constructor(private readonly settings: HttpTransportSettings) {
    const common = {
      keepAliveTimeout: KEEP_ALIVE_MS,
      keepAliveMaxTimeout: KEEP_ALIVE_MS,
      connections: settings.connectionsPerOrigin,
      pipelining: 1,
      headersTimeout: settings.timeoutMs,
      bodyTimeout: settings.timeoutMs,
    };
    this.testAgent = new Agent({ ...common, connect: { timeout: settings.timeoutMs, lookup: guardedLookup('test') } });
    this.liveAgent = new Agent({ ...common, connect: { timeout: settings.timeoutMs, lookup: guardedLookup('live') } });
    this.ownAgent = new Agent({ ...common, connect: { timeout: settings.timeoutMs } });
  }

  /** The agent for this request, or the address it may not reach (a literal never goes through `lookup`). */
  private route(req: WebhookRequest): { agent: Agent } | { forbidden: string } {
    const url = new URL(req.url);
    if (req.mode === 'test' && this.settings.ownOrigin !== undefined && url.origin === this.settings.ownOrigin)
      return { agent: this.ownAgent };
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) !== 0 && !mayReachAddress(req.mode, host)) return { forbidden: host };
    return { agent: req.mode === 'live' ? this.liveAgent : this.testAgent };
  }

  async send(req: WebhookRequest): Promise<WebhookResponse> {
    const startedAt = performance.now();
    const elapsed = () => Math.max(0, Math.round(performance.now() - startedAt));
    const route = this.route(req);
    if ('forbidden' in route) {
      return {
        statusCode: null,
        ok: false,
        error: new ForbiddenDestinationError(route.forbidden, req.mode).message,
        durationMs: elapsed(),
      };
    }
    const controller = new AbortController();
    // The hard limit does not rely on the client honouring the abort: every wait races it.
    const expired = new Promise<never>((_resolve, reject) => {
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
    });
    expired.catch(() => undefined);
    const timer = setTimeout(() => controller.abort(new DeliveryTimeout()), this.settings.timeoutMs);
    let statusCode: number | null = null;
    try {
      const pending = request(req.url, {
        method: 'POST',
        headers: req.headers,
        body: req.body,
        signal: controller.signal,
        dispatcher: route.agent,
      });
      pending.catch(() => undefined);
      const response = await Promise.race([pending, expired]);
      statusCode = response.statusCode;
      try {
        const drained = response.body.dump({ limit: RESPONSE_DRAIN_BYTES_MAX, signal: controller.signal });
        drained.catch(() => undefined);
        await Promise.race([drained, expired]);
      } catch (error) {
        // An over-long body only costs the connection; the status already answered. A timeout does not.
        if (controller.signal.aborted) throw error;
      }
      if (statusCode >= 200 && statusCode < 300) return { statusCode, ok: true, error: null, durationMs: elapsed() };
      const error =
        statusCode >= 300 && statusCode < 400 ? `HTTP ${statusCode}: redirects are not followed` : `HTTP ${statusCode}`;
      return { statusCode, ok: false, error, durationMs: elapsed() };
    } catch (error) {
      if (controller.signal.aborted) {
        const what = statusCode === null ? 'no response' : `HTTP ${statusCode} but the body did not finish`;
        return {
          statusCode,
          ok: false,
          error: `timed out after ${this.settings.timeoutMs} ms (${what})`,
          durationMs: elapsed(),
          timedOut: true,
        };
      }
      return { statusCode, ok: false, error: errorText(error), durationMs: elapsed() };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Call once no delivery is in flight (the dispatcher drains first): drops every connection. */
  async close(): Promise<void> {
    await Promise.all([this.testAgent.destroy(), this.liveAgent.destroy(), this.ownAgent.destroy()]);
  }
}
