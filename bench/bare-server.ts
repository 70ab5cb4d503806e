// Ceiling (a): a bare Fastify route returning a constant, and the local webhook receiver (answers
// 200 to any POST). Same framework and Node as the service, nothing else.
import Fastify from 'fastify';

const port = Number(process.argv[2] ?? 0);
const app = Fastify({ logger: false, keepAliveTimeout: 75_000 });
let received = 0;
// The payroll scenario's receiver: distinct payment.settled events and when the last one arrived.
let settled = new Set<string>();
let lastSettledAtMs = 0;
app.get('/constant', async () => ({ ok: true }));
app.post('/webhook', async (request) => {
  received += 1;
  const body = request.body as { id?: string; eventType?: string } | undefined;
  if (body?.eventType === 'payment.settled' && typeof body.id === 'string' && !settled.has(body.id)) {
    settled.add(body.id);
    lastSettledAtMs = Date.now();
  }
  return { ok: true };
});
app.get('/received', async () => ({ received, settled: settled.size, last_settled_at_ms: lastSettledAtMs }));
app.post('/reset', async () => {
  settled = new Set();
  lastSettledAtMs = 0;
  return { ok: true };
});
await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(`listening ${(app.server.address() as { port: number }).port}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
