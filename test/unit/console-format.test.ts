// The console's money and time formatting: BigInt only, exact at any size.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatMinor, formatTimes, jsonWithIntegers, parseMajor } from '../../console/format.ts';

describe('console formatting', () => {
  it('shows minor-unit strings as bolivares with two decimals, exactly, past the float range', () => {
    assert.equal(formatMinor('0'), '0.00 Bs');
    assert.equal(formatMinor('5'), '0.05 Bs');
    assert.equal(formatMinor('5000000'), '50,000.00 Bs');
    assert.equal(formatMinor('-1010000'), '-10,100.00 Bs');
    assert.equal(formatMinor('9223372036854775807'), '92,233,720,368,547,758.07 Bs');
    assert.equal(formatMinor('1234567', 'USDC'), '1.234567 USDC');
    assert.equal(formatMinor(null), '—');
    assert.equal(formatMinor('n/a'), 'n/a');
  });

  it('reads what an operator types into minor units, refusing more decimals than the asset has', () => {
    assert.equal(parseMajor('500'), 50000n);
    assert.equal(parseMajor('500.5'), 50050n);
    assert.equal(parseMajor(' 50,000.00 '), 5000000n);
    assert.equal(parseMajor('90071992547409.93'), 9007199254740993n);
    for (const bad of ['', '1.234', '1,23', '-5', '1e3', '0x10', '5.']) assert.equal(parseMajor(bad), undefined, bad);
  });

  it('writes bigint amounts as JSON integers digit for digit', () => {
    assert.equal(
      jsonWithIntegers({ deliver: { asset: 'BS', amount: 9007199254740993n } }),
      '{"deliver":{"asset":"BS","amount":9007199254740993}}',
    );
  });

  it('shows a moment in Caracas (UTC-4) and in UTC', () => {
    assert.deepEqual(formatTimes('2026-11-23T02:30:05.123Z'), {
      caracas: '2026-11-22 22:30:05',
      utc: '2026-11-23 02:30:05',
    });
    assert.equal(formatTimes(null), undefined);
    assert.equal(formatTimes('not a date'), undefined);
  });
});
