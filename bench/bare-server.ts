// Ceiling (a): a bare Fastify route returning a constant, and the local webhook receiver (answers
// 200 to any POST). Same framework and Node as the service, nothing else.
import Fastify from 'fastify';

const port = Number(process.argv[2] ?? 0);
const app = Fastify({ logger: false, keepAliveTimeout: 75_000 });
let received = 0;
app.get('/constant', async () => ({ ok: true }));
app.post('/webhook', async () => {
  received += 1;
  return { ok: true };
});
app.get('/received', async () => ({ received }));
await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(`listening ${(app.server.address() as { port: number }).port}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
