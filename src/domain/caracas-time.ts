// Every "day" and "month" of the product (limits, statement filters, daily close) is a calendar
// day in America/Caracas; timestamps stay UTC. Venezuela has no DST now, but the offset is read
// from the time-zone database rather than hard-coded, as it changed in 2007 and 2016.

const BUSINESS_TIME_ZONE = 'America/Caracas';

const dateFormat = new Intl.DateTimeFormat('en-CA', {
  timeZone: BUSINESS_TIME_ZONE,
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
});

/** The Caracas calendar date of an instant, as YYYY-MM-DD. */
export function businessDate(at: Date): string {
  return dateFormat.format(at);
}

const offsetFormat = new Intl.DateTimeFormat('en-US', { timeZone: BUSINESS_TIME_ZONE, timeZoneName: 'longOffset' });

/** Minutes east of UTC in Caracas at an instant (−240 today). */
function offsetMinutes(at: Date): number {
  const name = offsetFormat.formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT';
  const match = /GMT([+-])(\d{2}):?(\d{2})?/.exec(name);
  if (!match) return 0;
  const minutes = Number(match[2]) * 60 + Number(match[3] ?? 0);
  return match[1] === '-' ? -minutes : minutes;
}

/** The UTC instant at which a Caracas calendar date (YYYY-MM-DD) begins. */
export function startOfBusinessDate(date: string): Date {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const utcMidnight = Date.UTC(y, m - 1, d);
  // Caracas midnight is UTC midnight minus the offset; re-check the offset at that instant.
  const guess = new Date(utcMidnight - offsetMinutes(new Date(utcMidnight)) * 60_000);
  return new Date(utcMidnight - offsetMinutes(guess) * 60_000);
}

/** The date after a YYYY-MM-DD date. */
export function nextDate(date: string): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(y, m - 1, d + 1)).toISOString().slice(0, 10);
}

/** The date before a YYYY-MM-DD date. */
export function previousDate(date: string): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(y, m - 1, d - 1)).toISOString().slice(0, 10);
}

/** Minutes since Caracas midnight at an instant. */
export function minutesIntoBusinessDate(at: Date): number {
  return Math.floor((at.getTime() - startOfBusinessDate(businessDate(at)).getTime()) / 60_000);
}

export function isValidDate(date: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return false;
  const parsed = new Date(`${date}T00:00:00Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === date;
}
