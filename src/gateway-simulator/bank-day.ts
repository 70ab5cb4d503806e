// The simulated bank's own calendar: its statement days are Caracas days, as a Venezuelan bank's are.
// Its own code, like every other part of the simulator: it stands for a bank, not for our service.

const bankDayFormat = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'America/Caracas',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
});

/** The bank's calendar day of an instant, YYYY-MM-DD. */
export function bankDayOf(at: Date): string {
  return bankDayFormat.format(at);
}

/** A real calendar day written YYYY-MM-DD. */
export function isBankDay(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const parsed = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === text;
}
