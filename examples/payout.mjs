// A complete payout with @bolivar/sdk: quote, beneficiary, payout, then its outcome. While the
// service runs:  BOLIVAR_API_KEY=bsk_test_… BOLIVAR_BASE_URL=http://localhost:3000 node examples/payout.mjs
import { Bolivar, BolivarError } from '@bolivar/sdk';

const client = new Bolivar({
  apiKey: process.env.BOLIVAR_API_KEY ?? '',
  baseUrl: process.env.BOLIVAR_BASE_URL ?? 'http://localhost:3000',
});
const orderId = `order-${Date.now()}`;
const OUTCOMES = ['settled', 'failed', 'returned', 'reversed'];
const POLL_MS = 1000;
const POLLS_MAX = 60;

try {
  // What María receives: 50,000.00 Bs (integer minor units; a bigint, number or digit string).
  const quote = await client.quotes.create({
    deliver: { asset: 'BS', amount: 5_000_000n },
    metadata: { order_id: orderId },
  });
  console.log(
    `quote ${quote.id}: deliver ${quote.deliver.amount}, fee ${quote.fee.amount}, you pay ${quote.spend.amount} (${quote.spend.asset} minor units)`,
  );

  const beneficiary = await client.beneficiaries.create({
    fullName: 'María Pérez',
    nationalId: 'V12345678',
    bankCode: '0102',
    phone: '04141234567',
  });
  console.log(`beneficiary ${beneficiary.id} (${beneficiary.created ? 'registered' : 'already registered'})`);

  // Your order id as the Idempotency-Key: running this again for the same order can never pay twice.
  const payout = await client.payouts.create(
    {
      quoteId: quote.id,
      method: 'pago_movil',
      beneficiaryId: beneficiary.id,
      sender: {
        nationalId: 'V11222333',
        firstName: 'Ana',
        lastName: 'Rojas',
        phone: '+584121234567',
        email: 'ana@example.com',
      },
      metadata: { order_id: orderId },
    },
    { idempotencyKey: `payout-${orderId}` },
  );
  console.log(`payout ${payout.id}: ${payout.status}`);

  // The outcome arrives by webhook (see receiver.mjs); here we simply read the payment until it is final.
  let payment = await client.payments.get(payout.id);
  for (let polls = 0; !OUTCOMES.includes(payment.status) && polls < POLLS_MAX; polls += 1) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    payment = await client.payments.get(payout.id);
  }
  console.log(
    `payment ${payment.id}: ${payment.status}${payment.bank_reference ? `, bank reference ${payment.bank_reference}` : ''}${payment.status_reason ? ` (${payment.status_reason})` : ''}`,
  );

  // The statement finds the order by its metadata.
  for await (const row of client.payments.list({ metadata_key: 'order_id', metadata_value: orderId }))
    console.log(`statement: ${row.id} ${row.status} ${row.payout_amount} BS`);
  if (!OUTCOMES.includes(payment.status)) process.exitCode = 2;
} catch (error) {
  if (!(error instanceof BolivarError)) throw error;
  console.error(`${error.status} ${error.code}: ${error.message} (request ${error.requestId})`);
  process.exitCode = 1;
}
