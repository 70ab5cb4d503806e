// The connector kit run for the HTTP bank connector against the reference gateway simulator (its own
// process, a fresh one per case) with our service receiving its signed callbacks: every promise of
// docs/connectors.md, including the catalogue outage and the unreachable bank the sandbox cannot play.
// The other half of the cases of connector-kit-http-bank.test.ts: each case starts a gateway and a
// service (about 4 s a case on a busy machine), and one file of all 22 neared the runner's 120 s.
import { ENGINE } from '../support/harness.ts';
import { connectorKit } from '../support/connector-kit/kit.ts';
import { httpBankUnderTest } from '../support/gateway-simulator.ts';

connectorKit(`HTTP bank connector on ${ENGINE}`, () => httpBankUnderTest(), { part: { index: 1, of: 2 } });
