// The clock tests move by hand (quote expiry, Caracas midnight, backoff).
import type { Clock } from '../../src/domain/clock.ts';

/** A clock that tests move by hand. */
export class ManualClock implements Clock {
  private ms: number;
  constructor(start: Date | string = new Date()) {
    this.ms = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.ms);
  }
  set(to: Date | string): void {
    this.ms = new Date(to).getTime();
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}
