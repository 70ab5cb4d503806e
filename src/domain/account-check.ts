/**
 * The check digits of a 20-digit Venezuelan account number, `EEEE OOOO DD CCCCCCCCCC` (entity =
 * bank code, office, two check digits, account). Pure: it says whether the digits agree, it does not
 * refuse anything.
 *
 * The first check digit covers the 8 digits of entity + office (weights 3, 2, 7, 6, 5, 4, 3, 2); the
 * second the 14 digits of office + account (weights 3, 2, 7, 6, 5, 4, 3, 2, 7, 6, 5, 4, 3, 2). For
 * each, with S the weighted sum, the digit is 11 − (S mod 11), written 0 for 10 and 1 for 11.
 *
 * What it catches: a change of one digit moves the remainder of every sum that covers it (no weight
 * is a multiple of 11), and the digit tells remainders apart except 0 and 10, which both write 1. So
 * a single-digit change is always caught unless every check digit covering it is 1 and the change
 * moves its remainder between 0 and 10 (test/unit/account-check.test.ts).
 */

export const ACCOUNT_CHECKS = ['valid', 'invalid_check_digits', 'not_checked'] as const;
type AccountCheck = (typeof ACCOUNT_CHECKS)[number];

const ENTITY_OFFICE_WEIGHTS = [3, 2, 7, 6, 5, 4, 3, 2] as const;
const OFFICE_ACCOUNT_WEIGHTS = [3, 2, 7, 6, 5, 4, 3, 2, 7, 6, 5, 4, 3, 2] as const;
const TWENTY_DIGITS = /^[0-9]{20}$/;

function checkDigit(digits: string, weights: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < weights.length; i += 1) sum += Number(digits[i]) * (weights[i] ?? 0);
  const digit = 11 - (sum % 11);
  if (digit === 10) return 0;
  if (digit === 11) return 1;
  return digit;
}

/**
 * `not_checked` without an account number (a Pago Móvil beneficiary) or with one that is not
 * 20 digits (the 16 to 19 digit forms carry no check digits we know).
 */
export function checkAccountNumber(accountNumber: string | null | undefined): AccountCheck {
  if (accountNumber === null || accountNumber === undefined || !TWENTY_DIGITS.test(accountNumber)) return 'not_checked';
  const first = checkDigit(accountNumber.slice(0, 8), ENTITY_OFFICE_WEIGHTS);
  const second = checkDigit(accountNumber.slice(4, 8) + accountNumber.slice(10, 20), OFFICE_ACCOUNT_WEIGHTS);
  return accountNumber[8] === String(first) && accountNumber[9] === String(second) ? 'valid' : 'invalid_check_digits';
}

/**
 * The check digit of a RIF (a company's or a government body's tax id, `J` or `G` followed by 9
 * digits): the letter's value (V 1, E 2, J 3, P 4, G 5) then the first 8 digits, weighted 4, 3, 2, 7,
 * 6, 5, 4, 3, 2; with S the weighted sum, the digit is 11 − (S mod 11), written 0 for 10 and 11.
 * Pure, like the account check: it refuses nothing.
 */
export const NATIONAL_ID_CHECKS = ['valid', 'invalid_check_digit', 'not_checked'] as const;
type NationalIdCheck = (typeof NATIONAL_ID_CHECKS)[number];

const RIF_LETTER_VALUES: Readonly<Record<string, number>> = { V: 1, E: 2, J: 3, P: 4, G: 5 };
const RIF_WEIGHTS = [4, 3, 2, 7, 6, 5, 4, 3, 2] as const;
const RIF = /^[JG][0-9]{9}$/;

/** `not_checked` for anything but a RIF: a person's cédula (V, E) and a passport (P) carry no check digit. */
export function checkRif(nationalId: string | null | undefined): NationalIdCheck {
  if (nationalId === null || nationalId === undefined || !RIF.test(nationalId)) return 'not_checked';
  const values = [RIF_LETTER_VALUES[nationalId[0]!]!, ...Array.from(nationalId.slice(1, 9), Number)];
  let sum = 0;
  for (let i = 0; i < RIF_WEIGHTS.length; i += 1) sum += values[i]! * RIF_WEIGHTS[i]!;
  const digit = 11 - (sum % 11);
  return nationalId[9] === String(digit >= 10 ? 0 : digit) ? 'valid' : 'invalid_check_digit';
}
