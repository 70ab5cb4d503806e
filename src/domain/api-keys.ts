import { createHash, randomBytes } from 'node:crypto';
import type { Mode } from './partition.ts';

/** The eight scopes a customer key can hold. */
export const CUSTOMER_SCOPES = [
  'quotes:write',
  'beneficiaries:read',
  'beneficiaries:write',
  'payments:read',
  'payments:write',
  'treasury:read',
  'events:read',
  'events:write',
] as const;
export const PLATFORM_SCOPE = 'platform:admin';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_RANDOM_CHARS = 40;

export type KeyKind = Mode | 'platform';

/** `bsk_<kind>_` + 40 base62 characters (≈238 bits), drawn without modulo bias. */
export function generateApiKey(kind: KeyKind): string {
  let out = '';
  while (out.length < KEY_RANDOM_CHARS) {
    for (const byte of randomBytes(64)) {
      if (byte < 248 && out.length < KEY_RANDOM_CHARS) out += BASE62[byte % 62];
    }
  }
  return `bsk_${kind}_${out}`;
}

const API_KEY_PATTERN = /^bsk_(test|live|platform)_[0-9A-Za-z]{32,}$/;

/** Longer input is refused without hashing it: no real key comes close. */
const KEY_LENGTH_MAX = 200;

/** Could be a key of ours: anything else is refused without a database lookup. */
export function isWellFormedKey(key: string): boolean {
  return key.length <= KEY_LENGTH_MAX && API_KEY_PATTERN.test(key);
}

/**
 * Keys carry ~238 bits of randomness, so a plain SHA-256 is enough: there is nothing to brute-force
 * that a slow hash would protect, and the lookup stays cheap.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function keyPrefix(key: string): string {
  return key.slice(0, key.lastIndexOf('_') + 1);
}

export function keyLast4(key: string): string {
  return key.slice(-4);
}
