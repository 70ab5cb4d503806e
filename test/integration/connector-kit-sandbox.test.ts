// The connector kit run for the sandbox rail: every promise of docs/connectors.md that its bank can
// play (the catalogue outage and the unreachable bank it cannot: reported as skipped, with why).
import { after, before } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { createTestDatabase, ENGINE, type TestDatabase } from '../support/harness.ts';
import { connectorKit } from '../support/connector-kit/kit.ts';
import { sandboxConnector } from '../support/connector-kit/sandbox-bank.ts';

let database: TestDatabase;
before(async () => {
  database = await createTestDatabase();
  await migrate(database.db);
});
after(async () => {
  await database.drop();
});

connectorKit(`sandbox rail on ${ENGINE}`, () => sandboxConnector(database.db));
