/**
 * SQL spellings of how the API writes values into JSON, for answers that PostgreSQL builds
 * as JSON text itself (src/http/json-text.ts): each must give exactly what the JS side gives.
 */

/**
 * A timestamptz as `Date.prototype.toISOString()` writes it: UTC, milliseconds. `MS`
 * truncates the microseconds, as the pg driver's dates do (Date.UTC drops the fraction).
 */
export const isoMillisSql = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
