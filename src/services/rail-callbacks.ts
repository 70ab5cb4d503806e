// The receiving end of connectors' callbacks (POST /v1/rails/{rail}/callbacks): finds the connector by
// its name and lets it verify and store the callback. Public (a gateway has no API key): the signature
// is the authentication, and an unknown rail is refused exactly as a bad signature is, so a stranger
// learns nothing about which rails exist.
import type { CallbackReceipt } from '../rails/http-bank/adapter.ts';

/** A connector that receives callbacks (the HTTP bank connector). */
export interface CallbackReceiver {
  readonly name: string;
  receiveCallback(headers: Record<string, unknown>, rawBody: Uint8Array): Promise<CallbackReceipt>;
}

export function isCallbackReceiver<T extends object>(rail: T): rail is T & CallbackReceiver {
  return typeof (rail as Partial<CallbackReceiver>).receiveCallback === 'function';
}

export class RailCallbackService {
  private readonly receivers: ReadonlyMap<string, CallbackReceiver>;

  constructor(receivers: readonly CallbackReceiver[]) {
    this.receivers = new Map(receivers.map((receiver) => [receiver.name, receiver]));
  }

  async receive(rail: string, headers: Record<string, unknown>, rawBody: Uint8Array): Promise<CallbackReceipt> {
    const receiver = this.receivers.get(rail);
    if (!receiver) return { stored: false, refusal: 'unknown_rail' };
    return receiver.receiveCallback(headers, rawBody);
  }
}
