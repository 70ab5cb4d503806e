// A webhook dispatcher in a process of its own, for the multi-process tests: connects to
// DATABASE_URL, prints "ready", waits for "go" on stdin, delivers until nothing is due (or runs until
// killed with DISPATCH_FOREVER=1), then prints how many requests it sent.
import { createInterface } from 'node:readline';
import { PostgresDatabase } from '../../src/db/postgres.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { HttpWebhookTransport, type WebhookRequest } from '../../src/webhooks/sender.ts';
import { WebhookDispatcher } from '../../src/workers/webhook-dispatcher.ts';

const env = process.env;
const timeoutMs = Number(env.WEBHOOK_TIMEOUT_MS ?? 2000);
const db = new PostgresDatabase(env.DATABASE_URL!, 8);
const concurrency = Number(env.WEBHOOK_CONCURRENCY ?? 16);
const http = new HttpWebhookTransport({ timeoutMs, connectionsPerOrigin: concurrency });
let sent = 0;
const transport = {
  send: (request: WebhookRequest) => {
    sent += 1;
    return http.send(request);
  },
  close: () => http.close(),
};
const dispatcher = new WebhookDispatcher(db, systemClock, transport, {
  timeoutMs,
  backoffScale: Number(env.WEBHOOK_BACKOFF_SCALE ?? 0),
  concurrency,
  originConcurrency: concurrency,
  batchMax: Number(env.DISPATCH_BATCH ?? 10),
  leaseMarginMs: Number(env.LEASE_MARGIN_MS ?? 30_000),
});

await db.query('SELECT 1');
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
for await (const line of lines) if (line.trim() === 'go') break;
if (env.DISPATCH_FOREVER === '1') {
  for (;;) if (!(await dispatcher.runOnce())) await new Promise((resolve) => setTimeout(resolve, 10));
}
await dispatcher.dispatchDue();
await dispatcher.close();
await db.close();
process.stdout.write(`sent ${sent}\n`);
process.exit(0);
