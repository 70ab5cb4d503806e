/**
 * Beneficiary rules, independent of HTTP and storage so that the
 * registration endpoint and the inline beneficiary of a payout apply exactly the same checks.
 */
import type { FieldError } from './errors.ts';
import type { Metadata } from './metadata.ts';
import { ASSET_DECIMALS, type Asset } from './money.ts';
import type { Instrument } from './instrument.ts';

export const BENEFICIARY_STATUSES = ['active', 'blocked'] as const;
export type BeneficiaryStatus = (typeof BENEFICIARY_STATUSES)[number];

const ASSETS = Object.keys(ASSET_DECIMALS) as Asset[];

export const FULL_NAME_LENGTH_MAX = 100;
const DEFAULT_ASSET: Asset = 'BS';
const DEFAULT_COUNTRY = 'VE';

const NATIONAL_ID = /^[VEJGP][0-9]{6,9}$/;
const BANK_CODE = /^[0-9]{4}$/;
const ACCOUNT_NUMBER = /^[0-9]{16,20}$/;
const PHONE = /^04[0-9]{9}$/;
const COUNTRY = /^[A-Z]{2}$/;

/** What a caller sends; the HTTP schema (or the payout's) has already checked the JSON types. */
export interface BeneficiaryInput {
  fullName: string;
  nationalId: string;
  bankCode: string;
  accountNumber?: string | null;
  phone?: string | null;
  asset?: string;
  country?: string;
  metadata?: Metadata;
}

/** A beneficiary that passed every rule: normalised, defaults applied, instrument derived. */
export interface BeneficiaryDetails {
  fullName: string;
  nationalId: string;
  bankCode: string;
  accountNumber: string | null;
  phone: string | null;
  asset: Asset;
  country: string;
  instrument: Instrument;
  /** Replaces the stored metadata when given; absent, a registered beneficiary keeps its own. */
  metadata?: Metadata;
}

/** The bank codes each instrument reaches, read from the rail's catalogue by the caller. */
export type BankCodes = Readonly<Record<Instrument, ReadonlySet<string>>>;

export type BeneficiaryValidation = { ok: true; beneficiary: BeneficiaryDetails } | { ok: false; errors: FieldError[] };

/** An account number means a bank transfer; without one the only way to pay is Pago Móvil. */
function deriveInstrument(accountNumber: string | null | undefined): Instrument {
  return accountNumber === null || accountNumber === undefined ? 'pago_movil' : 'transferencia';
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value.trim() : undefined);

type Fail = (field: string, message: string) => void;

/** Only a well-formed code is looked up, in the catalogue of the instrument the account number implies. */
function checkBankCode(
  bankCode: string,
  wellFormed: boolean,
  instrument: Instrument,
  bankCodes: BankCodes,
  fail: Fail,
): void {
  if (!wellFormed) {
    fail('bankCode', 'bankCode must be 4 digits, e.g. 0102');
  } else if (!bankCodes[instrument].has(bankCode)) {
    fail(
      'bankCode',
      `bankCode ${bankCode} is not in the ${instrument} catalogue; call GET /v1/payouts/banks?method=${instrument} for the valid codes` +
        (instrument === 'transferencia' ? ' (the instrument is transferencia because accountNumber is given)' : ''),
    );
  }
}

/** An account number carries its bank's code in front; compared only when that code is well formed. */
function checkAccountNumber(accountNumber: string, bankCode: string, bankCodeWellFormed: boolean, fail: Fail): void {
  if (!ACCOUNT_NUMBER.test(accountNumber)) {
    fail('accountNumber', 'accountNumber must be 16 to 20 digits with no spaces or dashes, e.g. 01020123450123456789');
  } else if (bankCodeWellFormed && !accountNumber.startsWith(bankCode)) {
    fail('accountNumber', `accountNumber must start with the bankCode (${bankCode})`);
  }
}

/**
 * Checks every rule and reports every violation at once, each message naming the format to send.
 * The catalogue check uses the derived instrument's list, and only runs on a well-formed code.
 * Callers validating a nested beneficiary prefix the field names themselves.
 */
export function validateBeneficiary(input: BeneficiaryInput, bankCodes: BankCodes): BeneficiaryValidation {
  const errors: FieldError[] = [];
  const fail = (field: string, message: string) => errors.push({ field, message });

  const fullName = text(input.fullName) ?? '';
  // Counted in characters (code points), as PostgreSQL's char_length counts them.
  if (fullName === '')
    fail('fullName', "fullName is required: the holder's name exactly as the destination bank holds it");
  else if ([...fullName].length > FULL_NAME_LENGTH_MAX)
    fail('fullName', `fullName must be at most ${FULL_NAME_LENGTH_MAX} characters`);

  // Exactly as the rail expects it: a lower-case letter is refused, not silently corrected.
  const nationalId = text(input.nationalId) ?? '';
  if (!NATIONAL_ID.test(nationalId)) {
    fail('nationalId', 'nationalId must be V, E, J, G or P followed by 6 to 9 digits, e.g. V12345678');
  }

  const accountNumber =
    input.accountNumber === null || input.accountNumber === undefined ? null : (text(input.accountNumber) ?? '');
  const instrument = deriveInstrument(accountNumber);

  const bankCode = text(input.bankCode) ?? '';
  const bankCodeWellFormed = BANK_CODE.test(bankCode);
  checkBankCode(bankCode, bankCodeWellFormed, instrument, bankCodes, fail);
  if (accountNumber !== null) checkAccountNumber(accountNumber, bankCode, bankCodeWellFormed, fail);

  const phone = input.phone === null || input.phone === undefined ? null : (text(input.phone) ?? '');
  if (phone !== null && !PHONE.test(phone)) {
    fail('phone', 'phone must be 04 followed by 9 digits, e.g. 04141234567');
  }

  const asset = input.asset === undefined ? DEFAULT_ASSET : input.asset;
  if (!(ASSETS as string[]).includes(asset))
    fail('asset', `asset must be one of ${ASSETS.join(', ')} (default ${DEFAULT_ASSET})`);

  const country = input.country === undefined ? DEFAULT_COUNTRY : (text(input.country) ?? '');
  if (!COUNTRY.test(country))
    fail('country', `country must be 2 uppercase letters (ISO 3166-1 alpha-2), e.g. ${DEFAULT_COUNTRY}`);

  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    beneficiary: {
      fullName,
      nationalId,
      bankCode,
      accountNumber,
      phone,
      asset: asset as Asset,
      country,
      instrument,
      ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
    },
  };
}
