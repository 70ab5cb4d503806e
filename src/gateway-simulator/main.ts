// The reference bank gateway simulator: a separate process speaking the gateway protocol
// (docs/http-bank.md), for tests and for trying the HTTP bank connector without a bank.
//
//   node --import tsx src/gateway-simulator/main.ts --config gateway.json     (npm run gateway-simulator -- --config …)
//
// gateway.json: {"port": 0, "controlPort": 0, "dir": "…", "keys": [{"id", "secret"}], "callbackKey":
// {"id", "secret"}, "callbackUrl": "…" (optional), "settleDelayMs": 200}. Once both ports listen it
// prints one JSON line on stdout: {"port", "controlPort", "pid"}. Nothing in src/ imports it.
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RailKey } from '../domain/rail-signature.ts';
import { GatewayApi } from './api.ts';
import { CallbackSender } from './callbacks.ts';
import { controlServer } from './control.ts';
import { GatewayState } from './gateway.ts';
import { Journal } from './journal.ts';

/** How often due transfers reach their outcome: the settle delay's resolution. */
const SETTLE_TICK_MS = 20;

interface SimulatorConfig {
  port: number;
  controlPort: number;
  host: string;
  dir: string;
  keys: RailKey[];
  callbackKey: RailKey;
  callbackUrl?: string;
  settleDelayMs: number;
}

function readConfig(argv: readonly string[]): SimulatorConfig {
  const at = argv.indexOf('--config');
  if (at < 0 || argv[at + 1] === undefined) throw new Error('usage: gateway-simulator --config <file.json>');
  const c = JSON.parse(readFileSync(argv[at + 1]!, 'utf8')) as Partial<SimulatorConfig>;
  if (
    typeof c.dir !== 'string' ||
    !Array.isArray(c.keys) ||
    c.keys.length === 0 ||
    typeof c.callbackKey?.secret !== 'string'
  ) {
    throw new Error('the config needs dir, keys [{id, secret}] and callbackKey {id, secret}');
  }
  return {
    port: c.port ?? 0,
    controlPort: c.controlPort ?? 0,
    host: c.host ?? '127.0.0.1',
    dir: c.dir,
    keys: c.keys,
    callbackKey: c.callbackKey,
    callbackUrl: c.callbackUrl,
    settleDelayMs: c.settleDelayMs ?? 200,
  };
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

async function main(): Promise<void> {
  const config = readConfig(process.argv);
  const callbacks = new CallbackSender(config.callbackKey, config.callbackUrl);
  const journal = new Journal(config.dir);
  // Its callbacks tell a transfer as its answers do, lies included (the API is built right after).
  let api: GatewayApi | undefined;
  const state = new GatewayState(journal, config.settleDelayMs, (transfer) =>
    callbacks.send(api ? api.told(transfer) : transfer, new Date()),
  );
  api = new GatewayApi(state, config.keys);
  let port = await listen(api.server, config.port, config.host);
  let refusing = false;
  const control = controlServer(state, api, callbacks, {
    refusing: () => refusing,
    async refuse(refuse) {
      if (refuse === refusing) return;
      refusing = refuse;
      if (refuse) {
        // Close the listening socket and every open connection: the next connect is refused.
        const closed = new Promise((resolve) => api.server.close(resolve));
        api.server.closeAllConnections();
        await closed;
      } else port = await listen(api.server, port, config.host);
    },
  });
  const controlPort = await listen(control, config.controlPort, config.host);
  const ticker = setInterval(() => state.settleDue(Date.now()), SETTLE_TICK_MS);
  process.stdout.write(`${JSON.stringify({ port, controlPort, pid: process.pid })}\n`);
  const stop = () => {
    clearInterval(ticker);
    callbacks.stop();
    api.server.closeAllConnections();
    control.closeAllConnections();
    api.server.close();
    control.close();
    journal.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`gateway simulator: ${(error as Error).message}\n`);
  process.exit(1);
});
