/**
 * The payout's sender block: who originates the send. Pure checks, independent of HTTP and storage,
 * so the payout body, a customer's stored sender and the program's default sender all go through the
 * same rules. The values arrive straight from JSON, so every type is checked here rather than trusted.
 */
import { ISO_3166_ALPHA3 } from './iso-countries.ts';
import type { FieldError } from './errors.ts';

/** What a caller sends; anything may be missing or of the wrong JSON type. */
export interface SenderInput {
  nationalId?: unknown;
  nationality?: unknown;
  firstName?: unknown;
  lastName?: unknown;
  phone?: unknown;
  email?: unknown;
}

/** A sender that passed every rule, normalised: what the rail receives and what we store. */
export interface Sender {
  nationalId: string;
  /** ISO 3166-1 alpha-3, uppercase; `VEN` when the caller left it out. */
  nationality: string;
  firstName: string;
  lastName: string;
  /** Always `04XXXXXXXXX`, whichever accepted form was sent. */
  phone: string;
  email: string;
}

export type SenderValidation = { ok: true; sender: Sender } | { ok: false; errors: FieldError[] };

const DEFAULT_NATIONALITY = 'VEN';
export const VENEZUELAN_MOBILE_PREFIXES = ['0412', '0414', '0416', '0424', '0426'] as const;
export const NAME_LENGTH_MIN = 2;
export const NAME_LENGTH_MAX = 100;
export const EMAIL_LENGTH_MAX = 254;

const VENEZUELAN_ID = /^[VEJ][0-9]{4,9}$/;
const FOREIGN_ID = /^[A-Za-z0-9]{5,20}$/;

const PREFIX_LIST = VENEZUELAN_MOBILE_PREFIXES.join(', ');
const PHONE_FORMS = `04XXXXXXXXX (e.g. 04141234567), +58 and the number without its leading 0 (e.g. +584141234567), or the number without its leading 0 (e.g. 4141234567)`;

/** People type phones with visual grouping; none of these characters can change the digits. */
const PHONE_SEPARATORS = /[\s\-()]/g;
/** A full national number: trunk 0, then a 3-digit area or mobile code that never starts with 0, then 7 digits. */
const NATIONAL_NUMBER = /^0[1-9][0-9]{9}$/;
/** The same number without its trunk 0, optionally behind the +58 country code. */
const WITHOUT_TRUNK = /^(?:\+58)?([1-9][0-9]{9})$/;

/**
 * Any Venezuelan number in one of the accepted forms, as `0XXXXXXXXXX`, mobile or not. Kept apart
 * from the mobile check so a landline can be told apart from garbage and get its own message.
 */
function toNationalNumber(raw: string): string | null {
  const compact = raw.replace(PHONE_SEPARATORS, '');
  if (NATIONAL_NUMBER.test(compact)) return compact;
  const m = WITHOUT_TRUNK.exec(compact);
  return m?.[1] === undefined ? null : `0${m[1]}`;
}

const isMobilePrefix = (prefix: string): boolean => (VENEZUELAN_MOBILE_PREFIXES as readonly string[]).includes(prefix);

/**
 * `04XXXXXXXXX` for a Venezuelan mobile in any accepted form (`04141234567`, `+584141234567`,
 * `4141234567`, with optional spaces, dashes or parentheses), else null. Landlines and unknown
 * prefixes are null: the rail delivers Pago Móvil notifications to mobiles only.
 * @internal Exported for its tests, not used elsewhere.
 */
export function normalizeVenezuelanMobile(raw: string): string | null {
  if (typeof raw !== 'string') return null;
  const national = toNationalNumber(raw);
  return national !== null && isMobilePrefix(national.slice(0, 4)) ? national : null;
}

// Local part: dot-separated runs of RFC 5322 atext (no quoted strings, which no rail accepts).
const EMAIL_LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const DOMAIN_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const TLD = /^[A-Za-z]{2,63}$/;

/**
 * A practical shape check (local@domain.tld), not full RFC 5322: it is what the rails accept and
 * catches the usual mistakes (missing @ or TLD, spaces, double dots). Split by hand rather than one
 * big regex so no input can make matching slow.
 */
function isEmail(value: string): boolean {
  if (value.length > EMAIL_LENGTH_MAX) return false;
  const at = value.lastIndexOf('@');
  if (at <= 0) return false;
  const local = value.slice(0, at);
  const labels = value.slice(at + 1).split('.');
  const tld = labels[labels.length - 1] ?? '';
  return (
    local.length <= 64 &&
    EMAIL_LOCAL.test(local) &&
    labels.length >= 2 &&
    labels.every((label) => DOMAIN_LABEL.test(label)) &&
    TLD.test(tld)
  );
}

const isAbsent = (value: unknown): boolean => value === undefined || value === null;
const codePoints = (value: string): number => [...value].length;

/** The violations of one sender so far, each field named under the caller's prefix. */
interface SenderCheck {
  readonly input: SenderInput;
  readonly errors: FieldError[];
  fail(name: string, message: string): void;
  /** A string field, trimmed; a missing or non-string one is reported ("is required"/"must be a string" + the format). */
  stringOf(name: keyof SenderInput, format: string): string | undefined;
}

function senderCheck(input: SenderInput, fieldPrefix: string): SenderCheck {
  const errors: FieldError[] = [];
  const fail = (name: string, message: string): void => {
    errors.push({ field: fieldPrefix === '' ? name : `${fieldPrefix}.${name}`, message });
  };
  const stringOf = (name: keyof SenderInput, format: string): string | undefined => {
    const value = input[name];
    if (isAbsent(value)) fail(name, `${name} is required: ${format}`);
    else if (typeof value !== 'string') fail(name, `${name} must be a string: ${format}`);
    else return value.trim();
    return undefined;
  };
  return { input, errors, fail, stringOf };
}

function notAnObject(fieldPrefix: string): SenderValidation {
  return {
    ok: false,
    errors: [
      {
        field: fieldPrefix === '' ? 'sender' : fieldPrefix,
        message:
          'the sender must be an object with nationalId, firstName, lastName, phone, email and optionally nationality, ' +
          'e.g. {"nationalId":"V12345678","firstName":"María","lastName":"Pérez","phone":"04141234567","email":"maria.perez@example.com"}',
      },
    ],
  };
}

/** The sender's nationality (`VEN` when left out); `known` is false when the one given is not a country code. */
function checkNationality(check: SenderCheck): { nationality: string; known: boolean } {
  if (isAbsent(check.input.nationality)) return { nationality: DEFAULT_NATIONALITY, known: true };
  const raw = typeof check.input.nationality === 'string' ? check.input.nationality.trim().toUpperCase() : '';
  if (ISO_3166_ALPHA3.has(raw)) return { nationality: raw, known: true };
  check.fail(
    'nationality',
    `nationality must be an ISO 3166-1 alpha-3 country code, e.g. VEN or COL; leave it out for a Venezuelan sender`,
  );
  return { nationality: DEFAULT_NATIONALITY, known: false };
}

/** The nationalId format the nationality asks for, as the messages state it. */
function nationalIdFormat(nationality: string, known: boolean): string {
  if (!known) {
    return (
      '5 to 20 letters and digits as issued by the country of nationality, or for a Venezuelan sender V, E or J ' +
      'followed by 4 to 9 digits, e.g. AB12345 or V12345678'
    );
  }
  if (nationality === DEFAULT_NATIONALITY) {
    return (
      'V, E or J followed by 4 to 9 digits for a Venezuelan sender (nationality absent or VEN), e.g. V12345678; ' +
      'a foreign sender also sends nationality, e.g. COL'
    );
  }
  return `5 to 20 letters and digits as issued by the country of nationality (${nationality}), e.g. AB12345`;
}

function checkNationalId(
  check: SenderCheck,
  { nationality, known }: { nationality: string; known: boolean },
): string | undefined {
  const format = nationalIdFormat(nationality, known);
  const nationalId = check.stringOf('nationalId', format);
  if (nationalId === undefined) return undefined;
  if (nationality === DEFAULT_NATIONALITY && known) {
    // Exactly as the rail expects it: a lower-case letter is refused, not silently corrected.
    if (!VENEZUELAN_ID.test(nationalId)) check.fail('nationalId', `nationalId must be ${format}`);
  } else if (!FOREIGN_ID.test(nationalId)) {
    // With an invalid nationality the only safe check is the looser (foreign) shape, which every
    // Venezuelan id also has; the nationality error already tells the caller what to fix first.
    check.fail('nationalId', `nationalId must be ${format}`);
  }
  return nationalId;
}

function checkName(check: SenderCheck, key: 'firstName' | 'lastName', example: string): string | undefined {
  const format = `${NAME_LENGTH_MIN} to ${NAME_LENGTH_MAX} characters, e.g. ${example}`;
  const value = check.stringOf(key, format);
  if (value === undefined) return undefined;
  // Counted in characters (code points), as PostgreSQL's char_length counts them.
  const length = codePoints(value);
  if (length < NAME_LENGTH_MIN || length > NAME_LENGTH_MAX) {
    check.fail(key, `${key} must be ${format} (leading and trailing spaces do not count)`);
    return undefined;
  }
  return value;
}

/** The phone as `04XXXXXXXXX`, or null (reported: a landline or unknown prefix gets its own message). */
function checkPhone(check: SenderCheck): string | null {
  const phoneFormat = `a Venezuelan mobile with prefix ${PREFIX_LIST}, written as ${PHONE_FORMS}`;
  const rawPhone = check.stringOf('phone', phoneFormat);
  if (rawPhone === undefined) return null;
  const phone = normalizeVenezuelanMobile(rawPhone);
  if (phone !== null) return phone;
  const national = toNationalNumber(rawPhone);
  // Only the prefix is echoed back: phone numbers are personal data and messages end up in logs.
  if (national !== null) {
    const prefix = national.slice(0, 4);
    const kind = national.startsWith('04') ? 'is not a Venezuelan mobile prefix' : 'is a landline prefix';
    check.fail(
      'phone',
      `phone prefix ${prefix} ${kind}; only mobile prefixes ${VENEZUELAN_MOBILE_PREFIXES.join('/')} are accepted, e.g. 04141234567`,
    );
  } else {
    check.fail('phone', `phone must be ${phoneFormat}`);
  }
  return null;
}

function checkEmail(check: SenderCheck): string | undefined {
  const emailFormat = `an email address (local@domain.tld, at most ${EMAIL_LENGTH_MAX} characters), e.g. maria.perez@example.com`;
  const email = check.stringOf('email', emailFormat);
  if (email !== undefined && !isEmail(email)) check.fail('email', `email must be ${emailFormat}`);
  return email;
}

/**
 * Checks every rule and reports every violation at once; each message names the expected format and
 * gives an example, so one round trip is enough to fix the request. Field names are
 * `${fieldPrefix}.${name}` (just `name` when the prefix is empty). Only `nationality` may be left
 * out (null counts as left out); it decides which `nationalId` format applies.
 */
export function validateSender(input: SenderInput, fieldPrefix = 'sender'): SenderValidation {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return notAnObject(fieldPrefix);
  const check = senderCheck(input, fieldPrefix);
  // nationality first: it selects the nationalId rule. The order below is the order of the errors.
  const nationality = checkNationality(check);
  const nationalId = checkNationalId(check, nationality);
  const firstName = checkName(check, 'firstName', 'María');
  const lastName = checkName(check, 'lastName', 'Pérez');
  const phone = checkPhone(check);
  const email = checkEmail(check);
  if (
    check.errors.length > 0 ||
    nationalId === undefined ||
    firstName === undefined ||
    lastName === undefined ||
    phone === null ||
    email === undefined
  ) {
    return { ok: false, errors: check.errors };
  }
  return { ok: true, sender: { nationalId, nationality: nationality.nationality, firstName, lastName, phone, email } };
}
