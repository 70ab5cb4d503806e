// The connector kit run for the HTTP bank connector against the reference gateway simulator (its own
// process, a fresh one per case) with our service receiving its signed callbacks: every promise of
// docs/connectors.md, including the catalogue outage and the unreachable bank the sandbox cannot play.
import { ENGINE } from '../support/harness.ts';
import { connectorKit } from '../support/connector-kit/kit.ts';
import { httpBankUnderTest } from '../support/gateway-simulator.ts';

connectorKit(`HTTP bank connector on ${ENGINE}`, () => httpBankUnderTest());
