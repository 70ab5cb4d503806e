// The two ways a payout reaches a bank account: Pago Móvil (by phone) and an interbank transfer
// (by 20-digit account number).

export const INSTRUMENTS = ['pago_movil', 'transferencia'] as const;
export type Instrument = (typeof INSTRUMENTS)[number];
