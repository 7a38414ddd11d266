/**
 * knex-style `?` placeholders become pg's numbered ones for the hot pool's named statements
 * (src/db/hot-query.ts), except inside quoted literals and identifiers.
 */
import { numberedPlaceholders } from '../../src/db/hot-query';

describe('numberedPlaceholders', () => {
  it('numbers every placeholder in order, casts included', () => {
    expect(numberedPlaceholders('insert into t (a, b, c) values (?, ?::jsonb, ?)')).toBe('insert into t (a, b, c) values ($1, $2::jsonb, $3)');
  });

  it('leaves a ? inside a string literal or a quoted identifier alone', () => {
    expect(numberedPlaceholders(`select ?, 'why?', "odd?name" from t where x = ? and y = 'it''s?'`)).toBe(
      `select $1, 'why?', "odd?name" from t where x = $2 and y = 'it''s?'`,
    );
  });

  it('changes nothing in a statement without placeholders', () => {
    expect(numberedPlaceholders("select 1 where 'a' = 'a'")).toBe("select 1 where 'a' = 'a'");
  });
});
