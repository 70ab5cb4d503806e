// A webhook receiver with @bolivar/sdk: verifies each delivery (signature over the raw bytes, fresh
// timestamp), deduplicates on the event id, answers fast, then handles the event.
//   WEBHOOK_SECRET=whsec_… PORT=4000 node examples/receiver.mjs   (endpoint: http://localhost:4000/webhooks/bolivar)
import { createServer } from 'node:http';
import { constructEvent, WebhookVerificationError } from '@bolivar/sdk/webhooks';

// During a secret rotation give both: the new one and the previous one.
const secrets = [process.env.WEBHOOK_SECRET, process.env.WEBHOOK_SECRET_PREVIOUS].flatMap((secret) =>
  secret ? [secret] : [],
);
const PORT = Number(process.env.PORT ?? 4000);
const HOST = process.env.HOST ?? '127.0.0.1';
const BODY_BYTES_MAX = 1024 * 1024; // a webhook body is small
const seen = new Set(); // in production: a table with a unique key on the event id

/** @param {import('@bolivar/sdk/webhooks').WebhookEvent} event (a switch on eventType narrows payload) */
function handle(event) {
  switch (event.eventType) {
    case 'payment.settled':
      return console.log(
        `payment.settled ${event.payload.paymentId} ${event.payload.amount} ${event.payload.asset} ref ${event.payload.bankReference}`,
      );
    case 'payment.failed':
      return console.log(`payment.failed ${event.payload.paymentId} ${event.payload.reason}`);
    case 'payment.reversed':
      return console.log(`payment.reversed ${event.payload.paymentId} ${event.payload.reason}`);
    default:
      return console.log('an event type newer than this receiver: acknowledged, not handled');
  }
}

const server = createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/webhooks/bolivar') return void res.writeHead(404).end();
  /** @type {Buffer[]} */
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > BODY_BYTES_MAX) req.destroy();
    else chunks.push(chunk);
  });
  req.on('end', () => {
    let event;
    try {
      event = constructEvent(Buffer.concat(chunks), req.headers, secrets); // the exact bytes, before any JSON.parse
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      console.log(`refused: ${error.reason}`);
      return void res
        .writeHead(401, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: error.reason }));
    }
    res.writeHead(200).end(); // within 5 s; a redelivery is acknowledged again, not handled again
    if (seen.has(event.id)) return console.log(`duplicate ${event.id}`);
    seen.add(event.id);
    setImmediate(() => handle(event));
  });
});

server.listen(PORT, HOST, () => console.log(`listening on http://${HOST}:${PORT}/webhooks/bolivar`));
