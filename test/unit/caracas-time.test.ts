import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  businessDate,
  minutesIntoBusinessDate,
  nextDate,
  previousDate,
  startOfBusinessDate,
} from '../../src/domain/caracas-time.ts';

describe('Caracas business days', () => {
  it('a day starts at Caracas midnight (04:00 UTC), not at UTC midnight', () => {
    assert.equal(businessDate(new Date('2026-12-03T03:59:59.999Z')), '2026-12-02');
    assert.equal(businessDate(new Date('2026-12-03T04:00:00.000Z')), '2026-12-03');
    assert.equal(startOfBusinessDate('2026-12-03').toISOString(), '2026-12-03T04:00:00.000Z');
  });

  it('the day before and after cross months and leap days', () => {
    assert.equal(previousDate('2026-03-01'), '2026-02-28');
    assert.equal(previousDate('2028-03-01'), '2028-02-29');
    assert.equal(previousDate('2027-01-01'), '2026-12-31');
    assert.equal(nextDate(previousDate('2026-12-03')), '2026-12-03');
  });

  it('minutes into the day count from Caracas midnight', () => {
    assert.equal(minutesIntoBusinessDate(new Date('2026-12-03T04:00:00.000Z')), 0);
    assert.equal(minutesIntoBusinessDate(new Date('2026-12-03T10:00:59.000Z')), 6 * 60);
    assert.equal(minutesIntoBusinessDate(new Date('2026-12-04T03:59:00.000Z')), 24 * 60 - 1);
  });
});
