// The receiving end of connectors' callbacks (POST /v1/rails/{rail}/callbacks): finds the connector by
// its name and lets it verify and store the callback. Public (a gateway has no API key): the signature
// is the authentication, and an unknown rail is refused exactly as a bad signature is, so a stranger
// learns nothing about which rails exist.
import { Counter, type Registry } from 'prom-client';
import type { CallbackReceipt } from '../rails/http-bank/adapter.ts';

/** A connector that receives callbacks (the HTTP bank connector). */
export interface CallbackReceiver {
  readonly name: string;
  receiveCallback(
    headers: Record<string, unknown>,
    rawBody: Uint8Array,
    admit: () => boolean,
  ): Promise<CallbackReceipt>;
}

export function isCallbackReceiver<T extends object>(rail: T): rail is T & CallbackReceiver {
  return typeof (rail as Partial<CallbackReceiver>).receiveCallback === 'function';
}

/** How a received callback ended, as counted. */
type CallbackResult = 'stored' | 'duplicate' | 'refused' | 'unreadable' | 'overloaded';

export class RailCallbackService {
  private readonly receivers: ReadonlyMap<string, CallbackReceiver>;
  private readonly received: Counter<'rail' | 'result'>;

  /** `verified`: told of each rail whose signed callback was stored — evidence the rail is up. */
  constructor(
    receivers: readonly CallbackReceiver[],
    registry: Registry,
    private readonly verified: (rail: string) => void = () => undefined,
  ) {
    this.receivers = new Map(receivers.map((receiver) => [receiver.name, receiver]));
    this.received = new Counter({
      name: 'bolivar_rail_callbacks_total',
      help: 'Callbacks received on POST /v1/rails/{rail}/callbacks by result: stored, duplicate (a redelivery), refused (signature, key id or timestamp), unreadable, overloaded (past the rail\'s budget); a rail we do not have is counted as rail="unknown"',
      labelNames: ['rail', 'result'],
      registers: [registry],
    });
  }

  /** `admit`: asked once the callback verified, with the rail's name (its budget); refused, nothing is stored. */
  async receive(
    rail: string,
    headers: Record<string, unknown>,
    rawBody: Uint8Array,
    admit: (rail: string) => boolean,
  ): Promise<CallbackReceipt> {
    const receiver = this.receivers.get(rail);
    // The label is a configured name or "unknown": a caller's path never becomes a series of its own.
    if (!receiver) return this.counted('unknown', { stored: false, refusal: 'unknown_rail' });
    const receipt = await receiver.receiveCallback(headers, rawBody, () => admit(rail));
    if (receipt.stored) this.verified(rail);
    return this.counted(rail, receipt);
  }

  private counted(rail: string, receipt: CallbackReceipt): CallbackReceipt {
    const result: CallbackResult = receipt.stored
      ? receipt.duplicate
        ? 'duplicate'
        : 'stored'
      : receipt.refusal === 'unreadable' || receipt.refusal === 'overloaded'
        ? receipt.refusal
        : 'refused';
    this.received.inc({ rail, result });
    return receipt;
  }
}
