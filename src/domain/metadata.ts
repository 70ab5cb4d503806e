// The integrator's own key-value pairs on quotes, beneficiaries and payouts (Stripe's rules): kept
// and returned as sent, never read by the service. Absent metadata is the empty object everywhere,
// so a reader never has to tell "none" from "empty".

/** At most this many keys. */
export const METADATA_KEYS_MAX = 50;
/** Keys are 1 to this many characters (Unicode code points, as every length of the API). */
export const METADATA_KEY_LENGTH_MAX = 40;
/** Values are strings of at most this many characters. */
export const METADATA_VALUE_LENGTH_MAX = 500;

export type Metadata = Readonly<Record<string, string>>;

export const NO_METADATA: Metadata = Object.freeze({});
