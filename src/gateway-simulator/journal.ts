// The simulator's storage: one append-only file of JSON lines in its directory. Every change is
// written and fsync'd BEFORE the gateway answers, and the file is replayed at start, so a gateway
// killed and started again remembers every transfer it received (as a real bank's would).
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import path from 'node:path';

export type JournalRecord =
  | {
      t: 'transfer';
      reference: string;
      request: unknown;
      receivedAt: number;
      settleAt: number | null;
      planned: PlannedOutcome;
      scenario: string;
    }
  | { t: 'submission'; reference: string }
  | { t: 'outcome'; reference: string; outcome: RecordedOutcome };

/** What a transfer ends in, decided when it is received (its scenario). */
export type PlannedOutcome = { status: 'SETTLED' } | { status: 'REJECTED'; errorCode: string };

/** A status change of a transfer, as later lookups report it. */
export interface RecordedOutcome {
  status: 'PROCESSING' | 'SETTLED' | 'REJECTED' | 'RETURNED';
  at: number;
  errorCode?: string;
  bankReference?: string;
  returnReason?: string;
}

export class Journal {
  private readonly fd: number;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.fd = openSync(path.join(dir, 'journal.jsonl'), 'a');
  }

  /** Every record written so far, in order. A torn last line (a kill mid-write) was never answered: skipped. */
  static load(dir: string): JournalRecord[] {
    const file = path.join(dir, 'journal.jsonl');
    if (!existsSync(file)) return [];
    const records: JournalRecord[] = [];
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      try {
        records.push(JSON.parse(line) as JournalRecord);
      } catch {
        // Only the last line can be torn; nothing after it was acknowledged.
      }
    }
    return records;
  }

  /** Durable once this returns: written and fsync'd. */
  append(record: JournalRecord): void {
    writeSync(this.fd, `${JSON.stringify(record)}\n`);
    fsyncSync(this.fd);
  }

  close(): void {
    closeSync(this.fd);
  }
}
