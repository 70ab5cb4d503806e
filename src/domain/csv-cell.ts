// One cell of a CSV file we write, safe to open in a spreadsheet: RFC 4180 quoting (a cell holding a
// comma, a double quote or a line break is quoted, its quotes doubled), and a cell that starts with a
// character a spreadsheet reads as the start of a formula (=, +, -, @, a tab, a carriage return) is
// written with a leading apostrophe, which spreadsheets show as text (OWASP, "CSV injection"). Every
// CSV writer of the service goes through here. Pure.

const FORMULA_START = /^[=+\-@\t\r]/;

/** `text` as one CSV cell; null is the empty cell. */
export function csvCell(text: string | null): string {
  if (text === null) return '';
  const inert = FORMULA_START.test(text) ? `'${text}` : text;
  return /[",\r\n]/.test(inert) ? `"${inert.replace(/"/g, '""')}"` : inert;
}
