// Payroll: a CSV file of payouts, read and checked row by row in the browser before anything is
// sent; submitted as payout batches of at most 1,000 items, each under an Idempotency-Key derived
// from a key made once per upload (so pressing Submit again after a lost answer pays nothing twice);
// then each batch followed until every payment is final.
import { useState } from 'preact/hooks';
import { ApiFailure, apiPath, saveFile, type Api } from '../api.ts';
import { formatMinor } from '../format.ts';
import {
  batchesOf,
  batchKey,
  PAYROLL_TEMPLATE,
  problemsOfFields,
  readPayroll,
  type PayrollRow,
  type PayrollSheet,
} from '../payroll.ts';
import { ConfirmButton, ErrorNote, Link, ScreenTitle } from '../ui.tsx';
import { BatchProgress, type PayoutBatch } from './batches.tsx';

/** PAYOUT_BATCH_MAX_ITEMS's default; a service configured lower says so (payout_batch_too_large) and the upload is split again. */
const BATCH_ITEMS = 1000;
/** 4 KiB an item is what the batch route takes; a file past this is not a payroll. */
const FILE_BYTES_MAX = 20 * 1024 * 1024;

interface Upload {
  fileName: string;
  /** Made once per upload: the batches' Idempotency-Keys derive from it. */
  key: string;
  sheet: PayrollSheet;
  batchSize: number;
  /** The service's 400 on a batch, by row; and what named no row. */
  serverProblems: Map<number, string[]>;
  serverOther: string[];
  /** The answer of each batch sent, by batch number. */
  sent: Array<PayoutBatch | undefined>;
}

async function readUpload(file: File): Promise<Upload> {
  const fresh = (sheet: PayrollSheet): Upload => ({
    fileName: file.name,
    key: crypto.randomUUID(),
    sheet,
    batchSize: BATCH_ITEMS,
    serverProblems: new Map(),
    serverOther: [],
    sent: [],
  });
  if (file.size > FILE_BYTES_MAX)
    return fresh({
      rows: [],
      fileProblem: `The file has ${file.size} bytes: more than a payroll file of this console (${FILE_BYTES_MAX}).`,
    });
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(await file.arrayBuffer());
  } catch {
    return fresh({ rows: [], fileProblem: 'The file is not UTF-8 text: save it as "CSV UTF-8".' });
  }
  return fresh(readPayroll(text));
}

const problemsOf = (upload: Upload, row: PayrollRow) => [
  ...row.problems,
  ...(upload.serverProblems.get(row.row) ?? []),
];

function Summary({ upload }: { upload: Upload }) {
  const { rows } = upload.sheet;
  const invalid = rows.filter((row) => problemsOf(upload, row).length > 0).length;
  const total = rows.reduce((sum, row) => sum + (row.amount ?? 0n), 0n);
  const batches = Math.ceil(rows.length / upload.batchSize);
  return (
    <dl class="facts">
      <dt>File</dt>
      <dd>{upload.fileName}</dd>
      <dt>Rows</dt>
      <dd>{rows.length}</dd>
      <dt>Valid</dt>
      <dd>{rows.length - invalid}</dd>
      <dt>With problems</dt>
      <dd>{invalid}</dd>
      <dt>Total amount</dt>
      <dd>
        {formatMinor(total.toString())}
        {rows.some((row) => row.amount === undefined) ? <span class="muted"> (rows whose amount is valid)</span> : null}
      </dd>
      <dt>Batches</dt>
      <dd>
        {batches} of at most {upload.batchSize} payouts
      </dd>
    </dl>
  );
}

function beneficiaryText(row: PayrollRow): string {
  const v = row.values;
  if (v.beneficiary_id !== '') return v.beneficiary_id;
  return (
    [v.full_name, v.national_id, v.bank_code, v.phone, v.account_number].filter((s) => s !== '').join(' · ') || '—'
  );
}

function PreviewTable({ upload, onlyProblems }: { upload: Upload; onlyProblems: boolean }) {
  const rows = upload.sheet.rows.filter((row) => !onlyProblems || problemsOf(upload, row).length > 0);
  return (
    <table aria-label="Payroll preview">
      <thead>
        <tr>
          <th scope="col">Row</th>
          <th scope="col">Reference</th>
          <th scope="col" class="num">
            Amount
          </th>
          <th scope="col">Method</th>
          <th scope="col">Beneficiary</th>
          <th scope="col">Sender</th>
          <th scope="col">Check</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => {
          const problems = problemsOf(upload, row);
          return (
            <tr key={row.row} class={problems.length > 0 ? 'invalid' : undefined}>
              <th scope="row" class="num">
                {row.row}
              </th>
              <td class="mono">{row.values.reference || '—'}</td>
              <td class="num">
                {row.amount !== undefined ? formatMinor(row.amount.toString()) : row.values.amount || '—'}
              </td>
              <td>{row.values.method || '—'}</td>
              <td>{beneficiaryText(row)}</td>
              <td>
                {row.values.sender_national_id !== ''
                  ? `${row.values.sender_first_name} ${row.values.sender_last_name} ${row.values.sender_national_id}`
                  : 'stored sender'}
              </td>
              <td>
                {problems.length === 0 ? (
                  <span class="status status-settled">ok</span>
                ) : (
                  <ul class="problems">
                    {problems.map((problem) => (
                      <li key={problem}>{problem}</li>
                    ))}
                  </ul>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/**
 * Sends the batches not yet answered, in order, each with its key. Returns the upload as it stands
 * after: the answers kept, or the rows a 400 named. Throws what should be shown (and retried).
 */
async function submitBatches(
  api: Api,
  start: Upload,
  onProgress: (upload: Upload, note: string) => void,
): Promise<Upload> {
  let upload = start;
  const rows = upload.sheet.rows;
  const chunks = batchesOf(rows, upload.batchSize);
  for (const [n, chunk] of chunks.entries()) {
    if (upload.sent[n]) continue;
    onProgress(upload, `Sending batch ${n + 1} of ${chunks.length}…`);
    try {
      const batch = await api.post<PayoutBatch>(
        apiPath`/v1/payout-batches`,
        { items: chunk.map((row) => row.item!) },
        { 'idempotency-key': batchKey(upload.key, n) },
      );
      const sent = [...upload.sent];
      sent[n] = batch;
      upload = { ...upload, sent };
      onProgress(upload, `Batch ${n + 1} of ${chunks.length} recorded.`);
    } catch (failure) {
      if (!(failure instanceof ApiFailure)) throw failure;
      const maxItems = Number(failure.meta.maxItems);
      // Nothing was written and nothing sent yet: split again at the service's bound, under a new key.
      if (
        failure.code === 'payout_batch_too_large' &&
        upload.sent.length === 0 &&
        maxItems > 0 &&
        maxItems < upload.batchSize
      ) {
        return submitBatches(api, { ...upload, batchSize: maxItems, key: crypto.randomUUID() }, onProgress);
      }
      if (failure.code === 'validation_failed' && Array.isArray(failure.meta.errors)) {
        const { byRow, other } = problemsOfFields(
          failure.meta.errors as Array<{ field: string; message: string }>,
          chunk.map((row) => row.row),
        );
        upload = { ...upload, serverProblems: byRow, serverOther: other };
        onProgress(upload, '');
      }
      throw failure;
    }
  }
  return upload;
}

function Template() {
  return (
    <details class="template">
      <summary>CSV template and columns</summary>
      <p>
        UTF-8, comma-separated, a header row naming the columns (any order; reference, amount and method are required).
        amount is in bolivares with at most two decimals and no thousands separator (1500.50). Give either
        beneficiary_id (a registered beneficiary) or full_name, national_id and bank_code (with phone and, for
        transferencia, account_number). The five sender columns go together: all or none (none: the stored sender).
      </p>
      <pre class="json">{PAYROLL_TEMPLATE}</pre>
      <button
        type="button"
        onClick={() =>
          saveFile(new Blob([PAYROLL_TEMPLATE], { type: 'text/csv;charset=utf-8' }), 'payroll-template.csv')
        }
      >
        Download template
      </button>
    </details>
  );
}

function FileInput({
  onUpload,
  onError,
}: {
  onUpload: (upload: Upload | undefined) => void;
  onError: (error: unknown) => void;
}) {
  const [reading, setReading] = useState(false);
  return (
    <div class="upload">
      <label for="payroll-file">Payroll file (CSV)</label>
      <input
        id="payroll-file"
        type="file"
        accept=".csv,text/csv"
        disabled={reading}
        onChange={async (event) => {
          const file = event.currentTarget.files?.[0];
          if (!file) return;
          setReading(true);
          onUpload(undefined);
          try {
            onUpload(await readUpload(file));
          } catch (failure) {
            onError(failure);
          } finally {
            setReading(false);
          }
        }}
      />
    </div>
  );
}

/** Where the upload stands, in one sentence: announced (a live region) as it changes. */
function statusLine(upload: Upload | undefined, note: string): string {
  if (!upload) return note;
  if (upload.sheet.fileProblem) return `${upload.fileName} cannot be read.`;
  const rows = upload.sheet.rows;
  const invalid = rows.filter((row) => problemsOf(upload, row).length > 0).length;
  return `${upload.fileName}: ${rows.length} rows, ${rows.length - invalid} valid, ${invalid} with problems. ${note}`.trim();
}

function SubmitBar({
  upload,
  onSubmit,
  onlyProblems,
  setOnlyProblems,
}: {
  upload: Upload;
  onSubmit: () => Promise<void>;
  onlyProblems: boolean;
  setOnlyProblems: (only: boolean) => void;
}) {
  const rows = upload.sheet.rows;
  const invalid = rows.filter((row) => problemsOf(upload, row).length > 0).length;
  const batches = Math.ceil(rows.length / upload.batchSize);
  const allSent = rows.length > 0 && upload.sent.filter(Boolean).length === batches;
  const total = rows.reduce((sum, row) => sum + (row.amount ?? 0n), 0n);
  return (
    <div class="actions">
      <ConfirmButton
        label={allSent ? 'Submitted' : `Submit ${rows.length} payouts`}
        title={`Pay ${rows.length} payouts?`}
        confirmLabel="Pay now"
        disabled={rows.length === 0 || invalid > 0 || allSent}
        onConfirm={onSubmit}
      >
        <p>
          {rows.length} payouts, {formatMinor(total.toString())} delivered in total (fees on top), in {batches} batch
          {batches === 1 ? '' : 'es'}. In live mode this moves real money.
        </p>
      </ConfirmButton>
      {invalid > 0 ? (
        <span class="muted">
          Fix the rows with problems in the file and upload it again: nothing is sent while one is left.
        </span>
      ) : null}
      <label class="inline">
        <input type="checkbox" checked={onlyProblems} onChange={(e) => setOnlyProblems(e.currentTarget.checked)} /> Show
        only rows with problems
      </label>
    </div>
  );
}

/** What stops the upload as a whole: an unreadable file, a failed request, problems found outside any row. */
function UploadProblems({ upload, error }: { upload: Upload | undefined; error: unknown }) {
  return (
    <>
      {upload?.sheet.fileProblem ? (
        <p class="error" role="alert">
          {upload.sheet.fileProblem}
        </p>
      ) : null}
      <ErrorNote error={error} />
      {upload && upload.serverOther.length > 0 ? (
        <ul class="error">
          {upload.serverOther.map((problem) => (
            <li key={problem}>{problem}</li>
          ))}
        </ul>
      ) : null}
    </>
  );
}

export function PayrollScreen({ api }: { api: Api }) {
  const [upload, setUpload] = useState<Upload | undefined>(undefined);
  const [onlyProblems, setOnlyProblems] = useState(false);
  const [note, setNote] = useState('');
  const [error, setError] = useState<unknown>(undefined);

  const submit = async () => {
    if (!upload) return;
    setError(undefined);
    try {
      const done = await submitBatches(api, upload, (current, text) => {
        setUpload(current);
        if (text) setNote(text);
      });
      setUpload(done);
      setNote(`Submitted in ${done.sent.length} batch${done.sent.length === 1 ? '' : 'es'}: following each below.`);
    } catch (failure) {
      setError(failure);
      const refused = failure instanceof ApiFailure && failure.code === 'validation_failed';
      setNote(
        refused
          ? 'The service refused a batch: see the rows marked below.'
          : 'Not every batch was sent: submit again to send the rest (nothing is paid twice).',
      );
    }
  };

  return (
    <section>
      <ScreenTitle>Payroll</ScreenTitle>
      <p>
        Pay many beneficiaries from one CSV file. Every row is checked here before anything is sent; then the rows go as
        payout batches, followed until every payment is final. Earlier batches are under{' '}
        <Link to="/batches">Payout batches</Link>.
      </p>
      <Template />
      <FileInput
        onUpload={(next) => {
          setUpload(next);
          setError(undefined);
          setNote(next ? '' : 'Reading the file…');
        }}
        onError={setError}
      />
      <p role="status" class="payroll-status">
        {statusLine(upload, note)}
      </p>
      <UploadProblems upload={upload} error={error} />
      {upload && !upload.sheet.fileProblem ? (
        <>
          <h2>Preview</h2>
          <Summary upload={upload} />
          <SubmitBar upload={upload} onSubmit={submit} onlyProblems={onlyProblems} setOnlyProblems={setOnlyProblems} />
          <PreviewTable upload={upload} onlyProblems={onlyProblems} />
          <Progress api={api} upload={upload} />
        </>
      ) : null}
    </section>
  );
}

function Progress({ api, upload }: { api: Api; upload: Upload }) {
  const rows = upload.sheet.rows;
  const batches = Math.ceil(rows.length / upload.batchSize);
  return (
    <>
      {upload.sent.map((batch, n) =>
        batch ? (
          <BatchProgress
            key={batch.id}
            api={api}
            id={batch.id}
            first={batch}
            title={`Batch ${n + 1} of ${batches}`}
            rowOf={(index) => rows[n * upload.batchSize + index]?.row}
          />
        ) : null,
      )}
    </>
  );
}
