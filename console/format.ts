// Money and time as the console shows them. Amounts arrive as minor-unit strings and are shown with
// BigInt arithmetic only (a float would round large amounts); what is sent back is minor units too.

/** Decimals of each asset's minor unit. */
const DECIMALS: Record<string, number> = { BS: 2, USD: 2, USDC: 6, VESC: 2 };

const INTEGER = /^-?[0-9]+$/;

/** "123456789" BS → "1,234,567.89 Bs"; anything that is not an integer string is shown as it came. */
export function formatMinor(minor: string | null | undefined, asset = 'BS'): string {
  if (minor === null || minor === undefined) return '—';
  if (!INTEGER.test(minor)) return minor;
  const decimals = DECIMALS[asset] ?? 2;
  const value = BigInt(minor);
  const negative = value < 0n;
  const magnitude = negative ? -value : value;
  const scale = 10n ** BigInt(decimals);
  const whole = (magnitude / scale).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const fraction = decimals > 0 ? `.${(magnitude % scale).toString().padStart(decimals, '0')}` : '';
  return `${negative ? '-' : ''}${whole}${fraction} ${asset === 'BS' ? 'Bs' : asset}`;
}

/**
 * What an operator types ("50,000.00", "1500", "0.5") → minor units, or undefined when it is not an
 * amount with at most the asset's decimals. Commas are thousands separators.
 */
export function parseMajor(text: string, asset = 'BS'): bigint | undefined {
  const decimals = DECIMALS[asset] ?? 2;
  const match = /^([0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.([0-9]+))?$/.exec(text.trim());
  if (!match) return undefined;
  const fraction = match[2] ?? '';
  if (fraction.length > decimals) return undefined;
  return BigInt(match[1]!.replace(/,/g, '')) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0');
}

/** A count or a duration as the console shows integers: 1234567 → "1,234,567"; null → "—". */
export function formatCount(value: number | string | null | undefined): string {
  if (value === null || value === undefined) return '—';
  const text = String(value);
  return INTEGER.test(text) ? text.replace(/\B(?=(\d{3})+(?!\d))/g, ',') : text;
}

const CARACAS = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'America/Caracas',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
});

/** An ISO timestamp as wall-clock time in Caracas and in UTC: "2026-11-23 15:50:43", "2026-11-23 19:50:43". */
export function formatTimes(iso: string | null | undefined): { caracas: string; utc: string } | undefined {
  if (!iso) return undefined;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return undefined;
  const part = Object.fromEntries(CARACAS.formatToParts(date).map((p) => [p.type, p.value]));
  return {
    caracas: `${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute}:${part.second}`,
    utc: date.toISOString().slice(0, 19).replace('T', ' '),
  };
}

/**
 * JSON text of a request body whose bigint values become JSON integers, digit for digit (the API
 * takes amounts as integers; a bigint never passes through a float on the way).
 */
export function jsonWithIntegers(value: unknown): string {
  const marked = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `\u0000int:${v.toString()}` : v));
  return marked.replace(/"\\u0000int:(-?[0-9]+)"/g, '$1');
}
