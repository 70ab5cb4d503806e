// One cell of a CSV file we write, safe to open in a spreadsheet: RFC 4180 quoting (a cell holding a
// comma, a double quote or a line break is quoted, its quotes doubled), and a cell that starts with a
// character a spreadsheet reads as the start of a formula (=, +, -, @, a tab, a carriage return) is
// written with a leading apostrophe, which spreadsheets show as text (OWASP, "CSV injection"). Every
// CSV file of the service meant for people goes through csvCell; a CSV only our own statement import
// reads (a bank's statement pulled by the worker) is quoted alone, its values as the bank gave them. Pure.

const FORMULA_START = /^[=+\-@\t\r]/;

/** `text` quoted as RFC 4180 asks, and only when it must be: nothing else changed. */
export function csvQuoted(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** `text` as one CSV cell; null is the empty cell. */
export function csvCell(text: string | null): string {
  if (text === null) return '';
  return csvQuoted(FORMULA_START.test(text) ? `'${text}` : text);
}
