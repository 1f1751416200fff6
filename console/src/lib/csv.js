// CSV in and out through papaparse (RFC 4180 quoting), and a download of a text file.
import Papa from 'papaparse';

export function toCsv(columns, rows) {
  return Papa.unparse({ fields: columns, data: rows.map((r) => columns.map((c) => r[c] ?? '')) },
    { newline: '\r\n' });
}

// Rows of a CSV text with a header row, each an object; errors name the line.
export function parseCsv(text) {
  const r = Papa.parse(text.trim(), { header: true, skipEmptyLines: true, transformHeader: (x) => x.trim() });
  return { rows: r.data, fields: r.meta.fields ?? [], errors: r.errors.map((e) => `row ${e.row + 2}: ${e.message}`) };
}

export function download(filename, text, type = 'text/csv') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
