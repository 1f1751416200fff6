// Number and time formatting through the platform's Intl (no date library of our own).

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

export function int(n) {
  return n === undefined || n === null ? '–' : integer.format(n);
}

// An RFC 3339 time as "2026-12-01 10:00:00 UTC": operators compare it with provider logs.
export function utc(t) {
  if (!t) return '–';
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

export function percent(part, whole) {
  if (!whole) return 0;
  return Math.min(100, Math.max(0, (100 * part) / whole));
}

// The value of an <input type="datetime-local"> (local time) as RFC 3339 UTC, or undefined.
export function localInputToIso(value) {
  if (!value) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? null : d.toISOString().replace(/\.\d+Z$/, 'Z');
}

// A Date as an <input type="datetime-local"> value (local time, minutes).
export function toLocalInput(d) {
  const local = new Date(d.getTime() - d.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
}
