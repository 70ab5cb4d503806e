// The frame every chart of the overview is drawn in: a card with its title, the legend above the
// canvas, and the table behind it (the same numbers, for screen readers and for copying).
import type { ComponentChildren } from 'preact';
import type { PayoutReport, ReportBucket } from '../report.ts';
import { bucketLabel } from '../report.ts';

export function ChartCard({
  title,
  wide,
  children,
  table,
}: {
  title: string;
  wide?: boolean;
  children: ComponentChildren;
  table: ComponentChildren;
}) {
  return (
    <section class={wide ? 'chart-card wide' : 'chart-card'} aria-label={title}>
      <h2>{title}</h2>
      {children}
      <details>
        <summary>Table: {title}</summary>
        {table}
      </details>
    </section>
  );
}

/** A column of the table behind a chart: its heading and each row's cell; figures are right-aligned, and one column names the row. */
export interface Column<R> {
  head: string;
  cell: (row: R) => ComponentChildren;
  num?: boolean;
  rowHeader?: boolean;
}

/** Figure columns, one per heading, from the row's figures in the same order. */
export function figures<R>(heads: readonly string[], values: (row: R) => ComponentChildren[]): Column<R>[] {
  return heads.map((head, i) => ({ head, num: true, cell: (row) => values(row)[i] }));
}

/** The table behind a chart: the same numbers, for screen readers and for copying. */
export function ChartTable<R>({
  title,
  rows,
  keyOf,
  columns,
}: {
  title: string;
  rows: readonly R[];
  keyOf: (row: R) => string;
  columns: Column<R>[];
}) {
  return (
    <table aria-label={title}>
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column.head} scope="col" class={column.num ? 'num' : undefined}>
              {column.head}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={keyOf(row)}>
            {columns.map((column) =>
              column.rowHeader ? (
                <th key={column.head} scope="row">
                  {column.cell(row)}
                </th>
              ) : (
                <td key={column.head} class={column.num ? 'num' : undefined}>
                  {column.cell(row)}
                </td>
              ),
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The first column of a per-bucket table: the bucket's start, in Caracas time. */
export function bucketColumn(report: PayoutReport): Column<ReportBucket> {
  return {
    head: report.granularity === 'hour' ? 'Hour (Caracas)' : 'Day (Caracas)',
    rowHeader: true,
    cell: (bucket) => bucketLabel(report, bucket),
  };
}

/** A table of one row per bucket: the bucket, then its figures. */
export function BucketTable({
  report,
  title,
  head,
  cells,
}: {
  report: PayoutReport;
  title: string;
  head: string[];
  cells: (bucket: ReportBucket) => string[];
}) {
  return (
    <ChartTable
      title={title}
      rows={report.buckets}
      keyOf={(bucket) => bucket.start}
      columns={[bucketColumn(report), ...figures(head, cells)]}
    />
  );
}

export function Legend({ items }: { items: Array<[string, string]> }) {
  return (
    <ul class="legend" aria-hidden="true">
      {items.map(([label, color]) => (
        <li key={label}>
          <span class="swatch" style={{ backgroundColor: color }} />
          {label}
        </li>
      ))}
    </ul>
  );
}
